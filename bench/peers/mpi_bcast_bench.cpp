// MPI_Bcast of 1 MiB from rank 0 over MPI_COMM_WORLD: the peer of broadcast_bench.cpp.
#include <cstddef>
#include <cstdint>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "mpi_support.hpp"

namespace {

namespace bench = oneside::bench;

void mpi_bcast(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  bench::page_buffer buffer(bytes);
  bench::peers::measure(state, bench::transfer_batch(state.range(0)), [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      MPI_Bcast(buffer.data(), static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
    }
  });
  bench::count_bytes(state, state.range(0));
}
BENCHMARK(mpi_bcast)->Arg(bench::broadcast_bytes)->UseManualTime();

}  // namespace
