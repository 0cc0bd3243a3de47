// Transport get from the next rank's segment (rank + 1 mod size; with one rank, from itself):
// latency of an 8-byte get completed by flush, and bandwidth of back-to-back gets of 8 B to
// 4 MiB completed by one flush per batch. Every rank gets at once. Read against memcpy of
// the same sizes (memcpy_bench.cpp) and MPI_Get (bench/peers) in the same run.
#include <cstddef>
#include <cstdint>
#include <span>

#include <benchmark/benchmark.h>

#include <oneside/runtime/transport.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;

void get_latency(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  bench::ring_memory ring(bytes);
  bench::page_buffer destination(bytes);
  const std::span<std::byte> dst(destination.data(), bytes);
  bench::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      ring.backend.get(ring.next, ring.next_address, dst);
      ring.backend.flush(ring.next);
    }
  });
  bench::count_bytes(state, state.range(0));
}
BENCHMARK(get_latency)->Arg(bench::latency_bytes)->UseManualTime();

void get_bandwidth(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  bench::ring_memory ring(bytes);
  bench::page_buffer destination(bytes);
  const std::span<std::byte> dst(destination.data(), bytes);
  bench::measure(state, bench::transfer_batch(state.range(0)), [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) ring.backend.get(ring.next, ring.next_address, dst);
    ring.backend.flush(ring.next);
  });
  bench::count_bytes(state, state.range(0));
}
BENCHMARK(get_bandwidth)->Apply(bench::transfer_sizes)->UseManualTime();

}  // namespace
