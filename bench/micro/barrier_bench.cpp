// oneside::barrier over the world; compare with MPI_Barrier (bench/peers) in the same run.
// ONESIDE_BENCH_SLOW_BARRIER_US (a CMake cache variable, 0 by default) slows it on purpose:
// the check that `oneside-bench compare` flags that row and only that row.
#include <chrono>
#include <cstdint>
#include <thread>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;

void barrier(benchmark::State& state) {
  const oneside::team& w = oneside::world();
  bench::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      oneside::barrier(w);
      if constexpr (ONESIDE_BENCH_SLOW_BARRIER_US > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(ONESIDE_BENCH_SLOW_BARRIER_US));
      }
    }
  });
}
BENCHMARK(barrier)->UseManualTime();

}  // namespace
