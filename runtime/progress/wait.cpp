// The waiting primitive: doorbells (shared futex words) and the escalating backoff
// spin -> yield -> sleep, and oneside::wake, which rings other ranks' doorbells through the
// transport. See include/oneside/runtime/wait.hpp for the protocol.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <mutex>
#include <sched.h>
#include <span>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include <oneside/runtime/wait.hpp>

#include "context/context.hpp"
#include "progress/wait_watch.hpp"
#include "runtime/check.hpp"
#include "runtime/wait_context.hpp"

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

// ---- watching long waits (wait_watch.hpp) ----------------------------------------------------
// Process-wide, like the fallback doorbell: the record exists before any runtime (the
// bootstrap's own waits are watched too) and outlives it.

constexpr std::int64_t describe_after_ns = 1'000'000'000;  // a wait this long is described
constexpr std::int64_t describe_every_ns = 1'000'000'000;  // and described again this often
constexpr std::int64_t judge_every_ns = 200'000'000;       // how often quiet is judged

wait_record g_own_record;
std::atomic<wait_record*> g_record{&g_own_record};
std::atomic<bool> g_launcher_judges{false};
std::atomic<std::int64_t> g_hang_timeout_ns{0};

std::int32_t this_thread_id() noexcept {
  static thread_local const auto tid = static_cast<std::int32_t>(::gettid());
  return tid;
}

// Threads that do not compute for the program: the runtime's own (agent, MPI progress thread)
// and those in a long wait. Thread ids, 0 for a free entry; lock-free (waits add and remove
// themselves). A thread that finds the table full is simply not listed.
constexpr std::size_t max_idle_threads = 256;
std::atomic<std::int32_t> g_idle_threads[max_idle_threads];

int list_idle_thread(std::int32_t tid) noexcept {
  for (std::size_t i = 0; i < max_idle_threads; ++i) {
    std::int32_t free = 0;
    if (g_idle_threads[i].compare_exchange_strong(free, tid, std::memory_order_relaxed)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

void unlist_idle_thread(int index) noexcept {
  if (index >= 0) g_idle_threads[index].store(0, std::memory_order_relaxed);
}

bool is_idle_thread(std::int32_t tid) noexcept {
  for (const auto& t : g_idle_threads) {
    if (t.load(std::memory_order_relaxed) == tid) return true;
  }
  return false;
}

// A runtime thread stays listed until it exits.
struct runtime_thread_entry {
  int index = -1;
  ~runtime_thread_entry() { unlist_idle_thread(index); }
};
thread_local runtime_thread_entry t_runtime_entry;

// The scheduler state of thread `tid` of this process ('R' running or runnable, 'S' sleeping,
// 'D' in uninterruptible I/O, …), or 0 when it is gone.
char thread_state(const char* tid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');  // the name may hold spaces and parentheses
  return close_paren != nullptr && close_paren[1] == ' ' ? close_paren[2] : 0;
}

// Whether some thread of the program (not the runtime's, not one waiting in oneside, not the
// caller) computes now: runnable, or in uninterruptible I/O. A computing thread is runnable even
// while the machine is too busy to run it, which a measure of CPU time would miss.
bool program_computes() noexcept {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return false;
  bool computes = false;
  const std::int32_t self = this_thread_id();
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const auto tid = static_cast<std::int32_t>(std::atoi(e->d_name));
    if (tid == self || is_idle_thread(tid)) continue;
    const char state = thread_state(e->d_name);
    if (state == 'R' || state == 'D') {
      computes = true;
      break;
    }
  }
  ::closedir(dir);
  return computes;
}

// The judge of quiet: one waiting thread at a time looks at progress and the program's threads.
struct quiet_judge {
  std::atomic_flag busy;
  std::atomic<bool> restart{true};
  std::int64_t last_ns = 0;
  std::uint64_t last_progress = 0;
  std::int64_t quiet_from = 0;
};
quiet_judge g_judge;

void judge_quiet(wait_record& rec, std::int64_t now) noexcept {
  if (g_judge.busy.test_and_set(std::memory_order_acquire)) return;
  const std::uint64_t progress = rec.progress.load(std::memory_order_relaxed);
  if (g_judge.restart.exchange(false, std::memory_order_relaxed)) {
    g_judge.last_ns = now;
    g_judge.last_progress = progress;
    g_judge.quiet_from = now;
  } else if (now - g_judge.last_ns >= judge_every_ns) {
    if (progress != g_judge.last_progress || program_computes()) g_judge.quiet_from = now;
    g_judge.last_ns = now;
    g_judge.last_progress = progress;
    rec.quiet_since_ns.store(g_judge.quiet_from, std::memory_order_relaxed);
  }
  g_judge.busy.clear(std::memory_order_release);
}

// What the layers add to every description (wait_context.hpp).
std::mutex g_contexts_mutex;
std::vector<std::pair<wait_context_fn, const void*>> g_contexts;

// The text of this thread's open wait scopes, innermost first, one per line (an object is
// described once, in its innermost scope), then what the layers add.
std::string describe_scopes() {
  std::string text;
  const wait_site* s = wait_scope::innermost();
  if (s == nullptr) text = "a wait with no call recorded (oneside::wait_until, or inside oneside)";
  const void* described = nullptr;
  for (; s != nullptr; s = s->outer) {
    if (!text.empty()) text.append("\nin ");
    text.append(s->call);
    if (s->target >= 0) text.append(" (target ").append(std::to_string(s->target)).append(")");
    if (s->describe != nullptr && (s->object == nullptr || s->object != described)) {
      std::string state;
      s->describe(s->object, s->target, state);
      if (!state.empty()) text.append(": ").append(state);
      described = s->object;
    }
  }
  std::unique_lock lock(g_contexts_mutex, std::try_to_lock);
  if (lock.owns_lock()) {
    for (const auto& [fn, object] : g_contexts) {
      std::string more;
      fn(object, more);
      if (!more.empty()) text.append("\n").append(more);
    }
  }
  return text;
}

void write_slot(waiter_slot& slot, std::string_view text, std::int64_t since_ns) noexcept {
  const std::uint32_t seq = slot.seq.load(std::memory_order_relaxed);
  slot.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.since_ns.store(since_ns, std::memory_order_relaxed);
  const std::size_t n = std::min(text.size(), wait_text_bytes - 1);
  if (n > 0) std::memcpy(slot.text, text.data(), n);
  slot.text[n] = '\0';
  slot.seq.store(seq + 2, std::memory_order_release);
}

// A process that nobody watches (no launcher) and that has been quiet for the hang timeout:
// say what it waits for and end it (ONESIDE_HANG_TIMEOUT).
[[noreturn]] void end_hung_process(wait_record& rec, std::int64_t quiet_ns) noexcept {
  static std::atomic_flag reporting;
  if (reporting.test_and_set()) {
    for (;;) ::pause();  // another thread reports and exits
  }
  std::string out = "oneside: ";
  const rank_t rank = world_rank_if_open();
  if (rank >= 0) out.append("rank ").append(std::to_string(rank)).append(": ");
  out.append("no progress for ").append(std::to_string(quiet_ns / 1'000'000'000));
  out.append(" s (ONESIDE_HANG_TIMEOUT); ending the process with status ");
  out.append(std::to_string(hang_exit_status)).append(". Waiting:\n");
  out.append(describe_waits(rec, now_ns()));
  (void)!::write(STDERR_FILENO, out.data(), out.size());
  ::_exit(hang_exit_status);
}

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
  if (t_runtime_entry.index < 0) t_runtime_entry.index = list_idle_thread(this_thread_id());
}

void set_waits_watched(bool watched) noexcept {
  t_runtime_thread = !watched;
}

doorbell& process_doorbell() noexcept {
  return default_bell();
}

wait_policy runtime_wait_policy() noexcept {
  return runtime_policy();
}

void wait_in_place(const wait_request& request) {
  backoff b(request.bell != nullptr ? *request.bell : default_bell(),
            request.policy != nullptr ? *request.policy : runtime_policy());
  auto holds = [&request] { return request.test(request.pred); };
  wait_with(b, holds);
}

void set_wait_record(wait_record* record, bool launcher_judges) noexcept {
  g_record.store(record != nullptr ? record : &g_own_record, std::memory_order_release);
  g_launcher_judges.store(record != nullptr && launcher_judges, std::memory_order_relaxed);
}

bool retire_wait_record(wait_record& record, std::int64_t patience_ns) noexcept {
  wait_record* expected = &record;
  g_record.compare_exchange_strong(expected, &g_own_record, std::memory_order_seq_cst);
  g_launcher_judges.store(false, std::memory_order_relaxed);
  const std::int64_t until = now_ns() + patience_ns;
  backoff pause(g_fallback_bell, wait_policy{0, 1'000'000, 1'000'000});
  while (record.waiting.load(std::memory_order_seq_cst) != 0) {
    if (now_ns() >= until) return false;
    pause.pause();
  }
  return true;
}

void add_wait_context(wait_context_fn fn, const void* object) {
  std::lock_guard lock(g_contexts_mutex);
  g_contexts.emplace_back(fn, object);
}

void remove_wait_context(const void* object) noexcept {
  std::lock_guard lock(g_contexts_mutex);
  std::erase_if(g_contexts, [&](const auto& c) { return c.second == object; });
}

void set_hang_timeout(std::int64_t ns) noexcept {
  g_hang_timeout_ns.store(ns, std::memory_order_relaxed);
}

std::string describe_waits(const wait_record& rec, std::int64_t now) {
  std::string out;
  int described = 0;
  for (const waiter_slot& slot : rec.slots) {
    char text[wait_text_bytes];
    std::int32_t owner = 0;
    std::int64_t since = 0;
    if (!read_waiter(slot, text, owner, since)) continue;
    ++described;
    char head[96];
    std::snprintf(head, sizeof head, "  thread %d, waiting %.1f s: ", static_cast<int>(owner),
                  static_cast<double>(now - since) / 1e9);
    out.append(head);
    for (const char* c = text; *c != '\0'; ++c) {
      out.push_back(*c);
      if (*c == '\n') out.append("    ");
    }
    out.push_back('\n');
  }
  const auto waiting = static_cast<int>(rec.waiting.load(std::memory_order_relaxed));
  if (waiting > described) {
    out.append("  ").append(std::to_string(waiting - described));
    out.append(described > 0 ? " more" : "")
        .append(waiting - described == 1 ? " thread" : " threads");
    out.append(" waiting, not described (waiting under a second, or more than ");
    out.append(std::to_string(wait_record_threads)).append(" threads wait)\n");
  }
  return out;
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
  if (!t_runtime_thread) watch_step();
  bell_->sleep(seen, sleep_ns_);
  sleep_ns_ = std::min(sleep_ns_ * 2, policy_.sleep_max_ns);
}

void backoff::watch_step() noexcept {
  const std::int64_t now = now_ns();
  if (start_ns_ == 0) start_ns_ = now;
  if (!watched_) {
    // Counted in the record it loaded while that record is still the current one (see
    // retire_wait_record).
    for (;;) {
      wait_record* rec = g_record.load(std::memory_order_acquire);
      rec->waiting.fetch_add(1, std::memory_order_seq_cst);
      if (g_record.load(std::memory_order_seq_cst) == rec) {
        record_ = rec;
        break;
      }
      rec->waiting.fetch_sub(1, std::memory_order_relaxed);
    }
    watched_ = true;
    idle_index_ = list_idle_thread(this_thread_id());
  }
  wait_record& rec = *record_;
  if (now - start_ns_ >= describe_after_ns && now - described_ns_ >= describe_every_ns) {
    described_ns_ = now;
    if (slot_ < 0) {
      for (int i = 0; i < wait_record_threads; ++i) {
        std::int32_t free = 0;
        if (rec.slots[i].owner.compare_exchange_strong(free, this_thread_id(),
                                                       std::memory_order_relaxed)) {
          slot_ = i;
          break;
        }
      }
    }
    if (slot_ >= 0) {
      try {
        write_slot(rec.slots[slot_], describe_scopes(), start_ns_);
      } catch (...) {
        // No memory for the text: the wait goes on undescribed.
      }
    }
  }
  judge_quiet(rec, now);
  const std::int64_t timeout = g_hang_timeout_ns.load(std::memory_order_relaxed);
  if (timeout > 0 && !g_launcher_judges.load(std::memory_order_relaxed)) {
    const std::int64_t quiet = rec.quiet_since_ns.load(std::memory_order_relaxed);
    if (quiet != 0 && now - quiet >= timeout && slot_ >= 0) end_hung_process(rec, now - quiet);
  }
}

void backoff::end_watch() noexcept {
  unlist_idle_thread(idle_index_);
  wait_record& rec = *record_;
  if (slot_ >= 0) {
    write_slot(rec.slots[slot_], {}, 0);
    rec.slots[slot_].owner.store(0, std::memory_order_release);
  }
  rec.progress.fetch_add(1, std::memory_order_relaxed);
  rec.quiet_since_ns.store(0, std::memory_order_relaxed);
  g_judge.restart.store(true, std::memory_order_relaxed);
  rec.waiting.fetch_sub(1, std::memory_order_relaxed);
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
