// The one way to wait (STYLE.md R8). Every wait in oneside goes through wait_until or
// backoff: spin briefly, then yield the CPU, then sleep on this process's doorbell, a futex
// in shared memory that peers ring when they change something a waiter may need. Jobs stay
// correct and fast when ranks outnumber cores. A wait made where something else could run
// instead is handed to the thread's wait host (wait_host below): inside a fiber it suspends
// the fiber and runs another (runtime/fiber/), inside a task of the rank's arena it suspends
// the task and frees its worker (runtime/task/). For programs: oneside::wait_until, and
// oneside::wake for the rank that changed what another rank waits for.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include <oneside/runtime/types.hpp>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace oneside::detail {

// ThreadSanitizer sees one process, but ranks synchronize through others: a thread here
// releases (rings a peer, publishes a flag), peers observe and answer, and another thread
// here acquires (a wait ends, the agent takes a message). Waits and wake-ups are where that
// happens, so in TSan builds they release and acquire one process-wide token; elsewhere these
// are empty.
#if defined(__SANITIZE_THREAD__)
inline char cross_process_token;
inline void cross_process_release() noexcept {
  __tsan_release(&cross_process_token);
}
inline void cross_process_acquire() noexcept {
  __tsan_acquire(&cross_process_token);
}
#else
inline void cross_process_release() noexcept {}
inline void cross_process_acquire() noexcept {}
#endif
// Both: for synchronization calls that publish what this thread did and take what others did.
inline void cross_process_sync() noexcept {
  cross_process_release();
  cross_process_acquire();
}

// Wakers and sleepers must not both miss each other: a waker changes something, then reads
// the sleeper count; a sleeper raises the count, then checks the change. Each side needs a
// full barrier between its write and its read. The waker's side is the hot one (every put to
// a node peer rings), so when the kernel offers membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)
// and this process registered for it, wakers skip their fence and the sleeper, about to
// sleep anyway, forces a barrier on every running thread of the job's registered processes
// instead (an asymmetric fence: Linux's membarrier(2), as liburcu and folly use it). A wake
// missed anyway (a process that could not register) delays its sleeper by at most one sleep
// step (ONESIDE_WAIT_SLEEP_MAX_US), never longer.
//
// Registers this process (once; the runtime's open calls it) and returns whether wakers here
// may skip their fence.
bool enable_asymmetric_fences() noexcept;
// Set by enable_asymmetric_fences(); read by every notify().
inline std::atomic<bool> g_wakers_skip_fence{false};
// The waker's barrier between its change and its reading of the sleeper count.
inline void waker_fence() noexcept {
  if (g_wakers_skip_fence.load(std::memory_order_relaxed)) {
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the compiler's order only
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}
// The sleeper's barrier after raising the count: membarrier when the kernel has it, else a
// fence (wait.cpp).
void sleeper_fence() noexcept;

// A futex word plus a count of sleepers, living where every waker can reach it.
class doorbell {
 public:
  // Wakes every sleeper. Cost when nobody sleeps: one load (after the caller's fence).
  void ring() noexcept;
  // Sleeps while the sequence still equals `seen`, at most `timeout_ns`.
  void sleep(std::uint32_t seen, std::int64_t timeout_ns) noexcept;
  std::uint32_t sequence() const noexcept { return seq_.load(std::memory_order_acquire); }
  // Registers a sleeper, then the sleeper's barrier (see sleeper_fence): the sleeper checks
  // its condition after this. The barrier also lets notify_after_rmw() skip its fence.
  void add_sleeper() noexcept {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    sleeper_fence();
  }
  void remove_sleeper() noexcept { sleepers_.fetch_sub(1, std::memory_order_relaxed); }
  bool has_sleepers() const noexcept { return sleepers_.load(std::memory_order_relaxed) != 0; }
  // The same read as a sequentially consistent load (notify_after_rmw).
  bool has_sleepers_seq_cst() const noexcept {
    return sleepers_.load(std::memory_order_seq_cst) != 0;
  }

 private:
  std::atomic<std::uint32_t> seq_{0};
  std::atomic<std::uint32_t> sleepers_{0};
};
static_assert(sizeof(doorbell) == 8);

// A waker's half of the protocol: after making a change a waiter may need, call
// notify(bell) (the waker's fence, then a ring only when somebody sleeps).
inline void notify(doorbell& bell) noexcept {
  cross_process_release();
  waker_fence();
  if (bell.has_sleepers()) bell.ring();
}

// notify() for a change made by a sequentially consistent atomic read-modify-write (an
// atomic add, exchange, compare-exchange that wrote): the read-modify-write and the sleepers'
// fence (doorbell::add_sleeper) order it against the sleeper, so no fence is needed here.
inline void notify_after_rmw(doorbell& bell) noexcept {
  cross_process_release();
  if (bell.has_sleepers_seq_cst()) bell.ring();
}

// Marks the calling thread as one of the runtime's own (a transport's agent): its waits never
// run the transport's progress (ONESIDE_AGENT=poll, the MPI transport), which is the rank's
// threads' and the progress thread's business. An agent polling MPI from its waits spun on
// the engine's lock beside the rank's one-sided calls.
void mark_runtime_thread() noexcept;

// What a blocked thread waits for, for hang diagnosis (ONESIDE_HANG_TIMEOUT, oneside-run
// --dump). Blocking calls open a wait_scope naming the call, its target and the object it works
// on; a thread that has waited a second or more in one wait describes its open scopes
// (innermost first) to whoever watches the job. `describe` appends the object's state (a
// window's epoch and outstanding operations, a team's collective) as it concerns `target` to
// `out`; it runs on the waiting thread, so it may read what that thread owns. Cost on the fast
// path: two thread-local stores; nothing is formatted unless a wait lasts.
struct wait_site {
  const char* call;  // "window::flush", "barrier", …
  void (*describe)(const void* object, rank_t target, std::string& out) noexcept;  // or null
  const void* object;
  rank_t target;  // or -1
  const wait_site* outer;
};

class wait_scope {
 public:
  explicit wait_scope(const char* call, rank_t target = -1,
                      void (*describe)(const void*, rank_t, std::string&) noexcept = nullptr,
                      const void* object = nullptr) noexcept
      : site_{call, describe, object, target, innermost_} {
    innermost_ = &site_;
  }
  ~wait_scope() { innermost_ = site_.outer; }
  wait_scope(const wait_scope&) = delete;
  wait_scope& operator=(const wait_scope&) = delete;

  // The calling thread's innermost open scope, or null.
  static const wait_site* innermost() noexcept { return innermost_; }
  // Installs `scopes` as the thread's chain and returns the chain it replaces: what a context
  // switch does (a fiber or a suspended task takes its open scopes along).
  static const wait_site* exchange(const wait_site* scopes) noexcept {
    const wait_site* old = innermost_;
    innermost_ = scopes;
    return old;
  }

 private:
  wait_site site_;
  // Initial-exec: one thread-pointer-relative load, not a call to __tls_get_addr per access
  // (the runtime is linked into programs, not loaded with dlopen; one pointer of static TLS).
  static inline thread_local const wait_site* innermost_ [[gnu::tls_model("initial-exec")]] =
      nullptr;
};

// How long each phase of a wait lasts.
struct wait_policy {
  std::int64_t spin_ns;
  std::int64_t yield_ns;
  std::int64_t sleep_max_ns;  // longest single sleep; sleeps start at 50 µs and double
};

// Escalating pause. Phase lengths come from ONESIDE_WAIT_SPIN_NS, ONESIDE_WAIT_YIELD_NS and
// ONESIDE_WAIT_SLEEP_MAX_US (spinning is shortened automatically when ranks outnumber cores),
// or from an explicit policy (the agent thread has its own).
class backoff {
 public:
  enum class phase : std::uint8_t { spin, yield, sleep };

  // Waits on this process's doorbell (or `bell`) with the runtime's policy (or `policy`).
  backoff() noexcept;
  explicit backoff(doorbell& bell) noexcept;
  backoff(doorbell& bell, const wait_policy& policy) noexcept;
  // A waiter that slept stays a registered sleeper until its wait ends (here).
  ~backoff() {
    if (registered_) bell_->remove_sleeper();
    if (watched_) end_watch();
  }
  backoff(const backoff&) = delete;
  backoff& operator=(const backoff&) = delete;

  // One step: a CPU pause, a yield or a bounded sleep, depending on how long this waiter
  // has waited. In poll mode (ONESIDE_AGENT=poll) it also runs the transport's progress.
  void pause() noexcept;
  phase current_phase() const noexcept { return phase_; }

  // The sleep step with the waiter's half of the protocol: registers as a sleeper (the
  // first time: it stays registered for the rest of the wait, so the sleeper's barrier, a
  // membarrier that interrupts every CPU running a rank, is paid once per wait and not once
  // per sleep), re-checks `done` and only then sleeps, so a notify() in between is never lost.
  template <class Pred>
  bool sleep_unless(Pred& done) noexcept {
    register_sleeper();
    const std::uint32_t seen = bell_->sequence();
    if (done()) return true;
    sleep_step(seen);
    return false;
  }

 private:
  void register_sleeper() noexcept {
    if (registered_) return;
    bell_->add_sleeper();
    registered_ = true;
  }
  void sleep_step(std::uint32_t seen) noexcept;
  void escalate() noexcept;
  // A wait that sleeps is watched: counted as waiting, described once it lasts (wait.cpp).
  void watch_step() noexcept;
  void end_watch() noexcept;
  doorbell* bell_;
  bool registered_ = false;
  bool watched_ = false;
  struct wait_record* record_ = nullptr;  // the record it counts itself in
  int slot_ = -1;                         // the description slot this thread holds, or -1
  int idle_index_ = -1;                   // its entry among the threads that do not compute, or -1
  std::int64_t described_ns_ = 0;         // when it last described its wait
  wait_policy policy_;
  phase phase_ = phase::spin;
  std::uint32_t steps_ = 0;
  std::int64_t start_ns_ = 0;
  std::int64_t sleep_ns_ = 0;
};

// The waiter's loop: escalate until the sleep phase, then sleep only after re-checking.
template <class Pred>
void wait_with(backoff& b, Pred& done) noexcept(noexcept(done())) {
  while (!done()) {
    if (b.current_phase() != backoff::phase::sleep) {
      b.pause();
    } else if (b.sleep_unless(done)) {
      break;
    }
  }
  cross_process_acquire();
}

// A wait handed to a wait host: its predicate, type-erased, and where it would sleep.
struct wait_request {
  bool (*test)(void* pred);  // calls the predicate; may throw what it throws
  void* pred;
  doorbell* bell;             // null: the process's doorbell
  const wait_policy* policy;  // null: the runtime's phase lengths
};

// What runs a thread's waits when something else could run meanwhile: the fiber scheduler of a
// thread that has fibers (the waiting fiber is suspended, the others run) and the rank's task
// arena inside one of its tasks (the task is suspended, its worker runs other tasks). wait()
// returns once the request's test returned true; the test ran on this thread or on another
// (a test that returned true is not called again), and what it threw is rethrown here.
class wait_host {
 public:
  virtual void wait(const wait_request& request) = 0;

 protected:
  ~wait_host() = default;
};

// The calling thread's host, or null: the thread itself waits (spin, yield, sleep). Set by
// runtime/fiber and runtime/task only. Read once per wait that does not end at its first look.
inline thread_local wait_host* t_wait_host [[gnu::tls_model("initial-exec")]] = nullptr;

// The fiber running on this thread, or null in a thread's own code (or a task's): set at every
// switch and when a task with fibers moves to another thread (runtime/fiber/). in_fiber() is
// the inline query of hot paths that behave differently in a fiber.
class fiber_record;
inline thread_local fiber_record* t_running_fiber [[gnu::tls_model("initial-exec")]] = nullptr;
inline bool in_fiber() noexcept {
  return t_running_fiber != nullptr;
}

// The process's doorbell (the transport's while the runtime is open) and the runtime's phase
// lengths: what a request without its own uses.
doorbell& process_doorbell() noexcept;
wait_policy runtime_wait_policy() noexcept;

// Waits for `request` on the calling thread (spin, yield, sleep): what a host does when it
// cannot suspend the caller. Rethrows what the test throws.
void wait_in_place(const wait_request& request);

// Hands the wait to `host` (the slow path of wait_until).
template <class Pred>
void hosted_wait(wait_host& host, doorbell* bell, const wait_policy* policy, Pred& done) {
  const wait_request request{[](void* p) -> bool { return (*static_cast<Pred*>(p))(); },
                             const_cast<void*>(static_cast<const void*>(&done)), bell, policy};
  host.wait(request);
  cross_process_acquire();
}

// Returns once done() is true. done() must be cheap and may be called many times, also from
// another thread while the caller is suspended (a fiber's or a task's wait, see wait_host);
// once it returned true it is not called again.
template <class Pred>
void wait_until(Pred&& done) noexcept(noexcept(done())) {
  if (done()) {
    cross_process_acquire();
    return;
  }
  if (wait_host* h = t_wait_host; h != nullptr) return hosted_wait(*h, nullptr, nullptr, done);
  backoff b;
  wait_with(b, done);
}

// The same, sleeping on `bell` (and with `policy`'s phase lengths).
template <class Pred>
void wait_until(doorbell& bell, Pred&& done) noexcept(noexcept(done())) {
  if (done()) {
    cross_process_acquire();
    return;
  }
  if (wait_host* h = t_wait_host; h != nullptr) return hosted_wait(*h, &bell, nullptr, done);
  backoff b(bell);
  wait_with(b, done);
}

template <class Pred>
void wait_until(doorbell& bell, const wait_policy& policy, Pred&& done) noexcept(noexcept(done())) {
  if (done()) {
    cross_process_acquire();
    return;
  }
  if (wait_host* h = t_wait_host; h != nullptr) return hosted_wait(*h, &bell, &policy, done);
  backoff b(bell, policy);
  wait_with(b, done);
}

// Returns once done() is true, where poll() is what brings it about (a flush that completes
// the caller's operation along with every other issued before it). In a fiber the fiber is
// suspended first and poll() runs when the thread's scheduler polls its waiters (when no
// fiber is ready, or once per round of the thread's fibers), so that the thread's other fibers
// issue their operations before and one poll serves them all (Grappa's latency hiding). Elsewhere
// poll() runs at once (a task keeps its worker for a poll rather than being suspended around
// it), and again at each look while done() is false; poll() never runs once done() is true.
// What poll() or done() throws is rethrown.
template <class Poll, class Pred>
void wait_polling(Poll&& poll, Pred&& done) {
  if (done()) {
    cross_process_acquire();
    return;
  }
  auto polled = [&poll, &done] {
    if (done()) return true;  // an earlier poll (another waiter's) brought it about
    poll();
    return done();
  };
  if (wait_host* h = t_wait_host; h != nullptr && in_fiber()) {
    return hosted_wait(*h, nullptr, nullptr, polled);
  }
  wait_until(polled);
}

}  // namespace oneside::detail

namespace oneside {

// For programs that poll their own memory (a flag a peer writes): returns once done() is
// true, waiting the way oneside does (spin, yield, sleep). A peer that changes the memory
// should call oneside::wake(rank) so a sleeping waiter notices at once.
using detail::wait_until;

// Wakes the threads of world rank `rank` sleeping in oneside::wait_until (or in any other
// oneside wait) so that they look again at what they wait for. Cheap when none sleeps: on the
// same node a memory fence and one load; a rank on another node is sent an empty message.
// Call it after changing memory that a thread of `rank` waits on, once the change is visible
// there (a put completed by flush or unlock): a waiter woken earlier looks, finds nothing new
// and sleeps again, and then notices the change only when that sleep ends, up to
// ONESIDE_WAIT_SLEEP_MAX_US later. The pgas layer's put-with-signal, single-value puts and
// atomics wake their target themselves; rma puts and the transfers of spans do not.
// Not collective; any thread may call it, concurrently.
// Errors: not_open (no runtime is open), rank (`rank` is not a rank of the world; nothing is
// woken).
void wake(rank_t rank);

// wake() for several world ranks at once, with one memory fence for all; an empty span wakes
// nobody. Errors as wake(rank): every rank is checked before any is woken.
void wake(std::span<const rank_t> ranks);

}  // namespace oneside
