// Fibers (runtime/fiber/) against a raw Boost.Context fiber in the same run; one thread, no
// communication. An operation is:
//   raw_boost_resume_round_trip:  resume a boost::context::fiber that resumes back at once
//                                 (two context switches; the baseline)
//   fiber_yield_round_trip:       the thread's code yields to one ready fiber, which yields
//                                 back (two switches through the scheduler)
//   fiber_yield_ring_16:          16 fibers yielding in turn; an operation is one yield
//                                 (one switch), to compare with half a round trip
//   fiber_spawn_join:             oneside::fiber::spawn of an empty function, then join
// The benchmark links Boost.Context for the baseline only; oneside itself includes Boost in
// runtime/fiber/ alone.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <boost/context/fiber.hpp>

#include <oneside/runtime/fiber.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;
namespace ctx = boost::context;

constexpr std::int64_t ops_per_batch = 4096;

void raw_boost_resume_round_trip(benchmark::State& state) {
  std::int64_t count = 0;
  ctx::fiber f([&count](ctx::fiber&& back) {
    for (;;) {
      ++count;
      back = std::move(back).resume();
    }
    return std::move(back);
  });
  bench::measure(state, ops_per_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) f = std::move(f).resume();
  });
  benchmark::DoNotOptimize(count);
  // `f` stays suspended in its loop: destroying it unwinds its stack (forced_unwind).
}

void fiber_yield_round_trip(benchmark::State& state) {
  bool stop = false;
  oneside::fiber partner = oneside::fiber::spawn([&stop] {
    while (!stop) oneside::this_fiber::yield();
  });
  bench::measure(state, ops_per_batch, [](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) oneside::this_fiber::yield();
  });
  stop = true;
  partner.join();
}

void fiber_yield_ring_16(benchmark::State& state) {
  constexpr int fibers = 16;
  std::int64_t remaining = 0;
  bool stop = false;
  std::vector<oneside::fiber> ring;
  bench::measure(state, ops_per_batch, [&](std::int64_t n) {
    remaining = n;
    stop = false;
    for (int i = 0; i < fibers; ++i) {
      ring.push_back(oneside::fiber::spawn([&] {
        while (!stop) {
          if (--remaining <= 0) stop = true;
          oneside::this_fiber::yield();
        }
      }));
    }
    for (oneside::fiber& f : ring) f.join();
    ring.clear();
  });
}

void fiber_spawn_join(benchmark::State& state) {
  bench::measure(state, ops_per_batch, [](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) oneside::fiber::spawn([] {}).join();
  });
}

BENCHMARK(raw_boost_resume_round_trip)->UseManualTime();
BENCHMARK(fiber_yield_round_trip)->UseManualTime();
BENCHMARK(fiber_yield_ring_16)->UseManualTime();
BENCHMARK(fiber_spawn_join)->UseManualTime();

}  // namespace
