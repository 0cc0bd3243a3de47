// The MPI peers of micro/sync_bench.cpp: empty synchronization epochs on an MPI_Win_allocate
// window of one page, every rank at once, under the same names with an `mpi_` prefix —
// MPI_Win_fence pairs, PSCW rounds between ring neighbours (MPI_Win_post/start/complete/wait
// on one-member MPI groups), MPI_Win_lock/unlock (exclusive, shared) of the next rank,
// MPI_Win_lock_all/unlock_all, and an MPI_Win_flush with nothing issued inside lock_all.
// Batches, warm-up and the timing method are sync_bench.cpp's (lockstep.hpp). bench/run.py
// runs them as the `sync` family on Open MPI's osc/sm (--mca osc sm), which creates
// MPI_Win_allocate windows and synchronizes through shared memory.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "mpi_support.hpp"

namespace {

namespace bench = oneside::bench;
namespace peers = oneside::bench::peers;

constexpr int window_bytes = 4096;

// An MPI_Win_allocate window of one page on every rank, zeroed, with no epoch open, and the
// one-member groups of the ring neighbours that PSCW takes (built once, as in
// sync_bench.cpp). Collective both ways.
class mpi_sync_window {
 public:
  mpi_sync_window() {
    const int rank = peers::world_rank();
    const int size = peers::world_size();
    next_ = (rank + 1) % size;
    const int left = (rank + size - 1) % size;
    MPI_Win_allocate(window_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base_, &win_);
    std::memset(base_, 0, window_bytes);
    MPI_Group world = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &left_group_);
    MPI_Group_incl(world, 1, &next_, &right_group_);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  mpi_sync_window(const mpi_sync_window&) = delete;
  mpi_sync_window& operator=(const mpi_sync_window&) = delete;
  ~mpi_sync_window() {
    MPI_Group_free(&left_group_);
    MPI_Group_free(&right_group_);
    MPI_Win_free(&win_);
  }

  MPI_Win get() const noexcept { return win_; }
  int next() const noexcept { return next_; }
  MPI_Group left_group() const noexcept { return left_group_; }
  MPI_Group right_group() const noexcept { return right_group_; }

 private:
  int next_ = 0;
  void* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Group left_group_ = MPI_GROUP_NULL;   // the origin of this rank's exposure epochs
  MPI_Group right_group_ = MPI_GROUP_NULL;  // the target of this rank's access epochs
};

constexpr std::int64_t warm_up_ops = 16;

template <class Batch>
void run(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  batch(std::min(warm_up_ops, ops_per_batch));
  MPI_Barrier(MPI_COMM_WORLD);
  peers::measure(state, ops_per_batch, batch);
}

void fence_pair(benchmark::State& state) {
  mpi_sync_window w;
  run(state, bench::latency_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      MPI_Win_fence(0, w.get());
      MPI_Win_fence(0, w.get());
    }
  });
  MPI_Win_fence(MPI_MODE_NOSUCCEED, w.get());
}

void pscw_round(benchmark::State& state) {
  mpi_sync_window w;
  run(state, bench::latency_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      MPI_Win_post(w.left_group(), 0, w.get());
      MPI_Win_start(w.right_group(), 0, w.get());
      MPI_Win_complete(w.get());
      MPI_Win_wait(w.get());
    }
  });
}

void lock_unlock(benchmark::State& state, int type) {
  mpi_sync_window w;
  const int t = w.next();
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      MPI_Win_lock(type, t, 0, w.get());
      MPI_Win_unlock(t, w.get());
    }
  });
}

void lock_all(benchmark::State& state) {
  mpi_sync_window w;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      MPI_Win_lock_all(0, w.get());
      MPI_Win_unlock_all(w.get());
    }
  });
}

void empty_flush(benchmark::State& state) {
  mpi_sync_window w;
  const int t = w.next();
  MPI_Win_lock_all(0, w.get());
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) MPI_Win_flush(t, w.get());
  });
  MPI_Win_unlock_all(w.get());
}

// ---- registration -------------------------------------------------------------------------

template <class Fn>
benchmark::internal::Benchmark* add(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->UseManualTime();
}

bool register_all() {
  add("mpi_rma_sync_fence_pair", fence_pair);
  add("mpi_rma_sync_pscw_round", pscw_round);
  add("mpi_rma_sync_lock_exclusive",
      [](benchmark::State& s) { lock_unlock(s, MPI_LOCK_EXCLUSIVE); });
  add("mpi_rma_sync_lock_shared", [](benchmark::State& s) { lock_unlock(s, MPI_LOCK_SHARED); });
  add("mpi_rma_sync_lock_all", lock_all);
  add("mpi_rma_sync_flush", empty_flush);
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
