// oneside::wake, used as programs use it: one rank waits in oneside::wait_until on a word of
// its own window memory, another rank puts into that word, completes the put with a flush and
// wakes the waiter (a put does not wake anyone by itself). The ranks checked by wake, too.
//
// The wake is the test, not the put: the .sleepy runs (CMakeLists.txt) let waits sleep at once
// and for up to a minute per sleep, and the waker then puts only once the waiter's sleeps have
// grown to seconds, and rings nothing else until the waiter acknowledges. Without the wake the
// waiter would notice the word when its current sleep ends, about twice as long after the
// start of the wait as the put came, which is later than the launcher's time limit of those
// runs: a wake that does nothing fails them by timeout.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/runtime/wait.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

using namespace std::chrono_literals;

class Wake : public RankTest {};

// How long the waker lets the waiter sleep before it puts. With sleeps of up to a minute (the
// .sleepy runs) the waiter's k-th sleep ends 50 us * (2^k - 1) after its wait began (sleeps
// start at 50 us and double): 19 s lies well inside the sleep from 13.1 s to 26.2 s, which the
// waiter would sleep through without a wake (the runs' time limit is 24 s), even when the two
// ranks left the barrier before it seconds apart. Otherwise a short delay is enough to let the
// waiter start waiting.
std::chrono::milliseconds put_delay() {
  const bool sleepy = std::stoll(setting_value("ONESIDE_WAIT_SLEEP_MAX_US")) >= 30'000'000;
  return sleepy ? 19'000ms : 50ms;
}

// Each rank's window holds two words: the one the waiter waits on, and the acknowledgement
// the waker waits on (displacements, in words).
constexpr rma::disp_t wait_word = 0;
constexpr rma::disp_t ack_word = 1;

// Puts 1 into word `disp` of rank `to` (the window is in a lock_all epoch), completes it there
// and wakes `to`: by rank, or through the form that takes several ranks (every rank).
void put_one_and_wake(rma::window& win, rank_t to, rma::disp_t disp, bool several) {
  const std::int64_t one = 1;
  win.put(std::span<const std::int64_t>(&one, 1), to, disp);
  win.flush(to);
  if (several) {
    std::vector<rank_t> all(static_cast<std::size_t>(world().size()));
    for (rank_t r = 0; r < world().size(); ++r) all[static_cast<std::size_t>(r)] = r;
    wake(std::span<const rank_t>(all));
  } else {
    wake(to);
  }
}

void wait_for_one(std::int64_t& word) {
  const std::atomic_ref<std::int64_t> seen(word);
  oneside::wait_until([&] { return seen.load(std::memory_order_acquire) == 1; });
}

// Rank 0 waits; rank 1 wakes it (with one rank, another thread of rank 0 does). The waker
// then waits for the waiter's acknowledgement before it does anything else: the barrier that
// follows would wake the waiter too.
void wait_to_be_woken(bool several) {
  rma::window win = rma::window::allocate(world(), 2 * sizeof(std::int64_t), sizeof(std::int64_t));
  auto* words = static_cast<std::int64_t*>(win.base());
  words[wait_word] = 0;
  words[ack_word] = 0;
  // No lock words: taking a lock through the transport would wake the owner by itself.
  win.lock_all(rma::mode::nocheck);
  const rank_t waiter = 0;
  const rank_t me = world().rank();
  const rank_t waker = world().size() > 1 ? 1 : 0;
  const std::chrono::milliseconds delay = put_delay();
  const auto wake_waiter = [&] {
    std::this_thread::sleep_for(delay);
    put_one_and_wake(win, waiter, wait_word, several);
    wait_for_one(words[ack_word]);
  };
  barrier(world());
  if (me == waiter) {
    std::thread other;
    if (waker == waiter) other = std::thread(wake_waiter);
    wait_for_one(words[wait_word]);
    EXPECT_EQ(std::atomic_ref<std::int64_t>(words[wait_word]).load(), 1);
    put_one_and_wake(win, waker, ack_word, false);
    if (other.joinable()) other.join();
  } else if (me == waker) {
    wake_waiter();
  }
  barrier(world());
  win.unlock_all();
  win.free();
}

TEST_F(Wake, WakesARankSleepingOnAWordAPutChanged) {
  wait_to_be_woken(false);
}

TEST_F(Wake, WakesSeveralRanksAtOnce) {
  wait_to_be_woken(true);
}

TEST_F(Wake, RanksOutsideTheWorldAreRejected) {
  expect_error(error_class::rank, "wake", [] { wake(-1); });
  expect_error(error_class::rank, "wake", [&] { wake(size()); });
  const std::vector<rank_t> some_bad{0, size()};
  expect_error(error_class::rank, "wake", [&] { wake(std::span<const rank_t>(some_bad)); });
  // Nothing to wake is no error; waking a rank nobody sleeps on is cheap and harmless.
  wake(std::span<const rank_t>());
  for (rank_t r = 0; r < size(); ++r) wake(r);
  barrier(world());
}

}  // namespace
}  // namespace oneside::test
