// oneside::broadcast of 1 MiB from rank 0 over the world; compare with MPI_Bcast.
#include <cstddef>
#include <cstdint>
#include <span>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;

void broadcast(benchmark::State& state) {
  const oneside::team& w = oneside::world();
  const auto bytes = static_cast<std::size_t>(state.range(0));
  bench::page_buffer buffer(bytes);
  const std::span<std::byte> data(buffer.data(), bytes);
  bench::measure(state, bench::transfer_batch(state.range(0)), [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      oneside::broadcast(w, data, /*root=*/0);
    }
  });
  bench::count_bytes(state, state.range(0));
}
BENCHMARK(broadcast)->Arg(bench::broadcast_bytes)->UseManualTime();

}  // namespace
