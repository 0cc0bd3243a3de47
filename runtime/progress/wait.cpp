// The waiting primitive: doorbells (shared futex words) and the escalating backoff
// spin -> yield -> sleep, and oneside::wake, which rings other ranks' doorbells through the
// transport. See include/oneside/runtime/wait.hpp for the protocol.
#include <algorithm>
#include <chrono>
#include <climits>
#include <ctime>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <span>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>

#include <oneside/runtime/wait.hpp>

#include "context/context.hpp"
#include "runtime/check.hpp"

namespace oneside::detail {
namespace {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

inline std::int64_t now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Waiters before the runtime opens (bootstrap) and threads of a closed runtime use a bell
// of their own; nobody rings it, so their sleeps end by timeout.
doorbell g_fallback_bell;

doorbell& default_bell() noexcept {
  if (context* c = current_context(); c != nullptr && c->transport) {
    return c->transport->local_doorbell();
  }
  return g_fallback_bell;
}

thread_local bool t_runtime_thread = false;

// Runs the transport's progress from waits when no agent thread does it (ONESIDE_AGENT=poll)
// and over MPI, unless the waiter is one of the runtime's own threads.
void poll_progress() noexcept {
  if (!current_wait_params().poll_progress || t_runtime_thread) return;
  if (context* c = current_context(); c != nullptr && c->transport) c->transport->progress();
}

constexpr std::int64_t first_sleep_ns = 50'000;

wait_policy runtime_policy() noexcept {
  const wait_params& p = current_wait_params();
  return wait_policy{p.spin_ns, p.yield_ns, p.sleep_max_ns};
}

// Whether membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) works here (the sleepers' barrier):
// decided by enable_asymmetric_fences().
std::atomic<bool> g_sleepers_membarrier{false};

long membarrier(int cmd) noexcept {
  return ::syscall(SYS_membarrier, cmd, 0U, 0);
}

}  // namespace

void mark_runtime_thread() noexcept {
  t_runtime_thread = true;
}

bool enable_asymmetric_fences() noexcept {
  static const bool enabled = [] {
    const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    if (cmds < 0 || (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0) return false;
    // Sleepers of this process can force barriers on registered processes from now on.
    g_sleepers_membarrier.store(true, std::memory_order_relaxed);
    if ((cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0 ||
        membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) != 0) {
      return false;
    }
    g_wakers_skip_fence.store(true, std::memory_order_relaxed);
    return true;
  }();
  return enabled;
}

void sleeper_fence() noexcept {
  // A failed membarrier (it should not fail once the query said yes) leaves the fence: a
  // wake missed then costs one sleep step.
  if (g_sleepers_membarrier.load(std::memory_order_relaxed) &&
      membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0) {
    return;
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void doorbell::ring() noexcept {
  seq_.fetch_add(1, std::memory_order_release);
  // Not FUTEX_PRIVATE: the word may live in memory shared between processes.
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&seq_), FUTEX_WAKE, INT_MAX, nullptr,
            nullptr, 0);
}

void doorbell::sleep(std::uint32_t seen, std::int64_t timeout_ns) noexcept {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(timeout_ns % 1'000'000'000);
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&seq_), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

backoff::backoff() noexcept : bell_(&default_bell()), policy_(runtime_policy()) {}
backoff::backoff(doorbell& bell) noexcept : bell_(&bell), policy_(runtime_policy()) {}
backoff::backoff(doorbell& bell, const wait_policy& policy) noexcept
    : bell_(&bell), policy_(policy) {}

void backoff::escalate() noexcept {
  const std::int64_t now = now_ns();
  // The clock starts at the first look (after 64 pauses): most waits end before that and
  // never read it (a clock read costs about a fifth of a fence's barrier).
  if (start_ns_ == 0) start_ns_ = now;
  const std::int64_t waited = now - start_ns_;
  if (phase_ == phase::spin && waited >= policy_.spin_ns) phase_ = phase::yield;
  if (phase_ == phase::yield && waited >= policy_.spin_ns + policy_.yield_ns) {
    phase_ = phase::sleep;
    sleep_ns_ = std::min(first_sleep_ns, policy_.sleep_max_ns);
  }
}

void backoff::pause() noexcept {
  ++steps_;
  // No spinning at all (the default when ranks outnumber cores): the core belongs to whoever
  // this wait is waiting for, so yield from the first pause.
  if (phase_ == phase::spin && policy_.spin_ns <= 0) {
    phase_ = phase::yield;
    start_ns_ = now_ns();
  }
  switch (phase_) {
    case phase::spin:
      cpu_relax();
      // Reading the clock costs about as much as a few pauses: look at it now and then.
      if ((steps_ & 63U) == 0) {
        escalate();
        poll_progress();
      }
      break;
    case phase::yield:
      ::sched_yield();
      escalate();
      poll_progress();
      break;
    case phase::sleep:
      register_sleeper();
      sleep_step(bell_->sequence());
      break;
  }
}

void backoff::sleep_step(std::uint32_t seen) noexcept {
  poll_progress();
  bell_->sleep(seen, sleep_ns_);
  sleep_ns_ = std::min(sleep_ns_ * 2, policy_.sleep_max_ns);
}

}  // namespace oneside::detail

namespace oneside {
namespace {

void check_wake_target(const detail::context& c, rank_t rank) {
  ONESIDE_CHECK(rank >= 0 && rank < c.world.size(), error_class::rank,
                error_context{.call = "wake", .target = rank},
                "rank " + std::to_string(rank) + " is not a rank of the job (0 to " +
                    std::to_string(c.world.size() - 1) + ")");
}

}  // namespace

void wake(rank_t rank) {
  detail::context& c = detail::require_context("wake");
  check_wake_target(c, rank);
  c.transport->wake(rank);
}

void wake(std::span<const rank_t> ranks) {
  detail::context& c = detail::require_context("wake");
  for (rank_t r : ranks) check_wake_target(c, r);
  c.transport->wake(ranks);
}

}  // namespace oneside
