// What oneside's benches share: the lockstep measurement over the open runtime (barrier
// before each batch, the batch's time is the slowest rank's), and memory in every rank's
// exposed segment for the transport benches. The main is bench_main.cpp; the method itself
// is lockstep.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "lockstep.hpp"
#include "runtime/transport.hpp"

namespace oneside::bench {

// True on every rank when `ok` holds on every rank (collective).
inline bool everywhere(bool ok) {
  return allreduce(world(), ok ? 1 : 0, op::min) == 1;
}

// Whether the world has at least `ranks` ranks; when not, the bench is skipped with an error
// (every rank decides alike).
inline bool has_ranks(benchmark::State& state, int ranks) {
  if (world().size() >= ranks) return true;
  state.SkipWithError("needs more ranks than the job has (rank 0 to rank 1: 2)");
  return false;
}

// The maximum of `seconds` over the world (collective).
double slowest_rank(double seconds);

// Runs `batch(k)` in lockstep on every rank of the world, in batches of `ops_per_batch`;
// an operation takes the slowest rank's time. See lockstep.hpp.
template <class Batch>
void measure(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  const team& w = world();
  bench::measure(
      state, ops_per_batch, [&] { barrier(w); }, [](double s) { return slowest_rank(s); },
      std::forward<Batch>(batch));
}

// measure_span (lockstep.hpp) on the world: a batch counts from the earliest rank's start to
// the latest rank's end, for throughput under contention.
template <class Batch>
void measure_span(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  const team& w = world();
  bench::measure_span(
      state, ops_per_batch, [&] { barrier(w); }, [](double s) { return slowest_rank(s); },
      std::forward<Batch>(batch));
}

// Each rank's exposed segment, and where the next rank's (rank + 1 mod size) is: the target
// of the put/get benches. Collective. The segment is written once in full from here and read
// once in full, so that mapping it and faulting its pages happen before any measurement.
struct ring_memory {
  explicit ring_memory(std::size_t bytes);

  transport::backend& backend;
  transport::segment local;
  rank_t next;
  std::uintptr_t next_address;
};

}  // namespace oneside::bench
