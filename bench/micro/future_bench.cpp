// The bookkeeping cost of the PGAS layer's futures, against std::promise/std::future in the
// same run; one thread, no communication. An operation is:
//   future_then_wait:        make_future(v).then(v + 1).wait()
//   future_promise_wait:     a promise<int>: set_value, finalize, wait on its future
//   future_promise_count_8:  a promise<> counting 8 dependencies: require(8), 8 fulfils,
//                            finalize, wait
//   std_promise_get:         std::promise<int>: get_future, set_value, get (the baseline)
// Chains of ready futures (issue 19: at most 30 ns a link, in bounded stack); an operation is
// one link of a chain of 1024:
//   future_chain_ready:        f = f.then(v + 1) on a ready future<int>, iterated
//   future_chain_tail_rget:    a recursive chain over rget of this rank's word (ready at once),
//                              each continuation returning the next link's future: inline
//                              up to the nesting bound, then deferred to the outermost frame
//   future_chain_nested_rget:  the same, each link adding its value to the next links' sum
//                              (a pending future per link once past the bound)
//   call_chain:                v = step(v) through a function pointer the compiler cannot see
//                              through (the baseline: what a link costs without futures)
#include <cstdint>
#include <future>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>
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

constexpr std::int64_t chain_links = 1024;

void future_chain_ready(benchmark::State& state) {
  bench::measure(state, chain_links, [](std::int64_t n) {
    oneside::future<int> f = oneside::make_future(0);
    for (std::int64_t i = 0; i < n; ++i) f = f.then([](int x) { return x + 1; });
    const int v = f.wait();
    benchmark::DoNotOptimize(v);
  });
}

oneside::future<long> tail_chain(oneside::global_ptr<long> p, std::int64_t left, long acc) {
  if (left == 0) return oneside::make_future(acc);
  return oneside::rget(p).then([p, left, acc](long v) { return tail_chain(p, left - 1, acc + v); });
}

oneside::future<long> nested_chain(oneside::global_ptr<long> p, std::int64_t left) {
  if (left == 0) return oneside::make_future(0L);
  return oneside::rget(p).then([p, left](long v) {
    return nested_chain(p, left - 1).then([v](long rest) { return rest + v; });
  });
}

// A word of this rank's heap, read by the rget chains.
template <class Chain>
void rget_chain(benchmark::State& state, Chain chain) {
  const oneside::global_ptr<long> word = oneside::new_<long>(1);
  bool right = true;
  bench::measure(state, chain_links, [&](std::int64_t n) {
    const long v = chain(word, n).wait();
    right = right && v == n;
  });
  oneside::delete_(word);
  if (!right) state.SkipWithError("a chain summed wrong");
}

void future_chain_tail_rget(benchmark::State& state) {
  rget_chain(state,
             [](oneside::global_ptr<long> p, std::int64_t n) { return tail_chain(p, n, 0); });
}

void future_chain_nested_rget(benchmark::State& state) {
  rget_chain(state, [](oneside::global_ptr<long> p, std::int64_t n) { return nested_chain(p, n); });
}

int step(int v) {
  return v + 1;
}
int (*volatile g_step)(int) = step;

void call_chain(benchmark::State& state) {
  bench::measure(state, chain_links, [](std::int64_t n) {
    int v = 0;
    for (std::int64_t i = 0; i < n; ++i) v = g_step(v);
    benchmark::DoNotOptimize(v);
  });
}

BENCHMARK(future_then_wait)->UseManualTime();
BENCHMARK(future_chain_ready)->UseManualTime();
BENCHMARK(future_chain_tail_rget)->UseManualTime();
BENCHMARK(future_chain_nested_rget)->UseManualTime();
BENCHMARK(call_chain)->UseManualTime();
BENCHMARK(future_promise_wait)->UseManualTime();
BENCHMARK(future_promise_count_8)->UseManualTime();
BENCHMARK(std_promise_get)->UseManualTime();

}  // namespace
