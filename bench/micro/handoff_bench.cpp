// Does handing a bulk copy to a worker of the rank's task arena pay on this machine (issue 19:
// "a bulk rput/rget above a size threshold may be handed to an idle worker so the caller
// computes meanwhile; keep it only if it pays")? The copy on the shm path is a memcpy between
// two mappings, so the question is one of memcpy and the arena, measured without a transport:
//
//   bulk_copy_handoff/<MiB>: per iteration, in one run and alternating,
//     inline:     memcpy(size), then compute         (what the shm path does today)
//     handed off: oneside::async(memcpy), compute, then wait for the copy
//   with a compute calibrated at the start to last as long as the copy (the best case of
//   overlap: E = 2 would halve the time). Manual time is the handed-off variant's; counters:
//   inline_us, handoff_us, copy_us, compute_us (medians), speedup = inline_us / handoff_us
//   (> 1: the hand-off pays). One rank: oneside_micro_bench --benchmark_filter=bulk_copy.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

namespace {

using clock_type = std::chrono::steady_clock;

double microseconds_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The caller's computation: a dependent chain of multiply-adds on registers (it does not
// compete for memory bandwidth with the copy, the case most favourable to the hand-off). Not
// analysed across calls (noipa): the compiler would otherwise reuse one call's result.
[[gnu::noipa]] std::uint64_t compute(std::uint64_t steps) {
  std::uint64_t x = steps | 1U;
  for (std::uint64_t i = 0; i < steps; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

void bulk_copy_handoff(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0)) << 20;
  std::vector<std::byte> src(bytes, std::byte{1});
  std::vector<std::byte> dst(bytes, std::byte{0});

  // Calibration: the copy's time, and compute steps that last as long.
  std::vector<double> copies;
  for (int i = 0; i < 5; ++i) {
    const auto t = clock_type::now();
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
    copies.push_back(microseconds_since(t));
  }
  constexpr std::uint64_t probe_steps = 1'000'000;
  std::vector<double> probes;
  for (int i = 0; i < 5; ++i) {
    const auto t = clock_type::now();
    benchmark::DoNotOptimize(compute(probe_steps));
    probes.push_back(microseconds_since(t));
  }
  const double copy_us = median(copies);
  const auto steps =
      static_cast<std::uint64_t>(copy_us / median(probes) * static_cast<double>(probe_steps));

  std::vector<double> inline_us;
  std::vector<double> handoff_us;
  std::vector<double> compute_us;
  for (auto _ : state) {
    auto t = clock_type::now();
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
    benchmark::DoNotOptimize(compute(steps));
    inline_us.push_back(microseconds_since(t));

    t = clock_type::now();
    oneside::future<> copied = oneside::async([&] { std::memcpy(dst.data(), src.data(), bytes); });
    benchmark::DoNotOptimize(compute(steps));
    copied.wait();
    benchmark::ClobberMemory();
    const double h = microseconds_since(t);
    handoff_us.push_back(h);
    state.SetIterationTime(h * 1e-6);

    t = clock_type::now();
    benchmark::DoNotOptimize(compute(steps));
    compute_us.push_back(microseconds_since(t));
  }
  const double in = median(inline_us);
  const double off = median(handoff_us);
  state.counters["inline_us"] = in;
  state.counters["handoff_us"] = off;
  state.counters["copy_us"] = copy_us;
  state.counters["compute_us"] = median(compute_us);
  state.counters["speedup"] = off > 0 ? in / off : 0.0;
  state.counters["arena_threads"] = oneside::this_rank_arena().max_concurrency();
}
BENCHMARK(bulk_copy_handoff)
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->Arg(64)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
