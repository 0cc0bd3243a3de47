// OSU-style one-sided sweeps (the OSU micro-benchmarks' osu_put_latency, osu_get_latency,
// osu_put_bw, osu_get_bw, osu_acc_latency, osu_get_acc_latency, osu_fop_latency and
// osu_cas_latency), each under every synchronization mode OSU offers (-s lock, lock_all,
// flush, flush_local, pscw, fence; lockstep.hpp, osu_sync, says what each does). On an
// `allocate` window, to the next rank (rank + 1 mod size), every rank at once (OSU runs
// rank 0 against rank 1 with rank 1 idle; here rank 1 also works, so the figures are those of
// a loaded pair). The MPI peers (peers/mpi_osu_bench.cpp) measure the same over
// MPI_Win_allocate under the same names with an `mpi_` prefix; both register through
// lockstep.hpp (register_osu), which holds the loops, sizes and batches.
//
//   osu_put_latency/S/N, osu_get_latency/S/N   one put/get of N bytes (1 B to 4 MiB), then S
//   osu_put_bw/S/N, osu_get_bw/S/N             rma_in_flight (64) puts/gets of N bytes, then S
//   osu_acc_latency/S/N                        accumulate (sum) of N/8 int64 (8 B to 2 MiB)
//   osu_get_acc_latency/S, osu_fop_latency/S   get_accumulate / fetch_and_op of one int64 (sum)
//   osu_cas_latency/S                          compare_and_swap of one int64 (always succeeds)
//
// Times are the slowest rank's per operation (lockstep.hpp, measure): OSU's "Latency (us)"
// column is the time per operation, its "Bandwidth (MB/s)" N over it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;
namespace rma = oneside::rma;
using oneside::rank_t;

const oneside::datatype& byte_type() {
  return oneside::datatype::of<std::byte>();
}
const oneside::datatype& int64_type() {
  return oneside::datatype::of<std::int64_t>();
}

// An allocate window of `bytes` (at least a page) on every rank, zeroed and touched once in
// full by its origin, with the ring neighbours and their one-member groups (PSCW), and the
// synchronization calls bench::osu_epochs makes of it (lockstep.hpp). Collective both ways.
class osu_window {
 public:
  explicit osu_window(std::size_t bytes)
      : bytes_(std::max<std::size_t>(bytes, 4096)),
        win_(rma::window::allocate(oneside::world(), bytes_, 1)),
        next_((oneside::world().rank() + 1) % oneside::world().size()),
        left_((oneside::world().rank() + oneside::world().size() - 1) % oneside::world().size()),
        left_group_{left_},
        right_group_{next_} {
    std::memset(win_.base(), 0, bytes_);
    oneside::barrier(oneside::world());
    bench::page_buffer scratch(bytes_);
    const auto n = static_cast<oneside::count_t>(bytes_);
    win_.lock_all();
    win_.put(scratch.data(), n, byte_type(), next_, 0, n, byte_type());
    win_.flush(next_);
    win_.get(scratch.data(), n, byte_type(), next_, 0, n, byte_type());
    win_.unlock_all();
    oneside::barrier(oneside::world());
    std::memset(win_.base(), 0, bytes_);
    oneside::barrier(oneside::world());
  }
  osu_window(const osu_window&) = delete;
  osu_window& operator=(const osu_window&) = delete;
  ~osu_window() { win_.free(); }

  void lock_shared() { win_.lock(rma::lock_type::shared, next_); }
  void unlock() { win_.unlock(next_); }
  void lock_all() { win_.lock_all(); }
  void unlock_all() { win_.unlock_all(); }
  void flush() { win_.flush(next_); }
  void flush_local() { win_.flush_local(next_); }
  void post_start() {
    win_.post(left_group_);
    win_.start(right_group_);
  }
  void complete_wait() {
    win_.complete();
    win_.wait();
  }
  void fence() { win_.fence(); }
  void last_fence() { win_.fence(rma::mode::nosucceed); }

  void transfer(bench::osu_op op, std::byte* local, std::int64_t bytes) {
    const auto n = static_cast<oneside::count_t>(bytes);
    if (op == bench::osu_op::put) {
      win_.put(local, n, byte_type(), next_, 0, n, byte_type());
    } else {
      win_.get(local, n, byte_type(), next_, 0, n, byte_type());
    }
  }

  void accumulate(const std::int64_t* src, std::int64_t elements) {
    win_.accumulate(src, elements, int64_type(), next_, 0, elements, int64_type(),
                    oneside::op::sum);
  }

  void atomic(bench::osu_atomic kind, std::int64_t* old) {
    static constexpr std::int64_t one = 1;
    static constexpr std::int64_t zero = 0;
    switch (kind) {
      case bench::osu_atomic::get_acc:
        win_.get_accumulate(&one, 1, int64_type(), old, 1, int64_type(), next_, 0, 1, int64_type(),
                            oneside::op::sum);
        break;
      case bench::osu_atomic::fop:
        win_.fetch_and_op(&one, old, int64_type(), next_, 0, oneside::op::sum);
        break;
      case bench::osu_atomic::cas:  // 0 for 0: always succeeds, the target stays 0
        win_.compare_and_swap(&zero, &zero, old, int64_type(), next_, 0);
        break;
    }
  }

 private:
  std::size_t bytes_;
  rma::window win_;
  rank_t next_;
  rank_t left_;
  oneside::group left_group_;   // the origin of this rank's exposure epochs
  oneside::group right_group_;  // the target of this rank's access epochs
};

// A few operations first (first-touch work stays out of the figures), then the lockstep
// measurement.
constexpr std::int64_t warm_up_ops = 16;

[[maybe_unused]] const bool registered = bench::register_osu<osu_window>(
    "", [](benchmark::State& state, std::int64_t ops_per_batch, auto&& batch) {
      batch(std::min(warm_up_ops, ops_per_batch));
      oneside::barrier(oneside::world());
      bench::measure(state, ops_per_batch, batch);
    });

}  // namespace
