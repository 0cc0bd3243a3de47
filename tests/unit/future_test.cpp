// Futures and promises in one process: ready futures, promise counting from many threads,
// then() chains (values, void, flattening, exceptions, where they run), continuations racing
// completion, when_all, several waiters, polled operations driven by progress(), async on the
// task arena, misuse raising error(arg), and waits woken by a fulfil from another thread.
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/oneside.hpp>
#include <oneside/pgas/future.hpp>
#include <oneside/runtime/wait.hpp>

#include "expect_error.hpp"
#include "runtime/transport.hpp"

namespace oneside {
namespace {

using namespace std::chrono_literals;
using test::expect_error;

struct failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The message of the exception `f` fails with ("" when it does not fail).
template <class T>
std::string failure_of(const future<T>& f) {
  try {
    f.wait();
  } catch (const failure& e) {
    return e.what();
  }
  return "";
}

TEST(Future, ReadyFutures) {
  const future<> none;
  EXPECT_TRUE(none.is_ready());
  none.wait();
  none.result();
  EXPECT_TRUE(make_future().is_ready());

  const future<int> five = make_future(5);
  EXPECT_TRUE(five.is_ready());
  EXPECT_EQ(five.wait(), 5);
  EXPECT_EQ(five.result(), 5);
  const future<int> copy = five;  // copies see the same outcome
  EXPECT_EQ(copy.result(), 5);
  static_assert(std::is_same_v<decltype(make_future(std::string("s"))), future<std::string>>);

  const future<int> failed = make_exception_future<int>(std::make_exception_ptr(failure("no")));
  EXPECT_TRUE(failed.is_ready());
  EXPECT_EQ(failure_of(failed), "no");
  EXPECT_THROW(failed.result(), failure);
}

// Small trivially copyable values live in the future itself (no shared state): such futures
// behave exactly like the others in every call, joins and flattening included.
TEST(Future, ReadyValuesHeldInPlaceBehaveLikeSharedOnes) {
  struct pair16 {
    std::int64_t a;
    double b;
  };
  static_assert(pgas::detail::inline_value<pair16> && pgas::detail::inline_value<int>);
  static_assert(!pgas::detail::inline_value<std::string> && !pgas::detail::inline_value<void>);
  const future<pair16> p = make_future(pair16{3, 0.5});
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.wait().a, 3);
  EXPECT_EQ(p.result().b, 0.5);

  // then(): a value, void, a future, a larger value, an exception.
  EXPECT_EQ(p.then([](const pair16& v) { return v.a * 2; }).result(), 6);
  int seen = 0;
  EXPECT_TRUE(p.then([&](const pair16& v) { seen = static_cast<int>(v.a); }).is_ready());
  EXPECT_EQ(seen, 3);
  const promise<int> later;
  const future<int> flat = p.then([&](const pair16&) { return later.get_future(); });
  EXPECT_FALSE(flat.is_ready());
  later.set_value(8);
  (void)later.finalize();
  EXPECT_EQ(flat.wait(), 8);
  EXPECT_EQ(p.then([](const pair16&) { return std::string("s"); }).result(), "s");
  EXPECT_EQ(failure_of(p.then([](const pair16&) -> int { throw failure("held"); })), "held");
  // A continuation's small result is itself held in place, and chains on.
  EXPECT_EQ(
      make_future(2).then([](int v) { return v + 1; }).then([](int v) { return v * 10; }).result(),
      30);

  // Joins and flattening take them as inputs, also next to pending futures.
  const promise<double> slow;
  const future<std::tuple<int, double>> both = when_all(make_future(1), slow.get_future());
  EXPECT_FALSE(both.is_ready());
  slow.set_value(2.5);
  (void)slow.finalize();
  EXPECT_EQ(both.wait(), std::make_tuple(1, 2.5));
  EXPECT_EQ(when_all(std::vector<future<int>>{make_future(4), make_future(5)}).wait(),
            (std::vector<int>{4, 5}));
  const promise<> gate;
  const future<int> from_pending = gate.get_future().then([] { return make_future(9); });
  gate.fulfill();
  EXPECT_EQ(from_pending.wait(), 9);

  // Copies are independent values; an assigned-over future takes the new value.
  future<int> a = make_future(1);
  const future<int> b = a;
  a = make_future(2);
  EXPECT_EQ(a.result(), 2);
  EXPECT_EQ(b.result(), 1);
}

TEST(Future, MisuseRaisesArg) {
  const future<int> invalid;
  expect_error(error_class::arg, "future::is_ready", [&] { (void)invalid.is_ready(); });
  expect_error(error_class::arg, "future::wait", [&] { (void)invalid.wait(); });
  expect_error(error_class::arg, "future::result", [&] { (void)invalid.result(); });
  expect_error(error_class::arg, "future::then", [&] { (void)invalid.then([](int) {}); });
  expect_error(error_class::arg, "when_all", [&] { (void)when_all(make_future(1), invalid); });
  expect_error(error_class::arg, "when_all",
               [&] { (void)when_all(std::vector<future<int>>{invalid}); });
  expect_error(error_class::arg, "make_exception_future",
               [] { (void)make_exception_future<int>(nullptr); });

  const promise<int> p;
  expect_error(error_class::arg, "future::result", [&] { (void)p.get_future().result(); });
  expect_error(error_class::arg, "promise::fulfill", [&] { p.fulfill(2); });
  expect_error(error_class::arg, "promise::fulfill", [&] { p.fulfill(-1); });
  expect_error(error_class::arg, "promise::require", [&] { p.require(-1); });
  p.set_value(1);
  expect_error(error_class::arg, "promise::set_value", [&] { p.set_value(2); });
  EXPECT_EQ(p.finalize().result(), 1);
  expect_error(error_class::arg, "promise::require", [&] { p.require(1); });
  expect_error(error_class::arg, "promise::finalize", [&] { (void)p.finalize(); });
  expect_error(error_class::arg, "promise::set_exception",
               [&] { p.set_exception(std::make_exception_ptr(failure("late"))); });

  // Reaching zero without a value: the call raises, and the future fails with that error.
  const promise<int> empty;
  expect_error(error_class::arg, "promise::finalize", [&] { (void)empty.finalize(); });
  EXPECT_TRUE(empty.get_future().is_ready());
  expect_error(error_class::arg, "promise::finalize", [&] { (void)empty.get_future().wait(); });

  promise<> moved;
  const promise<> taker = std::move(moved);
  // A moved-from promise has no state (use after move on purpose).
  expect_error(error_class::arg, "promise::fulfill", [&] { moved.fulfill(); });
  taker.fulfill();
}

TEST(Future, PromiseCountsFulfilsFromEightThreads) {
  constexpr int threads = 8;
  constexpr int per_thread = 2000;
  const promise<long> p;
  std::atomic<int> continuations{0};
  const future<long> f = p.get_future().then([&](long v) {
    continuations.fetch_add(1);
    return v * 2;
  });
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&p] {
      for (int i = 0; i < per_thread; ++i) {
        p.require(3);  // the initial dependency keeps the count above zero until finalize
        p.fulfill(2);
        p.fulfill();
      }
    });
  }
  for (std::thread& t : pool) t.join();
  EXPECT_FALSE(f.is_ready());
  p.set_value(21);
  EXPECT_FALSE(f.is_ready());
  (void)p.finalize();
  EXPECT_TRUE(f.is_ready());
  EXPECT_EQ(f.wait(), 42);
  EXPECT_EQ(continuations.load(), 1);

  // The last of several concurrent fulfils readies the future, once.
  const promise<> q;
  q.require(threads * per_thread);
  std::atomic<int> ran{0};
  (void)q.get_future().then([&] { ran.fetch_add(1); });
  (void)q.finalize();
  pool.clear();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&q] {
      for (int i = 0; i < per_thread; ++i) q.fulfill();
    });
  }
  q.get_future().wait();
  for (std::thread& t : pool) t.join();
  EXPECT_EQ(ran.load(), 1);
}

TEST(Future, ThenChainsValuesVoidAndFlattenedFutures) {
  const promise<int> p;
  const future<std::string> chain =
      p.get_future().then([](int v) { return v * 1.5; }).then([](double d) {
        return std::to_string(d);
      });
  const future<> side = p.get_future().then([](const int&) {});
  const future<int> from_void = side.then([] { return 7; });
  // A continuation that returns a future gives that future's value, once it is ready.
  const promise<int> inner;
  const future<int> flat = p.get_future().then(
      [&](int v) { return inner.get_future().then([v](int w) { return v + w; }); });
  static_assert(std::is_same_v<decltype(flat), const future<int>>);
  const future<> flat_void = side.then([] { return future<>(); });

  EXPECT_FALSE(chain.is_ready());
  p.set_value(4);
  (void)p.finalize();
  EXPECT_EQ(chain.wait(), std::to_string(6.0));
  EXPECT_TRUE(from_void.is_ready());
  EXPECT_EQ(from_void.wait(), 7);
  EXPECT_TRUE(flat_void.is_ready());
  EXPECT_FALSE(flat.is_ready());
  inner.set_value(10);
  (void)inner.finalize();
  EXPECT_EQ(flat.wait(), 14);

  // On a ready future the continuation runs at once, in then().
  bool ran = false;
  (void)make_future(1).then([&](int) { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(Future, ExceptionsPropagateThroughThen) {
  std::atomic<int> skipped{0};
  const future<int> thrown =
      make_future(1).then([](int) -> int { throw failure("in then"); }).then([&](int v) {
        skipped.fetch_add(1);
        return v;
      });
  EXPECT_EQ(failure_of(thrown), "in then");
  EXPECT_EQ(skipped.load(), 0);

  const promise<> p;
  const future<> chain = p.get_future().then([] {}).then([&] { skipped.fetch_add(1); });
  p.set_exception(std::make_exception_ptr(failure("set")));
  EXPECT_EQ(failure_of(chain), "set");
  EXPECT_EQ(skipped.load(), 0);

  // An exception inside a flattened future passes on, as does one from make_exception_future.
  const future<int> flat = make_future(1).then(
      [](int) { return make_exception_future<int>(std::make_exception_ptr(failure("inner"))); });
  EXPECT_EQ(failure_of(flat), "inner");
}

TEST(Future, ContinuationsRunOnTheThreadThatCompletes) {
  const promise<> p;
  std::thread::id ran_on;
  const future<> f = p.get_future().then([&] { ran_on = std::this_thread::get_id(); });
  std::thread::id completer;
  std::thread t([&] {
    completer = std::this_thread::get_id();
    (void)p.finalize();
  });
  t.join();
  EXPECT_TRUE(f.is_ready());
  EXPECT_EQ(ran_on, completer);
}

TEST(Future, ThenRacingCompletionRunsEachContinuationOnce) {
  constexpr int iterations = 10000;
  std::vector<promise<int>> promises(iterations);
  std::vector<std::atomic<int>> runs(iterations);
  std::vector<future<int>> results(2 * iterations);
  std::barrier<> start(3);
  const auto attach = [&](int offset) {
    for (int i = 0; i < iterations; ++i) {
      start.arrive_and_wait();
      results[static_cast<std::size_t>(2 * i + offset)] =
          promises[static_cast<std::size_t>(i)].get_future().then([&runs, i](int v) {
            runs[static_cast<std::size_t>(i)].fetch_add(1);
            return v + 1;
          });
    }
  };
  std::thread a(attach, 0);
  std::thread b(attach, 1);
  for (int i = 0; i < iterations; ++i) {
    start.arrive_and_wait();
    promises[static_cast<std::size_t>(i)].set_value(i);
    (void)promises[static_cast<std::size_t>(i)].finalize();
  }
  a.join();
  b.join();
  int wrong = 0;
  for (int i = 0; i < iterations; ++i) {
    const auto at = static_cast<std::size_t>(i);
    if (runs[at].load() != 2 || results[2 * at].wait() != i + 1 ||
        results[2 * at + 1].wait() != i + 1) {
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST(Future, LongChainsNeedNoDeepStack) {
  constexpr int links = 200000;
  const promise<int> p;
  future<int> f = p.get_future();
  for (int i = 0; i < links; ++i) f = f.then([](int v) { return v + 1; });
  p.set_value(0);
  (void)p.finalize();
  EXPECT_EQ(f.wait(), links);

  // Nor does dropping a chain that never became ready.
  auto unready = std::make_unique<promise<int>>();
  future<int> g = unready->get_future();
  for (int i = 0; i < links; ++i) g = g.then([](int v) { return v + 1; });
  g = future<int>();
  unready.reset();
}

TEST(Future, AContinuationMayWaitForWhatItReadies) {
  // q's continuations are deferred until p's continuation returns; its wait runs them.
  const promise<> p;
  const promise<> q;
  const future<int> inner = q.get_future().then([] { return 7; });
  const future<int> f = p.get_future().then([&] {
    (void)q.finalize();
    return inner.wait();
  });
  (void)p.finalize();
  EXPECT_EQ(f.wait(), 7);
}

TEST(Future, WhenAllJoinsMixedFutures) {
  const promise<std::string> s;
  const promise<> v;
  const future<std::tuple<int, std::string>> both =
      when_all(make_future(1), future<>(), s.get_future(), v.get_future());
  const future<int> one = when_all(v.get_future(), make_future(3), future<>());
  const future<> none = when_all(v.get_future(), future<>());
  const future<> empty = when_all();
  EXPECT_TRUE(empty.is_ready());
  s.set_value("two");
  (void)s.finalize();
  EXPECT_FALSE(both.is_ready());
  EXPECT_FALSE(none.is_ready());
  (void)v.finalize();
  EXPECT_EQ(both.wait(), std::make_tuple(1, std::string("two")));
  EXPECT_EQ(one.wait(), 3);
  EXPECT_TRUE(none.is_ready());
}

TEST(Future, WhenAllJoinsVectors) {
  std::vector<promise<int>> ps(5);
  std::vector<future<int>> fs;
  std::vector<future<>> events;
  for (const promise<int>& p : ps) {
    fs.push_back(p.get_future());
    events.push_back(p.get_future().then([](int) {}));
  }
  const future<std::vector<int>> all = when_all(fs);
  const future<> all_events = when_all(events);
  for (std::size_t i = ps.size(); i-- > 0;) {  // complete in reverse: order comes from the vector
    ps[i].set_value(static_cast<int>(i) * 10);
    (void)ps[i].finalize();
  }
  EXPECT_EQ(all.wait(), (std::vector<int>{0, 10, 20, 30, 40}));
  EXPECT_TRUE(all_events.is_ready());
  EXPECT_TRUE(when_all(std::vector<future<int>>{}).wait().empty());
  EXPECT_TRUE(when_all(std::vector<future<>>{}).is_ready());
}

TEST(Future, WhenAllFailsWithTheFirstException) {
  const promise<int> a;
  const promise<> b;
  const promise<int> c;
  const future<std::tuple<int, int>> joined =
      when_all(a.get_future(), b.get_future(), c.get_future());
  b.set_exception(std::make_exception_ptr(failure("b")));
  a.set_exception(std::make_exception_ptr(failure("a")));
  EXPECT_FALSE(joined.is_ready());  // ready once all inputs are
  c.set_value(3);
  (void)c.finalize();
  EXPECT_EQ(failure_of(joined), "b");

  const future<std::vector<int>> vec = when_all(std::vector<future<int>>{
      make_future(1), make_exception_future<int>(std::make_exception_ptr(failure("v")))});
  EXPECT_EQ(failure_of(vec), "v");
}

TEST(Future, SeveralThreadsWaitOnOneFuture) {
  const promise<int> p;
  const future<int> f = p.get_future();
  std::atomic<int> got{0};
  std::vector<std::thread> waiters;
  for (int t = 0; t < 4; ++t) {
    waiters.emplace_back([f, &got] { got.fetch_add(f.wait()); });
  }
  std::this_thread::sleep_for(20ms);
  p.set_value(5);
  (void)p.finalize();
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(got.load(), 20);
}

TEST(Future, PendingStatesAreDrivenByProgress) {
  constexpr int polls_needed = 5;
  auto polls = std::make_shared<int>(0);
  bool fired = false;
  {
    // Polled once at creation; the future is dropped: the registry keeps the operation.
    const future<int> f = pgas::detail::make_pending_future([polls]() -> std::optional<int> {
      if (++*polls < polls_needed) return std::nullopt;
      return 42;
    });
    (void)f.then([&](int v) { fired = v == 42; });
  }
  EXPECT_EQ(*polls, 1);
  for (int i = 1; i < polls_needed; ++i) {
    EXPECT_FALSE(fired);
    progress();
  }
  EXPECT_TRUE(fired);
  EXPECT_EQ(*polls, polls_needed);
  progress();
  EXPECT_EQ(*polls, polls_needed);  // never polled again
  EXPECT_EQ(polls.use_count(), 1);  // and the poller is gone

  // A void operation, completed by a wait; and one whose poller throws.
  int void_polls = 0;
  const future<> op = pgas::detail::make_pending_future([&] { return ++void_polls == 3; });
  op.wait();
  EXPECT_EQ(void_polls, 3);
  const future<int> broken =
      pgas::detail::make_pending_future([]() -> std::optional<int> { throw failure("transport"); });
  EXPECT_TRUE(broken.is_ready());
  EXPECT_EQ(failure_of(broken), "transport");
}

TEST(Future, AWaitMakesProgressOnOtherOperations) {
  // p is fulfilled only after the other operation's continuation ran, and nothing but the
  // wait on p calls progress(): so the wait must have completed the other operation.
  auto go = std::make_shared<std::atomic<bool>>(false);
  auto other_done = std::make_shared<std::atomic<bool>>(false);
  (void)pgas::detail::make_pending_future([go] { return go->load(); }).then([other_done] {
    other_done->store(true);
  });
  const promise<> p;
  std::thread t([&] {
    go->store(true);
    detail::wait_until([&] { return other_done->load(); });
    (void)p.finalize();
  });
  p.get_future().wait();
  t.join();
  EXPECT_TRUE(other_done->load());
}

TEST(Future, AsyncRunsOnTheArena) {
  expect_error(error_class::not_open, "async", [] { (void)async([] { return 1; }); });
  runtime rt;
  EXPECT_EQ(async([] { return 42; }).wait(), 42);
  std::atomic<bool> ran{false};
  async([&] { ran.store(true); }).wait();
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(failure_of(async([]() -> int { throw failure("task"); })), "task");
  EXPECT_EQ(async([] { return make_future(3); }).wait(), 3);
  auto owned = std::make_unique<int>(9);  // a move-only task
  EXPECT_EQ(async([o = std::move(owned)] { return *o; }).wait(), 9);
  std::vector<future<int>> many;
  for (int i = 0; i < 100; ++i) many.push_back(async([i] { return i; }));
  const std::vector<int> values = when_all(many).wait();
  int sum = 0;
  for (int v : values) sum += v;
  EXPECT_EQ(sum, 4950);
}

TEST(Future, AWaitIsWokenByAFulfilFromAnotherThread) {
  const promise<> p;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread fulfiller([&] {
    std::this_thread::sleep_for(50ms);
    (void)p.finalize();
  });
  p.get_future().wait();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  fulfiller.join();
}

TEST(Future, ASleepingWaitIsWokenByTheFulfilNotByItsTimeout) {
  // Waits go to sleep at once and their sleeps double up to a minute: unrung, a wait that
  // began 1.7 s before the fulfil sleeps until 3.3 s (sleeps end at 50 µs * (2^k - 1)).
  struct env_guard {
    const char* name;
    ~env_guard() { ::unsetenv(name); }
  };
  const env_guard spin{"ONESIDE_WAIT_SPIN_NS"}, yield{"ONESIDE_WAIT_YIELD_NS"},
      sleep{"ONESIDE_WAIT_SLEEP_MAX_US"};
  ::setenv(spin.name, "0", 1);
  ::setenv(yield.name, "0", 1);
  ::setenv(sleep.name, "60000000", 1);
  runtime rt;
  const promise<int> p;
  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point woke;
  std::thread waiter([&] {
    EXPECT_EQ(p.get_future().wait(), 1);
    woke = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_until(start + 1700ms);
  // The waiter sleeps on this process's doorbell, the one the transport rings too.
  EXPECT_TRUE(transport::current().local_doorbell().has_sleepers());
  const auto fulfilled = std::chrono::steady_clock::now();
  p.set_value(1);
  (void)p.finalize();
  waiter.join();
  EXPECT_LT(woke - fulfilled, 1s) << "the wait ended by its timeout, not by the fulfil's ring";
}

// The README's example of the pgas section, as written there.
TEST(Future, ReadmeExampleCountsThreeOperations) {
  runtime rt;
  oneside::promise<> done;
  done.require(3);  // three operations to count
  auto all = done.finalize().then([] { return 42; });
  std::vector<std::thread> ops;
  for (int i = 0; i < 3; ++i) ops.emplace_back([&] { done.fulfill(); });
  int v = all.wait();  // makes progress while it waits
  for (std::thread& t : ops) t.join();
  EXPECT_EQ(v, 42);
  auto both = oneside::when_all(oneside::async([] { return 1; }), oneside::make_future(2.0));
  EXPECT_EQ(both.wait(), std::make_tuple(1, 2.0));
}

}  // namespace
}  // namespace oneside
