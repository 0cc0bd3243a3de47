// MPI_Barrier over MPI_COMM_WORLD: the peer of barrier_bench.cpp.
#include <cstdint>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "mpi_support.hpp"

namespace {

namespace bench = oneside::bench;

void mpi_barrier(benchmark::State& state) {
  bench::peers::measure(state, bench::latency_batch, [](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) MPI_Barrier(MPI_COMM_WORLD);
  });
}
BENCHMARK(mpi_barrier)->UseManualTime();

}  // namespace
