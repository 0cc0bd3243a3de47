// The MPI side of the lockstep measurement (lockstep.hpp): MPI_Barrier before each batch,
// MPI_Allreduce(MAX) of the batch's time, and an RMA window over every rank for the
// put/get peers. Only MPI and Google Benchmark here: the peers do not link oneside.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "lockstep.hpp"

namespace oneside::bench::peers {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// The maximum of `seconds` over MPI_COMM_WORLD (collective).
inline double slowest_rank(double seconds) {
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

// Runs `batch(k)` in lockstep on every rank, in batches of `ops_per_batch`; an operation
// takes the slowest rank's time. See lockstep.hpp.
template <class Batch>
void measure(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  bench::measure(
      state, ops_per_batch, [] { MPI_Barrier(MPI_COMM_WORLD); }, slowest_rank,
      std::forward<Batch>(batch));
}

// measure_span (lockstep.hpp) over MPI_COMM_WORLD: a batch counts from the earliest rank's
// start to the latest rank's end, for throughput under contention.
template <class Batch>
void measure_span(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  bench::measure_span(
      state, ops_per_batch, [] { MPI_Barrier(MPI_COMM_WORLD); }, slowest_rank,
      std::forward<Batch>(batch));
}

// MPI_Win_allocate of `bytes` on every rank with lock_all held (passive target, the mode
// oneside's transport maps to): the target of the put/get peers, at the next rank
// (rank + 1 mod size), displacement 0. Collective. Written and read once in full before any
// measurement.
class ring_window {
 public:
  explicit ring_window(std::size_t bytes) : next_((world_rank() + 1) % world_size()) {
    MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base_, &win_);
    MPI_Win_lock_all(0, win_);
    page_buffer scratch(bytes);
    const int n = static_cast<int>(bytes);
    MPI_Put(scratch.data(), n, MPI_BYTE, next_, 0, n, MPI_BYTE, win_);
    MPI_Win_flush(next_, win_);
    MPI_Get(scratch.data(), n, MPI_BYTE, next_, 0, n, MPI_BYTE, win_);
    MPI_Win_flush(next_, win_);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ring_window(const ring_window&) = delete;
  ring_window& operator=(const ring_window&) = delete;
  ~ring_window() {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }

  MPI_Win get() const noexcept { return win_; }
  int next() const noexcept { return next_; }

 private:
  int next_;
  void* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

}  // namespace oneside::bench::peers
