// MPI_Allreduce of one long (sum) over MPI_COMM_WORLD: the peer of allreduce_bench.cpp.
#include <cstdint>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "mpi_support.hpp"

namespace {

namespace bench = oneside::bench;

void mpi_allreduce(benchmark::State& state) {
  const long mine = bench::peers::world_rank() + 1;
  long total = 0;
  bench::peers::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      MPI_Allreduce(&mine, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      benchmark::DoNotOptimize(total);
    }
  });
  bench::count_bytes(state, static_cast<std::int64_t>(sizeof total));
}
BENCHMARK(mpi_allreduce)->Arg(sizeof(long))->UseManualTime();

}  // namespace
