// The global heap's free-list allocator (pgas/heap/free_list) against malloc/free, the same
// pattern in the same run; an operation is one allocate plus one deallocate.
//   allocator_pair_*:    allocate and at once deallocate one block of 8, 64 or 1024 bytes.
//   allocator_batch_*:   64 allocations, then their 64 deallocations in a fixed shuffled
//                        order; blocks of 8, 64 or 1024 bytes, or (allocator_batch_random_*)
//                        of random sizes from 8 to 256 bytes.
//   *_global_heap:       the same through oneside::allocate/deallocate (this rank's heap).
// Issue target: the allocator within 3x malloc for small blocks.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"
#include "pgas/free_list.hpp"

namespace {

namespace bench = oneside::bench;

constexpr std::size_t batch_blocks = 64;
constexpr std::int64_t pairs_per_batch = 256;  // four rounds of batch_blocks
constexpr std::size_t arena_bytes = std::size_t{4} << 20;

struct free_list_allocator {
  free_list_allocator() : memory(arena_bytes) { list.add_arena(memory.data(), memory.size()); }
  void* allocate(std::size_t bytes) { return list.allocate(bytes); }
  void deallocate(void* p) { list.deallocate(p); }

  bench::page_buffer memory;
  oneside::pgas::detail::free_list list;
};

// The same through the public heap: oneside::allocate/deallocate on this rank's global heap.
struct global_heap_allocator {
  static void* allocate(std::size_t bytes) { return oneside::allocate<std::byte>(bytes).local(); }
  static void deallocate(void* p) {
    oneside::deallocate(oneside::global_ptr<std::byte>::from_local(static_cast<std::byte*>(p)));
  }
};

struct malloc_allocator {
  static void* allocate(std::size_t bytes) { return std::malloc(bytes); }
  static void deallocate(void* p) { std::free(p); }
};

template <class Allocator>
void allocator_pair(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  Allocator a;
  bench::measure(state, pairs_per_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      void* p = a.allocate(bytes);
      benchmark::DoNotOptimize(p);
      a.deallocate(p);
    }
  });
}

// 64 sizes (all `bytes`, or random from 8 to 256 when bytes is 0) and the shuffled order in
// which the blocks are freed; fixed seeds, so both allocators see the same pattern.
struct batch_pattern {
  explicit batch_pattern(std::size_t bytes) {
    std::mt19937_64 rng(42);
    for (std::size_t& s : sizes) s = bytes != 0 ? bytes : 8 + rng() % 249;
    for (std::size_t i = 0; i < batch_blocks; ++i) free_order[i] = i;
    std::shuffle(free_order.begin(), free_order.end(), rng);
  }
  std::array<std::size_t, batch_blocks> sizes{};
  std::array<std::size_t, batch_blocks> free_order{};
};

template <class Allocator>
void allocator_batch(benchmark::State& state) {
  const batch_pattern pattern(static_cast<std::size_t>(state.range(0)));
  Allocator a;
  std::array<void*, batch_blocks> blocks{};
  bench::measure(state, pairs_per_batch, [&](std::int64_t n) {
    for (std::int64_t done = 0; done < n; done += std::int64_t{batch_blocks}) {
      for (std::size_t i = 0; i < batch_blocks; ++i) blocks[i] = a.allocate(pattern.sizes[i]);
      benchmark::DoNotOptimize(blocks.data());
      for (const std::size_t i : pattern.free_order) a.deallocate(blocks[i]);
    }
  });
}

// The fixed block sizes: small, the "small blocks", and one larger.
void block_sizes(benchmark::internal::Benchmark* b) {
  b->Arg(8)->Arg(64)->Arg(1024);
}

BENCHMARK(allocator_pair<free_list_allocator>)
    ->Name("allocator_pair_free_list")
    ->Apply(block_sizes)
    ->UseManualTime();
BENCHMARK(allocator_pair<global_heap_allocator>)
    ->Name("allocator_pair_global_heap")
    ->Apply(block_sizes)
    ->UseManualTime();
BENCHMARK(allocator_pair<malloc_allocator>)
    ->Name("allocator_pair_malloc")
    ->Apply(block_sizes)
    ->UseManualTime();
BENCHMARK(allocator_batch<free_list_allocator>)
    ->Name("allocator_batch_free_list")
    ->Apply(block_sizes)
    ->UseManualTime();
BENCHMARK(allocator_batch<global_heap_allocator>)
    ->Name("allocator_batch_global_heap")
    ->Apply(block_sizes)
    ->UseManualTime();
BENCHMARK(allocator_batch<malloc_allocator>)
    ->Name("allocator_batch_malloc")
    ->Apply(block_sizes)
    ->UseManualTime();
BENCHMARK(allocator_batch<free_list_allocator>)
    ->Name("allocator_batch_random_free_list")
    ->Arg(0)
    ->UseManualTime();
BENCHMARK(allocator_batch<malloc_allocator>)
    ->Name("allocator_batch_random_malloc")
    ->Arg(0)
    ->UseManualTime();

}  // namespace
