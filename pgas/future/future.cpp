// The compiled half of futures and promises: readiness, continuation lists, waiting and
// waking, the promise's dependency count, and the registry of pending polled states that
// progress() drives.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <mutex>
#include <string>
#include <utility>

#include <oneside/pgas/future.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/wait.hpp>

#include "context/pgas_context.hpp"
#include "future/deferred.hpp"
#include "pgas/spin_lock.hpp"
#include "runtime/check.hpp"
#include "runtime/task_locals.hpp"
#include "runtime/transport.hpp"

namespace oneside {
namespace pgas::detail {
namespace {

using oneside::detail::doorbell;

// The value of a state's list once the state is ready: later continuations run at once.
class closed_marker final : public continuation {
  void run(state_base&) noexcept override {}
};
closed_marker g_closed;
continuation* closed() noexcept {
  return &g_closed;
}

// What waits sleep on and what publish() rings. While the runtime is open that is the
// process's doorbell (the transport's, which peers and the agent ring too, so a wait whose
// poller needs a transport event wakes for it). Without a runtime the waiting primitive
// would sleep on a private bell nobody rings; futures have this one instead.
doorbell g_future_bell;

doorbell& wait_bell() noexcept {
  if (transport::backend* t = transport::current_if_open(); t != nullptr) {
    return t->local_doorbell();
  }
  return g_future_bell;
}

// Rings both: a waiter that began before the runtime opened sleeps on the futures' bell.
void wake_waiters() noexcept {
  oneside::detail::notify(g_future_bell);
  if (transport::backend* t = transport::current_if_open(); t != nullptr) {
    oneside::detail::notify(t->local_doorbell());
  }
}

// What this thread deferred (state.hpp, continuation_frames): lists of continuations of
// states readied inside a continuation, and then() steps too deep to run inline. They wait
// here until the outermost frame closes, so that a chain of any length takes bounded stack
// instead of one frame per link. A thread that ends runs what it still holds.
struct deferred_list {
  std::shared_ptr<state_base> keep;
  state_base* ready;
  continuation* list;
};
struct deferred_lists {
  std::vector<deferred_list> lists;
  ~deferred_lists() { run_deferred(); }
};
thread_local deferred_lists t_deferred;

// Out of line and opaque to the optimizer: a continuation run between two uses may suspend its
// task, which may go on on another thread (runtime/task_locals.hpp), so no thread's list may
// be held across one.
[[gnu::noipa]] std::vector<deferred_list>& this_thread_lists() noexcept {
  return t_deferred.lists;
}

// Continuations of states destroyed without becoming ready, freed by the outermost
// destructor (plain pointers: a state may be destroyed after thread-local objects are).
thread_local continuation* t_unrun = nullptr;
thread_local bool t_freeing = false;

// Lists deferred inside operation calls (handing_off_frame, deferred.hpp), for any thread's
// progress() to run.
struct handed_off_lists {
  spin_lock lock;
  std::vector<deferred_list> lists;
  std::atomic<bool> any{false};
};

handed_off_lists& handed_off() noexcept {
  static handed_off_lists h;
  return h;
}

// Moves lists[from...] to the hand-off list and wakes sleeping waiters (a thread asleep in a
// wait runs them in its next progress()).
void hand_off(std::vector<deferred_list>& lists, std::size_t from) noexcept {
  handed_off_lists& h = handed_off();
  {
    const std::lock_guard<spin_lock> hold(h.lock);
    h.lists.insert(h.lists.end(),
                   std::make_move_iterator(lists.begin() + static_cast<std::ptrdiff_t>(from)),
                   std::make_move_iterator(lists.end()));
    h.any.store(true, std::memory_order_release);
  }
  lists.resize(from);
  wake_waiters();
}

// The frames of a task suspended inside continuations: their depth and what they deferred.
// They belong to the task's stack, which runtime/task moves to the thread that resumes it; the
// thread it leaves gets its own back (else its depth would stay raised, what it defers later
// would wait for a frame that closes elsewhere, and the other thread's depth would go below
// zero). What was deferred outside any frame (left by a progress() that suspended its task)
// belongs to no stack: it goes to any thread's progress(), as what operation calls defer.
struct carried_frames {
  int depth;
  std::vector<deferred_list> lists;
};

void* exchange_frames(void* next) noexcept {
  if (t_frames.depth == 0 && !t_frames.has_deferred && next == nullptr) return nullptr;
  std::vector<deferred_list>& lists = t_deferred.lists;
  carried_frames* out = nullptr;
  if (t_frames.depth > 0) {
    out = new carried_frames{t_frames.depth, std::move(lists)};
    lists.clear();
  } else if (!lists.empty()) {
    hand_off(lists, 0);
  }
  t_frames.depth = 0;
  t_frames.has_deferred = false;
  if (next != nullptr) {
    const std::unique_ptr<carried_frames> in(static_cast<carried_frames*>(next));
    t_frames.depth = in->depth;
    lists = std::move(in->lists);
    t_frames.has_deferred = !lists.empty();
  }
  return out;
}

[[maybe_unused]] const bool g_frames_carried =
    (oneside::detail::set_task_locals(&exchange_frames), true);

void run_handed_off() noexcept {
  handed_off_lists& h = handed_off();
  if (!h.any.load(std::memory_order_acquire)) return;
  std::vector<deferred_list> taken;
  {
    const std::lock_guard<spin_lock> hold(h.lock);
    taken.swap(h.lists);
    h.any.store(false, std::memory_order_relaxed);
  }
  for (deferred_list& d : taken) state_base::run_list(*d.ready, d.list);
}

// Pending polled states, process-wide. STYLE.md R7 keeps globals in the runtime's context,
// but futures exist without a runtime (before it opens, after it closes), so the registry
// cannot live there. progress() takes the whole list, polls it without the lock (pollers
// and continuations may start operations, add states or call progress() again) and puts
// back what is still pending.
struct pending_registry {
  spin_lock lock;
  std::vector<std::shared_ptr<state_base>> states;
  std::atomic<std::size_t> count{0};  // states.size(), read without the lock
};

pending_registry& registry() noexcept {
  static pending_registry r;
  return r;
}

}  // namespace

state_base::~state_base() {
  continuation* list = continuations_.load(std::memory_order_acquire);
  if (list == nullptr || list == closed()) return;
  // Never ready: the continuations never run. Freeing one may free the state it would have
  // readied, and so on down a chain; like publish(), that goes in a loop, not in recursion.
  continuation* last = list;
  while (last->next_ != nullptr) last = last->next_;
  last->next_ = t_unrun;
  t_unrun = list;
  if (t_freeing) return;
  t_freeing = true;
  while (t_unrun != nullptr) {
    const std::unique_ptr<continuation> node(t_unrun);
    t_unrun = node->next_;
  }
  t_freeing = false;
}

void state_base::rethrow_if_failed() const {
  if (error_ != nullptr) std::rethrow_exception(error_);
}

bool state_base::poll() noexcept {
  if (is_ready()) return true;
  if (completer_ != completer::poller) return false;
  if (polling_.exchange(true, std::memory_order_acquire)) return false;  // another thread polls
  // The state may have completed between the first look and taking the flag.
  const bool done = is_ready() || poll_once();
  if (done && !is_ready()) publish();
  polling_.store(false, std::memory_order_release);
  return done;
}

void state_base::wait() noexcept {
  if (poll()) return;
  // Announce the waiter before looking again; publish() stores ready, then looks at
  // waiters_ (both sequentially consistent), so one of the two sees the other.
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  const oneside::detail::wait_scope waiting("future::wait");
  oneside::detail::wait_until(wait_bell(), [this]() noexcept {
    if (status_.load(std::memory_order_seq_cst) == status_ready || poll()) return true;
    progress();
    return is_ready();
  });
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void state_base::add_continuation(std::unique_ptr<continuation> c) noexcept {
  continuation* head = continuations_.load(std::memory_order_acquire);
  while (head != closed()) {
    c->next_ = head;
    if (continuations_.compare_exchange_weak(head, c.get(), std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
      c.release();  // the list owns it now
      return;
    }
  }
  // Ready: the outcome is visible (acquire of the closed list). It runs as a continuation
  // frame, or deferred when this thread is too deep.
  if (!may_run_inline()) {
    defer(shared_from_this(), *this, std::move(c));
    return;
  }
  const inline_frame frame;
  c->run(*this);
}

bool state_base::claim() noexcept {
  std::uint8_t expected = status_pending;
  return status_.compare_exchange_strong(expected, status_completing, std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
}

void state_base::publish() noexcept {
  status_.store(status_ready, std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_seq_cst) != 0) wake_waiters();
  continuation* list = continuations_.exchange(closed(), std::memory_order_acq_rel);
  if (list == nullptr) return;
  if (t_frames.depth > 0) {
    t_deferred.lists.push_back({shared_from_this(), this, list});
    t_frames.has_deferred = true;
    return;
  }
  run_list(*this, list);
  run_deferred();
}

void state_base::run_list(state_base& ready, continuation* list) noexcept {
  continuation* oldest_first = nullptr;  // the list is a stack: newest first
  while (list != nullptr) {
    continuation* next = list->next_;
    list->next_ = oldest_first;
    oldest_first = list;
    list = next;
  }
  ++t_frames.depth;  // not an inline_frame: the caller runs what this defers
  while (oldest_first != nullptr) {
    std::unique_ptr<continuation> node(oldest_first);
    oldest_first = node->next_;
    node->run(ready);
  }
  --t_frames.depth;
}

void run_deferred() noexcept {
  for (;;) {
    std::vector<deferred_list>& lists = this_thread_lists();  // anew after each run_list
    if (lists.empty()) break;
    deferred_list d = std::move(lists.back());
    lists.pop_back();
    state_base::run_list(*d.ready, d.list);
  }
  t_frames.has_deferred = false;
}

handing_off_frame::handing_off_frame() noexcept : mark_(t_deferred.lists.size()) {
  ++t_frames.depth;
}

handing_off_frame::~handing_off_frame() {
  --t_frames.depth;
  std::vector<deferred_list>& lists = t_deferred.lists;
  if (lists.size() <= mark_) return;
  hand_off(lists, mark_);
  if (lists.empty()) t_frames.has_deferred = false;
}

void defer(std::shared_ptr<state_base> keep, state_base& ready,
           std::unique_ptr<continuation> c) noexcept {
  t_deferred.lists.push_back({std::move(keep), &ready, c.release()});
  t_frames.has_deferred = true;
}

void state_base::require(std::int64_t n) {
  ONESIDE_CHECK(n >= 0, error_class::arg, error_context{.call = "promise::require"},
                "negative count " + std::to_string(n));
  std::int64_t count = deps_.load(std::memory_order_relaxed);
  do {
    ONESIDE_CHECK(count > 0, error_class::arg, error_context{.call = "promise::require"},
                  "the promise is already ready (its dependency count reached zero)");
  } while (!deps_.compare_exchange_weak(count, count + n, std::memory_order_acq_rel,
                                        std::memory_order_relaxed));
}

void state_base::fulfill(std::int64_t n, std::string_view call) {
  ONESIDE_CHECK(n >= 0, error_class::arg, error_context{.call = call},
                "negative count " + std::to_string(n));
  std::int64_t count = deps_.load(std::memory_order_relaxed);
  do {
    ONESIDE_CHECK(count >= n, error_class::arg, error_context{.call = call},
                  "fulfilling " + std::to_string(n) + " would take the dependency count (" +
                      std::to_string(count) + ") below zero");
  } while (!deps_.compare_exchange_weak(count, count - n, std::memory_order_acq_rel,
                                        std::memory_order_relaxed));
  // acq_rel above: what every fulfiller did before fulfilling is visible to the waiters.
  if (n == 0 || count != n) return;
  if (!claim()) return;  // set_exception readied it already
  if (completer_ == completer::valued_promise &&
      value_status_.load(std::memory_order_acquire) != value_stored) {
    const std::string what = "the dependency count reached zero before set_value";
    error e(error_class::arg,
            oneside::detail::format_error(error_class::arg, error_context{.call = call}, what));
    store_exception(std::make_exception_ptr(e));
    publish();
    throw e;
  }
  publish();
}

void state_base::begin_value() {
  ONESIDE_CHECK(status_.load(std::memory_order_acquire) == status_pending, error_class::arg,
                error_context{.call = "promise::set_value"}, "the promise is already ready");
  std::uint8_t expected = value_none;
  ONESIDE_CHECK(value_status_.compare_exchange_strong(
                    expected, value_writing, std::memory_order_acquire, std::memory_order_relaxed),
                error_class::arg, error_context{.call = "promise::set_value"},
                "the promise already has its value");
}

void state_base::end_value(bool stored) noexcept {
  value_status_.store(stored ? value_stored : value_none, std::memory_order_release);
}

void state_base::fail(std::exception_ptr e) {
  ONESIDE_CHECK(e != nullptr, error_class::arg, error_context{.call = "promise::set_exception"},
                "null exception_ptr");
  ONESIDE_CHECK(claim(), error_class::arg, error_context{.call = "promise::set_exception"},
                "the promise is already ready");
  store_exception(std::move(e));
  publish();
}

void raise_invalid_future(std::string_view call) {
  oneside::detail::raise(error_class::arg, error_context{.call = call},
                         "the future has no state (a default-constructed future<T>)");
}

void raise_not_ready(std::string_view call) {
  oneside::detail::raise(error_class::arg, error_context{.call = call},
                         "the future is not ready (wait() waits for it)");
}

void raise_invalid_promise(std::string_view call) {
  oneside::detail::raise(error_class::arg, error_context{.call = call},
                         "the promise has no state (it was moved from)");
}

void raise_null_exception(std::string_view call) {
  oneside::detail::raise(error_class::arg, error_context{.call = call}, "null exception_ptr");
}

task_arena_ref async_arena() {
  (void)transport::current("async");  // error(not_open) naming the call
  return this_rank_arena();
}

void add_pending(std::shared_ptr<state_base> s) {
  pending_registry& r = registry();
  const std::lock_guard<spin_lock> hold(r.lock);
  r.states.push_back(std::move(s));
  r.count.store(r.states.size(), std::memory_order_release);
}

}  // namespace pgas::detail

void progress() noexcept {
  using pgas::detail::state_base;
  pgas::detail::run_deferred();    // continuations readied by the one this thread is in
  pgas::detail::run_handed_off();  // and those readied inside operation calls, on any thread
  // Remote operations with continuations waiting for them: their targets are flushed, which
  // readies those continuations' states (communication.cpp, ticket_state).
  if (pgas::detail::pgas_context* c = pgas::detail::get_context_if_open();
      c != nullptr && c->ops().has_waiters()) {
    try {
      c->ops().drive(c->transport());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "oneside: progress failed: %s\n", e.what());
      std::abort();
    }
  }
  pgas::detail::pending_registry& r = pgas::detail::registry();
  if (r.count.load(std::memory_order_acquire) == 0) return;
  std::vector<std::shared_ptr<state_base>> batch;
  {
    const std::lock_guard<pgas::detail::spin_lock> hold(r.lock);
    batch.swap(r.states);
    r.count.store(0, std::memory_order_relaxed);
  }
  std::erase_if(batch, [](const std::shared_ptr<state_base>& s) { return s->poll(); });
  if (!batch.empty()) {
    const std::lock_guard<pgas::detail::spin_lock> hold(r.lock);
    if (r.states.empty()) {
      r.states.swap(batch);
    } else {
      r.states.insert(r.states.end(), std::make_move_iterator(batch.begin()),
                      std::make_move_iterator(batch.end()));
    }
    r.count.store(r.states.size(), std::memory_order_release);
  }
  pgas::detail::run_deferred();
}

}  // namespace oneside
