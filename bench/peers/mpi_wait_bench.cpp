// Point-to-point waiting with MPI_Send/MPI_Recv of 8 bytes: the peers of wait_bench.cpp
// (ping_pong between pairs of ranks, token_ring around all ranks), showing what MPI's
// waiting costs, above all when ranks outnumber cores.
#include <cstdint>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "mpi_support.hpp"

namespace {

namespace bench = oneside::bench;

void send(std::uint64_t& message, int to) {
  MPI_Send(&message, 1, MPI_UINT64_T, to, 0, MPI_COMM_WORLD);
}
void receive(std::uint64_t& message, int from) {
  MPI_Recv(&message, 1, MPI_UINT64_T, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void mpi_ping_pong(benchmark::State& state) {
  const int rank = bench::peers::world_rank();
  const int size = bench::peers::world_size();
  if (size < 2) {  // the same on every rank: no rank is left waiting
    state.SkipWithError("needs at least 2 ranks");
    return;
  }
  const int partner = rank ^ 1;
  const bool has_partner = partner < size;
  const bool starts = rank % 2 == 0;
  std::uint64_t message = 0;
  bench::peers::measure(state, bench::latency_batch, [&](std::int64_t n) {
    if (!has_partner) return;
    for (std::int64_t i = 0; i < n; ++i) {
      if (starts) {
        ++message;
        send(message, partner);
        receive(message, partner);
      } else {
        receive(message, partner);
        send(message, partner);
      }
    }
  });
}
BENCHMARK(mpi_ping_pong)->Arg(bench::latency_bytes)->UseManualTime();

void mpi_token_ring(benchmark::State& state) {
  const int rank = bench::peers::world_rank();
  const int size = bench::peers::world_size();
  if (size < 2) {
    state.SkipWithError("needs at least 2 ranks");
    return;
  }
  const int next = (rank + 1) % size;
  const int previous = (rank + size - 1) % size;
  std::uint64_t message = 0;
  bench::peers::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (rank == 0) {
        ++message;
        send(message, next);
        receive(message, previous);
      } else {
        receive(message, previous);
        send(message, next);
      }
    }
  });
}
BENCHMARK(mpi_token_ring)->Arg(bench::latency_bytes)->UseManualTime();

}  // namespace
