// The cost of rma::window's synchronization calls with nothing to synchronize: each
// benchmark opens and closes empty epochs on an `allocate` window of one page, every rank at
// once, so the figure is the synchronization alone. The MPI peers (peers/mpi_sync_bench.cpp)
// measure the same over MPI_Win_allocate, under the same names with an `mpi_` prefix;
// bench/run.py runs them as the `sync` family (Open MPI's osc/sm) and checks the targets.
//
//   rma_sync_fence_pair       fence(); fence(): an empty fence epoch (time per pair)
//   rma_sync_pscw_round       post({left}); start({right}); complete(); wait(): ring neighbours
//   rma_sync_lock_exclusive   lock(exclusive, next); unlock(next)
//   rma_sync_lock_shared      lock(shared, next); unlock(next)
//   rma_sync_lock_all         lock_all(); unlock_all()
//   rma_sync_flush            flush(next) with nothing issued, inside a lock_all held throughout
//
// `next` is rank + 1 and `left` rank - 1 (mod size), so every rank is the target of exactly
// one origin: the lock benches measure the lock word's round trips, not contention for it.
// Times are the slowest rank's (lockstep.hpp, measure).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;
namespace rma = oneside::rma;
using oneside::rank_t;

constexpr std::size_t window_bytes = 4096;

// An allocate window of one page on every rank, zeroed (its pages faulted in), with no epoch
// open; the ring neighbours of this rank and the one-member groups PSCW takes (built once:
// a group is a local object, and building it is not synchronization). Collective both ways.
class sync_window {
 public:
  // (The window is built in the initializer list: rma::window's defaulted default
  // constructor does not compile outside the rma library, as window_impl is incomplete there.)
  sync_window()
      : win_(rma::window::allocate(oneside::world(), window_bytes, 1)),
        next_((oneside::world().rank() + 1) % oneside::world().size()),
        left_((oneside::world().rank() + oneside::world().size() - 1) % oneside::world().size()),
        left_group_{left_},
        right_group_{next_} {
    std::memset(win_.base(), 0, window_bytes);
    oneside::barrier(oneside::world());
  }
  sync_window(const sync_window&) = delete;
  sync_window& operator=(const sync_window&) = delete;
  ~sync_window() { win_.free(); }

  rma::window& win() noexcept { return win_; }
  rank_t next() const noexcept { return next_; }
  const oneside::group& left_group() const noexcept { return left_group_; }
  const oneside::group& right_group() const noexcept { return right_group_; }

 private:
  rma::window win_;
  rank_t next_;
  rank_t left_;
  oneside::group left_group_;   // the origin of this rank's exposure epochs
  oneside::group right_group_;  // the target of this rank's access epochs
};

// A few rounds first (first-touch work of a call stays out of the figures), then the
// lockstep measurement. Fence and PSCW rounds wait for other ranks, like a barrier, and take
// the barrier's batch; the calls that involve no other rank take the RMA benches' batch.
constexpr std::int64_t warm_up_ops = 16;

template <class Batch>
void run(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  batch(std::min(warm_up_ops, ops_per_batch));
  oneside::barrier(oneside::world());
  bench::measure(state, ops_per_batch, batch);
}

void fence_pair(benchmark::State& state) {
  sync_window sw;
  run(state, bench::latency_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      sw.win().fence();
      sw.win().fence();
    }
  });
  sw.win().fence(rma::mode::nosucceed);  // no epoch follows: the window is freed
}

void pscw_round(benchmark::State& state) {
  sync_window sw;
  run(state, bench::latency_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      sw.win().post(sw.left_group());
      sw.win().start(sw.right_group());
      sw.win().complete();
      sw.win().wait();
    }
  });
}

void lock_unlock(benchmark::State& state, rma::lock_type type) {
  sync_window sw;
  const rank_t t = sw.next();
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      sw.win().lock(type, t);
      sw.win().unlock(t);
    }
  });
}

void lock_all(benchmark::State& state) {
  sync_window sw;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      sw.win().lock_all();
      sw.win().unlock_all();
    }
  });
}

void empty_flush(benchmark::State& state) {
  sync_window sw;
  const rank_t t = sw.next();
  sw.win().lock_all();
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) sw.win().flush(t);
  });
  sw.win().unlock_all();
}

// ---- registration -------------------------------------------------------------------------

template <class Fn>
benchmark::internal::Benchmark* add(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->UseManualTime();
}

bool register_all() {
  add("rma_sync_fence_pair", fence_pair);
  add("rma_sync_pscw_round", pscw_round);
  add("rma_sync_lock_exclusive",
      [](benchmark::State& s) { lock_unlock(s, rma::lock_type::exclusive); });
  add("rma_sync_lock_shared", [](benchmark::State& s) { lock_unlock(s, rma::lock_type::shared); });
  add("rma_sync_lock_all", lock_all);
  add("rma_sync_flush", empty_flush);
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
