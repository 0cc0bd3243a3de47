// Fibers on their own (runtime layer): where and when they run, join and exceptions, ids,
// fiber-local storage, a wait that suspends only the waiting fiber, the cooperative rule (a
// fiber that never yields holds its thread, not the job), and 10,000 live fibers per rank with
// little memory each. The waits of the other layers inside fibers: tests/pgas/fiber_test.cpp.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/runtime/fiber.hpp>
#include <oneside/runtime/wait.hpp>

#include "rank_test.hpp"

namespace oneside::test {
namespace {

class Fibers : public RankTest {};

// Resident bytes of this process (/proc/self/statm).
std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0;
  std::int64_t resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

// Lines of /proc/self/maps: a fiber stack is two mappings (the stack and its guard page).
std::int64_t mappings() {
  std::ifstream maps("/proc/self/maps");
  std::int64_t lines = 0;
  for (std::string line; std::getline(maps, line);) ++lines;
  return lines;
}

TEST_F(Fibers, RunOnTheSpawningThreadWhenItJoins) {
  std::vector<int> order;
  fiber a = fiber::spawn([&] { order.push_back(1); });
  fiber b = fiber::spawn([&] { order.push_back(2); });
  EXPECT_TRUE(order.empty());  // ready, not yet run
  order.push_back(0);
  a.join();
  b.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(a.joinable());
}

TEST_F(Fibers, YieldInterleavesReadyFibers) {
  std::vector<int> order;
  auto body = [&](int who) {
    for (int i = 0; i < 3; ++i) {
      order.push_back(who);
      this_fiber::yield();
    }
  };
  fiber a = fiber::spawn([&] { body(1); });
  fiber b = fiber::spawn([&] { body(2); });
  a.join();
  b.join();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 1, 2, 1, 2}));
}

TEST_F(Fibers, IdsAreDistinctAndTheThreadsOwnCodeHasNone) {
  EXPECT_EQ(this_fiber::get_id(), 0U);
  fiber::id seen_a = 0;
  fiber::id seen_b = 0;
  fiber a = fiber::spawn([&] { seen_a = this_fiber::get_id(); });
  fiber b = fiber::spawn([&] { seen_b = this_fiber::get_id(); });
  const fiber::id id_a = a.get_id();
  const fiber::id id_b = b.get_id();
  a.join();
  b.join();
  EXPECT_NE(id_a, 0U);
  EXPECT_NE(id_a, id_b);
  EXPECT_EQ(seen_a, id_a);
  EXPECT_EQ(seen_b, id_b);
  EXPECT_EQ(a.get_id(), 0U);  // joined
}

TEST_F(Fibers, InFiberTellsFibersFromTheThreadsOwnCode) {
  EXPECT_FALSE(detail::in_fiber());
  bool in_a = false;
  bool in_a_after_yield = false;
  fiber a = fiber::spawn([&] {
    in_a = detail::in_fiber();
    this_fiber::yield();
    in_a_after_yield = detail::in_fiber();
  });
  fiber b = fiber::spawn([] {});
  a.join();
  b.join();
  EXPECT_TRUE(in_a);
  EXPECT_TRUE(in_a_after_yield);
  EXPECT_FALSE(detail::in_fiber());  // back in the thread's own code
}

// wait_polling in fibers: the poll runs once every ready fiber had its turn, so one poll
// serves all; outside a fiber it runs at once. What the poll throws reaches the waiter.
TEST_F(Fibers, WaitPollingPollsOnceAfterTheOtherFibersRan) {
  constexpr int fibers = 50;  // fewer than 64: no poll is due before all have waited
  int issued = 0;
  int polls = 0;
  int served = 0;  // operations issued before the last poll
  std::vector<int> issued_at_poll;
  std::vector<fiber> all;
  for (int i = 0; i < fibers; ++i) {
    all.push_back(fiber::spawn([&, i] {
      const int mine = ++issued;
      detail::wait_polling(
          [&] {
            ++polls;
            served = issued;
            issued_at_poll.push_back(issued);
          },
          [&] { return served >= mine; });
      EXPECT_GE(served, mine) << "fiber " << i;
    }));
  }
  for (fiber& f : all) f.join();
  EXPECT_EQ(issued, fibers);
  EXPECT_EQ(polls, 1);
  EXPECT_EQ(issued_at_poll, std::vector<int>{fibers});

  int outside = 0;
  detail::wait_polling([&] { ++outside; }, [&] { return outside >= 3; });
  EXPECT_EQ(outside, 3);  // at once, and again at each look

  fiber failing = fiber::spawn([] {
    detail::wait_polling([] { throw std::runtime_error("poll failed"); }, [] { return false; });
  });
  EXPECT_THROW(failing.join(), std::runtime_error);
}

// A fiber takes its stack when it first runs: spawned fibers waiting for their turn map
// nothing, and fibers that run one after another without suspending reuse the pool's stacks.
TEST_F(Fibers, StacksAreTakenWhenFibersFirstRun) {
#if defined(__SANITIZE_THREAD__)
  constexpr int fibers = 1024;  // each fiber is a TSan context too: slow to make and end
#else
  constexpr int fibers = 4096;
#endif
  int ran = 0;
  std::vector<fiber> all;
  all.reserve(fibers);
  const std::int64_t before = mappings();
  for (int i = 0; i < fibers; ++i) all.push_back(fiber::spawn([&ran] { ++ran; }));
  const std::int64_t spawned = mappings();
  for (fiber& f : all) f.join();
  const std::int64_t joined = mappings();
  EXPECT_EQ(ran, fibers);
  // Eagerly taken stacks would add 2 mappings per fiber (the kernel merges none: guard pages
  // separate them). Allow for a few other mappings (a heap arena, a pooled stack or two).
  EXPECT_LT(spawned - before, 64) << before << " mappings before, " << spawned << " after";
  EXPECT_LT(joined - before, 64) << before << " mappings before, " << joined << " after";
}

TEST_F(Fibers, JoinRethrowsWhatTheFiberThrew) {
  fiber f = fiber::spawn([] { throw std::runtime_error("from the fiber"); });
  try {
    f.join();
    ADD_FAILURE() << "join did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "from the fiber");
  }
  // A fiber that waits first, then throws.
  std::atomic<bool> go{false};
  fiber g = fiber::spawn([&] {
    oneside::wait_until([&] { return go.load(); });
    throw std::logic_error("after the wait");
  });
  fiber h = fiber::spawn([&] { go.store(true); });
  h.join();
  EXPECT_THROW(g.join(), std::logic_error);
}

TEST_F(Fibers, FiberLocalsArePerFiberAndPerThread) {
  fiber_local<int> value;
  *value = 7;  // the thread's own
  std::vector<int> seen;
  auto body = [&](int v) {
    EXPECT_EQ(*value, 0);  // default-constructed in each fiber
    *value = v;
    this_fiber::yield();
    seen.push_back(*value);
  };
  fiber a = fiber::spawn([&] { body(1); });
  fiber b = fiber::spawn([&] { body(2); });
  a.join();
  b.join();
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  EXPECT_EQ(*value, 7);
}

// The waiting fiber is suspended and the other runs: were the wait to hold the thread, the flag
// would never be set (the test would end by its time limit).
TEST_F(Fibers, AWaitSuspendsOnlyTheWaitingFiber) {
  std::atomic<int> flag{0};
  int steps = 0;
  fiber waiter = fiber::spawn([&] {
    const detail::wait_scope scope("test: waiting for the flag");
    oneside::wait_until([&] { return flag.load() == 1; });
    EXPECT_GE(steps, 3);
  });
  fiber setter = fiber::spawn([&] {
    for (; steps < 3; ++steps) this_fiber::yield();
    flag.store(1);
  });
  waiter.join();
  setter.join();
  // The thread's own code waits the same way while its fibers run.
  fiber late = fiber::spawn([&] { flag.store(2); });
  oneside::wait_until([&] { return flag.load() == 2; });
  late.join();
}

TEST_F(Fibers, JoinFromAnotherFiberAndDetach) {
  std::atomic<int> done{0};
  fiber inner = fiber::spawn([&] {
    this_fiber::yield();
    done.fetch_add(1);
  });
  fiber outer = fiber::spawn([&] {
    inner.join();
    done.fetch_add(10);
  });
  fiber::spawn([&] { done.fetch_add(100); }).detach();
  outer.join();
  oneside::wait_until([&] { return done.load() == 111; });
  EXPECT_EQ(done.load(), 111);
}

// The rule for a fiber that never yields: it keeps its thread (the others of the thread run
// when it ends), but nothing else waits for it: other ranks' one-sided accesses to this rank
// complete, and so do collectives once it is done.
TEST_F(Fibers, ANeverYieldingFiberHoldsOnlyItsThread) {
  int others_ran = 0;
  bool others_ran_during = true;
  fiber busy = fiber::spawn([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (std::chrono::steady_clock::now() < until) {
    }
    others_ran_during = others_ran != 0;
  });
  fiber other = fiber::spawn([&] { ++others_ran; });
  busy.join();
  other.join();
  EXPECT_FALSE(others_ran_during);
  EXPECT_EQ(others_ran, 1);
  barrier(world());
}

// Under TSan every fiber is also a TSan thread context (sanitizer_switch.hpp), of which TSan
// holds a few thousand at most; and no sanitizer build commits what a plain one does. There,
// 1,000 fibers check the scheduling and the residency is not measured.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int live_fibers = 1'000;
constexpr bool measure_residency = false;
#else
constexpr int live_fibers = 10'000;
constexpr bool measure_residency = true;
#endif

TEST_F(Fibers, TenThousandLiveFibersEachCommitLittle) {
  constexpr int n = live_fibers;
  std::atomic<bool> go{false};
  int started = 0;
  long sum = 0;
  std::vector<fiber> fibers;
  fibers.reserve(n);
  const std::int64_t before = resident_bytes();
  for (int i = 0; i < n; ++i) {
    fibers.push_back(fiber::spawn([&, i] {
      ++started;
      oneside::wait_until([&] { return go.load(std::memory_order_acquire); });
      sum += i;
    }));
  }
  oneside::wait_until([&] { return started == n; });  // every fiber runs, then waits
  const std::int64_t per_fiber = (resident_bytes() - before) / n;
  if (measure_residency) {
    EXPECT_LE(per_fiber, 64 * 1024) << "resident bytes per live fiber";
  }
  go.store(true, std::memory_order_release);
  for (fiber& f : fibers) f.join();
  EXPECT_EQ(sum, static_cast<long>(n) * (n - 1) / 2);
  RecordProperty("resident_bytes_per_fiber", std::to_string(per_fiber));
}

}  // namespace
}  // namespace oneside::test
