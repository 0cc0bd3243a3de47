// The dist_array algorithms (pgas/algorithm.hpp) next to their baselines, in one run (STYLE.md
// R12):
//
//   dist_array_algorithm/reduce/N        reduce(a, 0.0) of a 1-D block array of N doubles
//                                        (all ranks together): a sum every rank receives
//   dist_array_algorithm/reduce_tbb/N    the baseline: oneTBB parallel_reduce over the same
//                                        local block on this rank's arena, plus one
//                                        allreduce(sum) of the partial sums
//   dist_array_algorithm/reduce_paired/N one reduce and one baseline after each other per
//                                        operation, each timed alone (slowest rank): counters
//                                        ratio_min (fastest baseline / fastest reduce) and
//                                        ratio_sum (total baseline / total reduce), which a
//                                        load that changes between the two families above
//                                        does not skew
//   dist_array_algorithm/sort/N          fill N random 64-bit keys (a for_each) then sort(a)
//   dist_array_algorithm/sort_fill/N     the fill alone, to subtract
//
// One operation is one whole collective call, timed as the slowest rank's. Items are elements
// (reduce) or keys (sort), so items_per_second is the throughput of the whole job. Results
// are checked after the measurement; a wrong one reports an error.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include <benchmark/benchmark.h>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_reduce.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;
using oneside::dist_array;
using idx1 = std::array<std::size_t, 1>;

bool everywhere(bool ok) {
  return oneside::allreduce(oneside::world(), ok ? 1 : 0, oneside::op::min) == 1;
}

// 1, 2, …, n: the sum n(n + 1)/2 is exact in a double for n below 2^26.
dist_array<double, 1> values(std::size_t n) {
  dist_array<double, 1> a(oneside::world(), {n}, {oneside::dist::block}, "values");
  oneside::iota(a, 1.0);
  return a;
}

bool right_sum(double got, std::size_t n) {
  const double want = static_cast<double>(n) * static_cast<double>(n + 1) / 2.0;
  return got == want || (got - want) / want < 1e-12;  // rounding differs with the grouping
}

void reduce(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const dist_array<double, 1> a = values(n);
  double sum = 0.0;
  bench::measure(state, 1, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      sum = oneside::reduce(a, 0.0);
      benchmark::DoNotOptimize(sum);
    }
  });
  if (!everywhere(right_sum(sum, n))) state.SkipWithError("reduce: wrong sum");
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// The baseline: oneTBB parallel_reduce over this rank's block on its arena, one allreduce.
double tbb_sum(const dist_array<double, 1>& a) {
  const oneside::local_view<const double, 1> v = a.local();
  const double* p = v.data();
  double local = 0.0;
  oneside::this_rank_arena().execute([&] {
    local = oneapi::tbb::parallel_reduce(
        oneapi::tbb::blocked_range<std::size_t>(0, v.size()), 0.0,
        [p](const oneapi::tbb::blocked_range<std::size_t>& r, double acc) {
          for (std::size_t j = r.begin(); j < r.end(); ++j) acc += p[j];
          return acc;
        },
        [](double x, double y) { return x + y; });
  });
  return oneside::allreduce(oneside::world(), local, oneside::op::sum);
}

void reduce_tbb(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const dist_array<double, 1> a = values(n);
  double sum = 0.0;
  bench::measure(state, 1, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      sum = tbb_sum(a);
      benchmark::DoNotOptimize(sum);
    }
  });
  if (!everywhere(right_sum(sum, n))) state.SkipWithError("tbb reduce: wrong sum");
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// Seconds `fn` takes on the slowest rank (collective), after a barrier.
template <class Fn>
double timed(Fn&& fn) {
  oneside::barrier(oneside::world());
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return bench::slowest_rank(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void reduce_paired(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const dist_array<double, 1> a = values(n);
  double sum = 0.0;
  double base = 0.0;
  double ours_total = 0.0;
  double base_total = 0.0;
  double ours_min = std::numeric_limits<double>::infinity();
  double base_min = std::numeric_limits<double>::infinity();
  bench::measure(state, 1, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      const double ours = timed([&] { sum = oneside::reduce(a, 0.0); });
      const double theirs = timed([&] { base = tbb_sum(a); });
      ours_total += ours;
      base_total += theirs;
      ours_min = std::min(ours_min, ours);
      base_min = std::min(base_min, theirs);
    }
  });
  if (!everywhere(right_sum(sum, n) && right_sum(base, n))) {
    state.SkipWithError("paired reduce: wrong sum");
  }
  state.counters["ratio_min"] = base_min / ours_min;
  state.counters["ratio_sum"] = base_total / ours_total;
  state.counters["reduce_ms_min"] = ours_min * 1e3;
  state.counters["tbb_ms_min"] = base_min * 1e3;
}

// splitmix64: the key of index g in round r.
std::uint64_t key(std::uint64_t g, std::uint64_t r) {
  std::uint64_t z = g + r * 0x9e3779b97f4a7c15ULL + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void sort(benchmark::State& state, bool do_sort) {
  const auto n = static_cast<std::size_t>(state.range(0));
  dist_array<std::uint64_t, 1> a(oneside::world(), {n}, {oneside::dist::block}, "keys");
  std::uint64_t round = 0;
  bench::measure(state, 1, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      ++round;
      oneside::for_each(a, [round](const idx1& g, std::uint64_t& x) { x = key(g[0], round); });
      if (do_sort) oneside::sort(a);
    }
  });
  if (do_sort) {
    // Sorted within each block, and across blocks (every rank's first key is at least the
    // last key of the rank before: checked through the minima and maxima of the blocks).
    const oneside::local_view<const std::uint64_t, 1> v = std::as_const(a).local();
    bool ok = true;
    for (std::size_t i = 1; i < v.size(); ++i) ok = ok && v[i - 1] <= v[i];
    const std::size_t me = static_cast<std::size_t>(oneside::world().rank());
    const std::size_t b = a.pattern().dim(0).block;
    if (me > 0 && v.size() != 0) ok = ok && std::uint64_t{a[me * b - 1]} <= v[0];
    if (!everywhere(ok)) state.SkipWithError("sort: not sorted");
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

template <class Fn>
benchmark::internal::Benchmark* add(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

bool register_all() {
  const std::int64_t reduce_elements = 100'000'000;  // 800 MB of doubles over all ranks
  const std::int64_t sort_keys = std::int64_t{1} << 22;
  add("dist_array_algorithm/reduce", reduce)->Arg(reduce_elements);
  add("dist_array_algorithm/reduce_tbb", reduce_tbb)->Arg(reduce_elements);
  add("dist_array_algorithm/reduce_paired", reduce_paired)->Arg(reduce_elements)->Iterations(10);
  add("dist_array_algorithm/sort", [](benchmark::State& s) { sort(s, true); })->Arg(sort_keys);
  add("dist_array_algorithm/sort_fill", [](benchmark::State& s) {
    sort(s, false);
  })->Arg(sort_keys);
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
