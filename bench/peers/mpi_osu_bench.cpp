// The MPI peers of micro/osu_bench.cpp: the OSU-style one-sided sweeps over MPI_Win_allocate,
// every rank to the next one at once, under every synchronization mode (MPI_Win_lock shared /
// unlock, MPI_Win_lock_all / unlock_all, MPI_Win_flush and MPI_Win_flush_local inside a
// lock_all held throughout, MPI_Win_post/start/complete/wait between ring neighbours,
// MPI_Win_fence), under the same names with an `mpi_` prefix. Sizes, batches, warm-up and
// the timing method are osu_bench.cpp's (lockstep.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "mpi_support.hpp"

namespace {

namespace bench = oneside::bench;
namespace peers = oneside::bench::peers;

// micro/osu_bench.cpp's osu_window over MPI: an MPI_Win_allocate window of `bytes` (at least
// a page), zeroed and touched once in full, the ring neighbours' one-member groups, and the
// synchronization calls bench::osu_epochs makes of it. Collective both ways.
class mpi_osu_window {
 public:
  explicit mpi_osu_window(std::size_t bytes) : bytes_(std::max<std::size_t>(bytes, 4096)) {
    const int rank = peers::world_rank();
    const int size = peers::world_size();
    next_ = (rank + 1) % size;
    const int left = (rank + size - 1) % size;
    MPI_Win_allocate(static_cast<MPI_Aint>(bytes_), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base_,
                     &win_);
    std::memset(base_, 0, bytes_);
    MPI_Group world = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &left_group_);
    MPI_Group_incl(world, 1, &next_, &right_group_);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
    bench::page_buffer scratch(bytes_);
    const int n = static_cast<int>(bytes_);
    MPI_Win_lock_all(0, win_);
    MPI_Put(scratch.data(), n, MPI_BYTE, next_, 0, n, MPI_BYTE, win_);
    MPI_Win_flush(next_, win_);
    MPI_Get(scratch.data(), n, MPI_BYTE, next_, 0, n, MPI_BYTE, win_);
    MPI_Win_unlock_all(win_);
    MPI_Barrier(MPI_COMM_WORLD);
    std::memset(base_, 0, bytes_);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  mpi_osu_window(const mpi_osu_window&) = delete;
  mpi_osu_window& operator=(const mpi_osu_window&) = delete;
  ~mpi_osu_window() {
    MPI_Group_free(&left_group_);
    MPI_Group_free(&right_group_);
    MPI_Win_free(&win_);
  }

  void transfer(bench::osu_op op, std::byte* local, std::int64_t bytes) {
    const int n = static_cast<int>(bytes);
    if (op == bench::osu_op::put) {
      MPI_Put(local, n, MPI_BYTE, next_, 0, n, MPI_BYTE, win_);
    } else {
      MPI_Get(local, n, MPI_BYTE, next_, 0, n, MPI_BYTE, win_);
    }
  }

  void accumulate(const std::int64_t* src, std::int64_t elements) {
    const int n = static_cast<int>(elements);
    MPI_Accumulate(src, n, MPI_INT64_T, next_, 0, n, MPI_INT64_T, MPI_SUM, win_);
  }

  void atomic(bench::osu_atomic kind, std::int64_t* old) {
    static constexpr std::int64_t one = 1;
    static constexpr std::int64_t zero = 0;
    switch (kind) {
      case bench::osu_atomic::get_acc:
        MPI_Get_accumulate(&one, 1, MPI_INT64_T, old, 1, MPI_INT64_T, next_, 0, 1, MPI_INT64_T,
                           MPI_SUM, win_);
        break;
      case bench::osu_atomic::fop:
        MPI_Fetch_and_op(&one, old, MPI_INT64_T, next_, 0, MPI_SUM, win_);
        break;
      case bench::osu_atomic::cas:
        MPI_Compare_and_swap(&zero, &zero, old, MPI_INT64_T, next_, 0, win_);
        break;
    }
  }

  void lock_shared() { MPI_Win_lock(MPI_LOCK_SHARED, next_, 0, win_); }
  void unlock() { MPI_Win_unlock(next_, win_); }
  void lock_all() { MPI_Win_lock_all(0, win_); }
  void unlock_all() { MPI_Win_unlock_all(win_); }
  void flush() { MPI_Win_flush(next_, win_); }
  void flush_local() { MPI_Win_flush_local(next_, win_); }
  void post_start() {
    MPI_Win_post(left_group_, 0, win_);
    MPI_Win_start(right_group_, 0, win_);
  }
  void complete_wait() {
    MPI_Win_complete(win_);
    MPI_Win_wait(win_);
  }
  void fence() { MPI_Win_fence(0, win_); }
  void last_fence() { MPI_Win_fence(MPI_MODE_NOSUCCEED, win_); }

 private:
  std::size_t bytes_;
  int next_ = 0;
  void* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Group left_group_ = MPI_GROUP_NULL;
  MPI_Group right_group_ = MPI_GROUP_NULL;
};

constexpr std::int64_t warm_up_ops = 16;

[[maybe_unused]] const bool registered = bench::register_osu<mpi_osu_window>(
    "mpi_", [](benchmark::State& state, std::int64_t ops_per_batch, auto&& batch) {
      batch(std::min(warm_up_ops, ops_per_batch));
      MPI_Barrier(MPI_COMM_WORLD);
      peers::measure(state, ops_per_batch, batch);
    });

}  // namespace
