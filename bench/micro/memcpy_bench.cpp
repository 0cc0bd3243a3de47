// memcpy between two private buffers, the same sizes as the put/get bandwidth families and
// measured the same way (every rank copies at once, the slowest rank counts): the baseline
// of "put 1 MiB: 0.95x memcpy".
#include <cstddef>
#include <cstdint>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;

void memcpy_bandwidth(benchmark::State& state) {
  const bench::copy_baseline copy(static_cast<std::size_t>(state.range(0)));
  bench::measure(state, bench::transfer_batch(state.range(0)), [&](std::int64_t n) { copy(n); });
  bench::count_bytes(state, state.range(0));
}
BENCHMARK(memcpy_bandwidth)->Apply(bench::transfer_sizes)->UseManualTime();

}  // namespace
