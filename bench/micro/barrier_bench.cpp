// oneside::barrier over the world; compare with MPI_Barrier (bench/peers) in the same run.
#include <cstdint>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;

void barrier(benchmark::State& state) {
  const oneside::team& w = oneside::world();
  bench::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) oneside::barrier(w);
  });
}
BENCHMARK(barrier)->UseManualTime();

}  // namespace
