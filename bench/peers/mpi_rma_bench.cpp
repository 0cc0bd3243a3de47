// MPI RMA put and get to the next rank's MPI_Win_allocate window under lock_all: latency of
// 8 bytes completed by MPI_Win_flush, and bandwidth of back-to-back operations of 8 B to
// 4 MiB completed by one MPI_Win_flush per batch. The peers of put_bench.cpp and
// get_bench.cpp, with the same sizes, batches and method.
#include <cstddef>
#include <cstdint>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "mpi_support.hpp"

namespace {

namespace bench = oneside::bench;

void mpi_put_latency(benchmark::State& state) {
  const int bytes = static_cast<int>(state.range(0));
  bench::peers::ring_window win(static_cast<std::size_t>(bytes));
  bench::page_buffer source(static_cast<std::size_t>(bytes));
  bench::peers::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      MPI_Put(source.data(), bytes, MPI_BYTE, win.next(), 0, bytes, MPI_BYTE, win.get());
      MPI_Win_flush(win.next(), win.get());
    }
  });
  bench::count_bytes(state, state.range(0));
}
BENCHMARK(mpi_put_latency)->Arg(bench::latency_bytes)->UseManualTime();

void mpi_get_latency(benchmark::State& state) {
  const int bytes = static_cast<int>(state.range(0));
  bench::peers::ring_window win(static_cast<std::size_t>(bytes));
  bench::page_buffer destination(static_cast<std::size_t>(bytes));
  bench::peers::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      MPI_Get(destination.data(), bytes, MPI_BYTE, win.next(), 0, bytes, MPI_BYTE, win.get());
      MPI_Win_flush(win.next(), win.get());
    }
  });
  bench::count_bytes(state, state.range(0));
}
BENCHMARK(mpi_get_latency)->Arg(bench::latency_bytes)->UseManualTime();

void mpi_put_bandwidth(benchmark::State& state) {
  const int bytes = static_cast<int>(state.range(0));
  bench::peers::ring_window win(static_cast<std::size_t>(bytes));
  bench::page_buffer source(static_cast<std::size_t>(bytes));
  bench::peers::measure(state, bench::transfer_batch(state.range(0)), [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      MPI_Put(source.data(), bytes, MPI_BYTE, win.next(), 0, bytes, MPI_BYTE, win.get());
    }
    MPI_Win_flush(win.next(), win.get());
  });
  bench::count_bytes(state, state.range(0));
}
BENCHMARK(mpi_put_bandwidth)->Apply(bench::transfer_sizes)->UseManualTime();

void mpi_get_bandwidth(benchmark::State& state) {
  const int bytes = static_cast<int>(state.range(0));
  bench::peers::ring_window win(static_cast<std::size_t>(bytes));
  bench::page_buffer destination(static_cast<std::size_t>(bytes));
  bench::peers::measure(state, bench::transfer_batch(state.range(0)), [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      MPI_Get(destination.data(), bytes, MPI_BYTE, win.next(), 0, bytes, MPI_BYTE, win.get());
    }
    MPI_Win_flush(win.next(), win.get());
  });
  bench::count_bytes(state, state.range(0));
}
BENCHMARK(mpi_get_bandwidth)->Apply(bench::transfer_sizes)->UseManualTime();

}  // namespace
