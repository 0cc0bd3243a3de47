// The waiting primitive: escalation spin -> yield -> sleep, and the sleep/wake protocol (a
// notify between a waiter's last check and its sleep is never lost).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include <oneside/oneside.hpp>
#include <oneside/runtime/wait.hpp>

namespace oneside::detail {
namespace {

TEST(Wait, BackoffEscalatesFromSpinToYieldToSleep) {
  backoff b;  // defaults: 20 µs spin, 200 µs yield, then sleeps
  EXPECT_EQ(b.current_phase(), backoff::phase::spin);
  bool saw_yield = false;
  const auto start = std::chrono::steady_clock::now();
  while (b.current_phase() != backoff::phase::sleep) {
    b.pause();
    saw_yield = saw_yield || b.current_phase() == backoff::phase::yield;
    ASSERT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  }
  EXPECT_TRUE(saw_yield);
  b.pause();  // a bounded sleep
  EXPECT_EQ(b.current_phase(), backoff::phase::sleep);
}

TEST(Wait, AWaiterAsleepIsWokenByNotify) {
  // Waits go to sleep at once and would sleep a minute per sleep: only the ring can end
  // this wait within the test's time.
  ::setenv("ONESIDE_WAIT_SPIN_NS", "0", 1);
  ::setenv("ONESIDE_WAIT_YIELD_NS", "0", 1);
  ::setenv("ONESIDE_WAIT_SLEEP_MAX_US", "60000000", 1);
  runtime rt;
  doorbell bell;
  std::atomic<bool> flag{false};
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    wait_until(bell, [&] { return flag.load(std::memory_order_acquire); });
    done.store(true);
  });
  // Wait until the waiter sleeps, then make the change and ring.
  while (!bell.has_sleepers()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto t0 = std::chrono::steady_clock::now();
  flag.store(true, std::memory_order_release);
  notify(bell);
  waiter.join();
  EXPECT_TRUE(done.load());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20))
      << "the waiter was not woken by notify but by its (60 s) timeout";
  ::unsetenv("ONESIDE_WAIT_SPIN_NS");
  ::unsetenv("ONESIDE_WAIT_YIELD_NS");
  ::unsetenv("ONESIDE_WAIT_SLEEP_MAX_US");
}

TEST(Wait, ManyHandoffsBetweenTwoThreadsLoseNoWakeUp) {
  ::setenv("ONESIDE_WAIT_SPIN_NS", "0", 1);
  ::setenv("ONESIDE_WAIT_YIELD_NS", "0", 1);
  ::setenv("ONESIDE_WAIT_SLEEP_MAX_US", "60000000", 1);
  runtime rt;
  doorbell bell_a, bell_b;
  std::atomic<int> turn{0};
  constexpr int rounds = 2000;
  std::thread other([&] {
    for (int i = 0; i < rounds; ++i) {
      wait_until(bell_b, [&] { return turn.load(std::memory_order_acquire) == 2 * i + 1; });
      turn.store(2 * i + 2, std::memory_order_release);
      notify(bell_a);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) {
    turn.store(2 * i + 1, std::memory_order_release);
    notify(bell_b);
    wait_until(bell_a, [&] { return turn.load(std::memory_order_acquire) == 2 * i + 2; });
  }
  other.join();
  // A single lost wake-up would cost 60 s.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(50));
  ::unsetenv("ONESIDE_WAIT_SPIN_NS");
  ::unsetenv("ONESIDE_WAIT_YIELD_NS");
  ::unsetenv("ONESIDE_WAIT_SLEEP_MAX_US");
}

}  // namespace
}  // namespace oneside::detail
