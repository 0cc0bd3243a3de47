// The bookkeeping cost of the PGAS layer's futures, against std::promise/std::future in the
// same run; one thread, no communication. An operation is:
//   future_then_wait:        make_future(v).then(v + 1).wait()
//   future_promise_wait:     a promise<int>: set_value, finalize, wait on its future
//   future_promise_count_8:  a promise<> counting 8 dependencies: require(8), 8 fulfils,
//                            finalize, wait
//   std_promise_get:         std::promise<int>: get_future, set_value, get (the baseline)
#include <cstdint>
#include <future>

#include <benchmark/benchmark.h>

#include <oneside/pgas/future.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;

constexpr std::int64_t ops_per_batch = 1024;

void future_then_wait(benchmark::State& state) {
  bench::measure(state, ops_per_batch, [](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      const int v =
          oneside::make_future(static_cast<int>(i)).then([](int x) { return x + 1; }).wait();
      benchmark::DoNotOptimize(v);
    }
  });
}

void future_promise_wait(benchmark::State& state) {
  bench::measure(state, ops_per_batch, [](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      const oneside::promise<int> p;
      p.set_value(static_cast<int>(i));
      const int v = p.finalize().wait();
      benchmark::DoNotOptimize(v);
    }
  });
}

void future_promise_count_8(benchmark::State& state) {
  bench::measure(state, ops_per_batch, [](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      const oneside::promise<> p;
      p.require(8);
      for (int k = 0; k < 8; ++k) p.fulfill();
      p.finalize().wait();
    }
  });
}

void std_promise_get(benchmark::State& state) {
  bench::measure(state, ops_per_batch, [](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      std::promise<int> p;
      std::future<int> f = p.get_future();
      p.set_value(static_cast<int>(i));
      const int v = f.get();
      benchmark::DoNotOptimize(v);
    }
  });
}

BENCHMARK(future_then_wait)->UseManualTime();
BENCHMARK(future_promise_wait)->UseManualTime();
BENCHMARK(future_promise_count_8)->UseManualTime();
BENCHMARK(std_promise_get)->UseManualTime();

}  // namespace
