// Transport put to and get from the next rank's segment (rank + 1 mod size; with one rank,
// itself): latency of one 8-byte transfer completed by flush, and bandwidth of back-to-back
// transfers of 8 B to 4 MiB completed by one flush per batch. Every rank transfers at once.
// Read against memcpy of the same sizes (memcpy_bench.cpp) and MPI_Put/MPI_Get
// (bench/peers) in the same run.
#include <cstddef>
#include <cstdint>
#include <span>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"
#include "runtime/transport.hpp"

namespace {

namespace bench = oneside::bench;

enum class direction { put, get };

// One transfer of the whole local buffer to (put) or from (get) the next rank.
template <direction D>
void transfer(bench::ring_memory& ring, bench::page_buffer& local) {
  if constexpr (D == direction::put) {
    ring.backend.put(ring.next, ring.next_address,
                     std::span<const std::byte>(local.data(), local.size()));
  } else {
    ring.backend.get(ring.next, ring.next_address,
                     std::span<std::byte>(local.data(), local.size()));
  }
}

template <direction D>
void latency(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  bench::ring_memory ring(bytes);
  bench::page_buffer local(bytes);
  bench::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      transfer<D>(ring, local);
      ring.backend.flush(ring.next);
    }
  });
  bench::count_bytes(state, state.range(0));
}

template <direction D>
void bandwidth(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  bench::ring_memory ring(bytes);
  bench::page_buffer local(bytes);
  bench::measure(state, bench::transfer_batch(state.range(0)), [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) transfer<D>(ring, local);
    ring.backend.flush(ring.next);
  });
  bench::count_bytes(state, state.range(0));
}

BENCHMARK(latency<direction::put>)->Name("put_latency")->Arg(bench::latency_bytes)->UseManualTime();
BENCHMARK(bandwidth<direction::put>)
    ->Name("put_bandwidth")
    ->Apply(bench::transfer_sizes)
    ->UseManualTime();
BENCHMARK(latency<direction::get>)->Name("get_latency")->Arg(bench::latency_bytes)->UseManualTime();
BENCHMARK(bandwidth<direction::get>)
    ->Name("get_bandwidth")
    ->Apply(bench::transfer_sizes)
    ->UseManualTime();

}  // namespace
