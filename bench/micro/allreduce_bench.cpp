// oneside::allreduce of 8 bytes (one long, sum) over the world; compare with MPI_Allreduce.
#include <cstdint>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;

void allreduce(benchmark::State& state) {
  const oneside::team& w = oneside::world();
  const long mine = w.rank() + 1;
  long total = 0;
  bench::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      total = oneside::allreduce(w, mine, oneside::op::sum);
      benchmark::DoNotOptimize(total);
    }
  });
  bench::count_bytes(state, static_cast<std::int64_t>(sizeof total));
}
BENCHMARK(allreduce)->Arg(sizeof(long))->UseManualTime();

}  // namespace
