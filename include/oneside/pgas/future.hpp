// Futures and promises of the PGAS layer, after UPC++: a future<T> is a cheap copyable handle
// on a shared state that becomes ready once, with a T or with an exception; copies see the
// same state. A future ready from the start with a small trivially copyable value (16 bytes
// at most: rget of a value, the atomics, make_future) holds it in itself instead, without
// allocating a state; nothing else about it differs. promise<T> counts the operations a future
// waits for; then() chains work onto a future, when_all() joins futures, async() runs work on this
// rank's task arena, and progress() drives the operations that complete by being polled.
//
// Where continuations run: a continuation attached to a ready future runs at once, in then(),
// on the calling thread; otherwise it runs on the thread that makes the future ready (inside
// promise::fulfill/finalize/set_exception, progress(), wait() or is_ready(), or the arena
// thread of an async). A continuation that readies further futures does not nest their
// continuations: they run on the same thread right after it returns (or earlier, when it
// waits), so long chains need no deep stack.
//
// Thread-safety: any thread may wait on, poll, attach continuations to or complete any future
// and promise, concurrently; each continuation runs exactly once.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <oneside/runtime/task_arena.hpp>

namespace oneside {

template <class T = void>
class future;
template <class T = void>
class promise;

// Advances outstanding PGAS operations: polls every pending state (an operation's future
// that completes by being polled, see pgas::detail::make_pending_future), running the
// continuations of those that complete. Any thread may call it, also from a continuation;
// wait() calls it while it waits. Pending states are polled by one thread at a time.
void progress() noexcept;

namespace pgas::detail {

class state_base;

// Work attached to a state by then(), when_all() and the operations: runs exactly once, with
// the ready state it was attached to.
class continuation {
 public:
  continuation() = default;
  continuation(const continuation&) = delete;
  continuation& operator=(const continuation&) = delete;
  virtual ~continuation() = default;

  virtual void run(state_base& ready) noexcept = 0;

 private:
  friend class state_base;
  continuation* next_ = nullptr;  // the state's list of continuations
};

template <class Fn>
class continuation_of final : public continuation {
 public:
  explicit continuation_of(Fn fn) : fn_(std::move(fn)) {}
  void run(state_base& ready) noexcept override { fn_(ready); }

 private:
  Fn fn_;
};

// `fn` is called as fn(state_base& ready) and must not throw.
template <class Fn>
std::unique_ptr<continuation> make_continuation(Fn&& fn) {
  return std::make_unique<continuation_of<std::decay_t<Fn>>>(std::forward<Fn>(fn));
}

// Who completes a state; decides what poll() and the promise calls may do.
enum class completer : std::uint8_t {
  producer,       // one producer: store_exception()/emplace(), then publish()
  poller,         // poll_once() (make_pending_future), driven by poll() and progress()
  promise,        // a dependency count (promise<>)
  valued_promise  // a dependency count and set_value() (promise<T>)
};

// The untyped part of a future's shared state, compiled once in pgas/future/future.cpp.
// Lifecycle: pending -> (completing, promises only) -> ready; once ready it never changes.
// Always owned by shared_ptr (the deferred continuations keep their state alive).
class state_base : public std::enable_shared_from_this<state_base> {
 public:
  explicit state_base(completer c = completer::producer) noexcept : completer_(c) {}
  state_base(const state_base&) = delete;
  state_base& operator=(const state_base&) = delete;
  virtual ~state_base();

  bool is_ready() const noexcept { return status_.load(std::memory_order_acquire) == status_ready; }
  // One step towards readiness: polls once when pending with a poller. Returns is_ready().
  bool poll() noexcept;
  // Returns once ready, polling this state and running progress() meanwhile; sleeps on the
  // process's doorbell (detail::wait_until) and is woken by publish(). Does not rethrow.
  void wait() noexcept;
  // When ready: whether the state holds an exception rather than a value.
  bool has_failed() const noexcept { return error_ != nullptr; }
  const std::exception_ptr& exception() const noexcept { return error_; }
  void rethrow_if_failed() const;

  // Runs `c` now when the state is ready (on this thread), else when it becomes ready.
  void add_continuation(std::unique_ptr<continuation> c) noexcept;

  // The producer's side: store the outcome (store_exception(), or the value through
  // state<T>::emplace()), then publish() once. Stores happen before publish() only.
  void store_exception(std::exception_ptr e) noexcept { error_ = std::move(e); }
  // Makes the state ready: wakes its waiters, then runs its continuations (see the file
  // comment for where).
  void publish() noexcept;

  // The promise's side (thread-safe). Errors name `call`; all raise error(arg).
  void require(std::int64_t n);                         // the count is > 0, n >= 0
  void fulfill(std::int64_t n, std::string_view call);  // n >= 0, at most the count
  void begin_value();                                   // set_value: pending, first time
  void end_value(bool stored) noexcept;                 // after the value (or a throw)
  void fail(std::exception_ptr e);                      // set_exception: not yet ready

  // Runs a list taken off a ready state, oldest first, and frees it (future.cpp).
  static void run_list(state_base& ready, continuation* list) noexcept;

 protected:
  // A polled state's step (called by poll(), never concurrently, only while pending): true
  // when it completed, having stored its value or exception.
  virtual bool poll_once() noexcept { return false; }

 private:
  enum : std::uint8_t { status_pending, status_completing, status_ready };
  enum : std::uint8_t { value_none, value_writing, value_stored };
  bool claim() noexcept;  // pending -> completing; false when someone else completes it

  std::atomic<std::uint8_t> status_{status_pending};
  std::atomic<std::uint8_t> value_status_{value_none};  // promise<T>: where set_value is
  std::atomic<bool> polling_{false};
  const completer completer_;
  std::atomic<std::uint32_t> waiters_{0};  // threads inside wait(): publish() rings for them
  std::atomic<std::int64_t> deps_{1};      // promises: the dependency count
  std::atomic<continuation*> continuations_{nullptr};  // closed once ready
  std::exception_ptr error_;
};

// The typed state: the value lives here.
template <class T>
class state : public state_base {
 public:
  using state_base::state_base;

  template <class... A>
  void emplace(A&&... args) {
    value_.emplace(std::forward<A>(args)...);
  }
  // Only when ready and not failed.
  const T& value() const noexcept { return *value_; }

 private:
  std::optional<T> value_;
};

template <>
class state<void> : public state_base {
 public:
  using state_base::state_base;
};

// Raise error(arg) for a future<T> without a state, or a result() asked too early.
[[noreturn]] void raise_invalid_future(std::string_view call);
[[noreturn]] void raise_not_ready(std::string_view call);
[[noreturn]] void raise_invalid_promise(std::string_view call);
[[noreturn]] void raise_null_exception(std::string_view call);
// This rank's task arena for async(); error(not_open) naming "async" when none is open.
task_arena_ref async_arena();
// Adds a pending polled state to the process-wide registry that progress() polls.
void add_pending(std::shared_ptr<state_base> s);

// Values a ready future holds in itself, without a shared state: small trivially copyable
// ones (the results of rget and of the atomics). Such a future is ready from the start and
// never changes, so its copies need not share anything.
template <class T>
concept inline_value = !std::is_void_v<T> && std::is_trivially_copyable_v<T> &&
                       std::is_copy_constructible_v<T> && sizeof(T) <= 16;

// Where a future<T> keeps such a value: nothing for other types.
template <class T, bool = inline_value<T>>
struct ready_slot {
  static constexpr bool has_value() noexcept { return false; }
};
template <class T>
struct ready_slot<T, true> {
  ready_slot() noexcept : none() {}
  explicit ready_slot(const T& v) noexcept : value(v), has(true) {}
  bool has_value() const noexcept { return has; }

  union {
    char none;
    T value;
  };
  bool has = false;
};

struct ready_tag {};

// Builds and reads futures (their state is private to user code).
struct future_access {
  template <class T>
  static future<T> make(std::shared_ptr<state<T>> s) noexcept {
    return future<T>(std::move(s));
  }
  // A ready future holding v in itself (inline_value<T>).
  template <inline_value T>
  static future<T> make_ready(const T& v) noexcept {
    return future<T>(ready_tag{}, v);
  }
  // The future's shared state; a ready state holding the value for a future that keeps its
  // value in itself (made here: the joins and flattening attach continuations to states).
  // Null for a future<T> without either.
  template <class T>
  static std::shared_ptr<state<T>> state_of(const future<T>& f) {
    if constexpr (inline_value<T>) {
      if (f.ready_.has_value()) {
        auto s = std::make_shared<state<T>>();
        s->emplace(f.ready_.value);
        s->publish();
        return s;
      }
    }
    return f.state_;
  }
  // Whether the future has a state or a value of its own (every future<> has).
  template <class T>
  static bool is_valid(const future<T>& f) noexcept {
    return std::is_void_v<T> || f.ready_.has_value() || f.state_ != nullptr;
  }
};

template <class R>
inline constexpr bool is_future_v = false;
template <class U>
inline constexpr bool is_future_v<future<U>> = true;

// future<U> -> U (a continuation that returns a future is flattened), anything else as is.
template <class R>
struct flatten {
  using type = R;
};
template <class U>
struct flatten<future<U>> {
  using type = U;
};

// The value type of the future that then(fn)/async(fn) return for a call fn(args...).
template <class Fn, class... A>
using result_value_t = typename flatten<std::remove_cvref_t<std::invoke_result_t<Fn&, A...>>>::type;

// Whether then(fn) applies: fn(const T&), or fn() for future<>.
template <class Fn, class T>
struct can_then : std::is_invocable<Fn&, const T&> {};
template <class Fn>
struct can_then<Fn, void> : std::is_invocable<Fn&> {};
template <class Fn, class T>
concept continuation_for = can_then<std::decay_t<Fn>, T>::value;
// What async() runs: callable with no arguments (a decayed copy of it).
template <class Fn>
concept async_task = continuation_for<Fn, void>;
// A value set_value() accepts.
template <class V, class T>
concept value_for = !std::is_void_v<T> && std::constructible_from<T, V&&>;

template <class T, class Fn>
struct then_value {
  using type = result_value_t<Fn, const T&>;
};
template <class Fn>
struct then_value<void, Fn> {
  using type = result_value_t<Fn>;
};
template <class T, class Fn>
using then_value_t = typename then_value<T, Fn>::type;

// Copies the outcome of a ready state into an unready one (flattening, joins).
template <class U>
void copy_outcome(const state<U>& from, state<U>& to) noexcept {
  if (from.has_failed()) {
    to.store_exception(from.exception());
    return;
  }
  if constexpr (!std::is_void_v<U>) {
    try {
      to.emplace(from.value());
    } catch (...) {
      to.store_exception(std::current_exception());
    }
  }
}

// Completes `dst` (which only this call completes) with the outcome of fn(args...): its
// value, nothing (void), the outcome of the future it returns, or the exception it throws
// (error(arg) naming `call` for a returned future<T> without a state).
template <class R, class Fn, class... A>
void deliver(const std::shared_ptr<state<R>>& dst, std::string_view call, Fn& fn,
             A&&... args) noexcept {
  using out = std::remove_cvref_t<std::invoke_result_t<Fn&, A...>>;
  try {
    if constexpr (is_future_v<out>) {
      const out inner = std::invoke(fn, std::forward<A>(args)...);
      if (const std::shared_ptr<state<R>> s = future_access::state_of(inner)) {
        s->add_continuation(make_continuation([dst](state_base& ready) noexcept {
          copy_outcome(static_cast<const state<R>&>(ready), *dst);
          dst->publish();
        }));
        return;
      }
      if constexpr (!std::is_void_v<R>) raise_invalid_future(call);
    } else if constexpr (std::is_void_v<out>) {
      std::invoke(fn, std::forward<A>(args)...);
    } else {
      dst->emplace(std::invoke(fn, std::forward<A>(args)...));
    }
  } catch (...) {
    dst->store_exception(std::current_exception());
  }
  dst->publish();
}

// A then() step: the source's exception passes through, else fn runs on its value.
template <class T, class R, class Fn>
void settle(const state<T>* src, Fn& fn, const std::shared_ptr<state<R>>& dst) noexcept {
  if (src != nullptr && src->has_failed()) {
    dst->store_exception(src->exception());
    dst->publish();
  } else if constexpr (std::is_void_v<T>) {
    deliver(dst, "future::then", fn);
  } else {
    deliver(dst, "future::then", fn, src->value());
  }
}

// then(fn) on a future ready with a value (or on a ready future<>): runs fn(args...) now. A
// plain result small enough to live in a future (or none) makes a ready future without a
// shared state; anything else (a returned future, a larger value, an exception) goes through
// deliver() into a new state.
template <class R, class Fn, class... A>
future<R> run_now(Fn& fn, const A&... args) {
  using out = std::remove_cvref_t<std::invoke_result_t<Fn&, const A&...>>;
  if constexpr (!is_future_v<out> && (std::is_void_v<R> || inline_value<R>)) {
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(fn, args...);
        return future<R>();
      } else {
        return future_access::make_ready<R>(R(std::invoke(fn, args...)));
      }
    } catch (...) {
      auto failed = std::make_shared<state<R>>();
      failed->store_exception(std::current_exception());
      failed->publish();
      return future_access::make<R>(std::move(failed));
    }
  } else {
    auto dst = std::make_shared<state<R>>();
    deliver(dst, "future::then", fn, args...);
    return future_access::make<R>(std::move(dst));
  }
}

// A state an operation completes by being polled (see make_pending_future).
template <class T, class Poll>
class polled_state final : public state<T> {
 public:
  explicit polled_state(Poll poll) : state<T>(completer::poller), poll_(std::move(poll)) {}

 private:
  bool poll_once() noexcept override {
    try {
      if constexpr (std::is_void_v<T>) {
        if (!(*poll_)()) return false;
      } else {
        std::optional<T> v = (*poll_)();
        if (!v) return false;
        this->emplace(std::move(*v));
      }
    } catch (...) {
      this->store_exception(std::current_exception());
    }
    poll_.reset();  // an operation's resources go as soon as it completes
    return true;
  }

  std::optional<Poll> poll_;
};

template <class Poll>
struct polled_value;
template <>
struct polled_value<bool> {
  using type = void;
};
template <class T>
struct polled_value<std::optional<T>> {
  using type = T;
};

// For the operations (rput, rget, atomics): a future completed by polling. `poll` is called
// with no arguments and returns bool (future<>) or std::optional<T> (future<T>): false or
// nullopt means "not yet", true or a value completes the future, an exception fails it (wait()
// rethrows it). It is called once here, then, while pending, by is_ready(), wait() and
// progress(), from any thread but never concurrently, and never after it completed (it is
// destroyed then). Until it completes the state stays in the process-wide registry that
// progress() polls, so an operation completes even when its future is dropped.
// Operations completed by another thread (the agent, an active-message handler) use a
// promise instead: p.fulfill() or p.set_value(v) + p.finalize() there readies the future and
// wakes its waiters.
template <class Poll>
auto make_pending_future(Poll&& poll) {
  using P = std::decay_t<Poll>;
  using T = typename polled_value<std::remove_cvref_t<std::invoke_result_t<P&>>>::type;
  auto s = std::make_shared<polled_state<T, P>>(std::forward<Poll>(poll));
  if (!s->poll()) add_pending(s);
  return future_access::make<T>(std::move(s));
}

}  // namespace pgas::detail

// A handle on a value of type T (or just an event, T = void) that becomes ready once.
// future<> default-constructs ready; a default future<T> of a non-void T has no state and
// every call on it raises error(arg). Values are returned by copy (as UPC++ does): each copy
// of a future may ask for its result, so none can take it away.
template <class T>
class future {
  static_assert(std::is_void_v<T> || (std::is_object_v<T> && !std::is_array_v<T> &&
                                      std::is_same_v<T, std::remove_cv_t<T>>),
                "future<T>: T is void or a non-const object type");

 public:
  using value_type = T;

  future() noexcept = default;

  // True once the result is there; polls the operation once when it is not.
  bool is_ready() const {
    if (ready_.has_value()) return true;
    pgas::detail::state<T>* s = checked("future::is_ready");
    return s == nullptr || s->poll();
  }

  // Waits until ready, making progress (progress()) and then sleeping the one way
  // (detail::wait_until; woken when another thread readies the future). Returns a copy of
  // the value, or rethrows the exception the future failed with.
  T wait() const {
    if constexpr (pgas::detail::inline_value<T>) {
      if (ready_.has_value()) return ready_.value;
    }
    pgas::detail::state<T>* s = checked("future::wait");
    if constexpr (std::is_void_v<T>) {
      if (s == nullptr) return;
    }
    s->wait();
    return value_of(*s);
  }

  // The result of a ready future (rethrows its exception); error(arg) when not ready.
  T result() const {
    if constexpr (pgas::detail::inline_value<T>) {
      if (ready_.has_value()) return ready_.value;
    }
    pgas::detail::state<T>* s = checked("future::result");
    if constexpr (std::is_void_v<T>) {
      if (s == nullptr) return;
    }
    if (!s->poll()) pgas::detail::raise_not_ready("future::result");
    return value_of(*s);
  }

  // A future of fn(value) (fn() for future<>): fn runs once this future is ready, at once
  // when it already is (see the file comment for the thread). When fn returns a future<U>,
  // the result is future<U>, ready when that one is. An exception of this future skips fn
  // and passes on; an exception thrown by fn fails the returned future.
  template <pgas::detail::continuation_for<T> Fn>
  future<pgas::detail::then_value_t<T, std::decay_t<Fn>>> then(Fn&& fn) const {
    using R = pgas::detail::then_value_t<T, std::decay_t<Fn>>;
    if constexpr (pgas::detail::inline_value<T>) {
      if (ready_.has_value()) {
        std::decay_t<Fn> f(std::forward<Fn>(fn));
        return pgas::detail::run_now<R>(f, ready_.value);
      }
    }
    pgas::detail::state<T>* s = checked("future::then");
    if constexpr (std::is_void_v<T>) {
      if (s == nullptr) {
        std::decay_t<Fn> f(std::forward<Fn>(fn));
        return pgas::detail::run_now<R>(f);
      }
    }
    if (s->is_ready() && !s->has_failed()) {
      std::decay_t<Fn> f(std::forward<Fn>(fn));
      if constexpr (std::is_void_v<T>) {
        return pgas::detail::run_now<R>(f);
      } else {
        return pgas::detail::run_now<R>(f, s->value());
      }
    }
    auto dst = std::make_shared<pgas::detail::state<R>>();
    if (s->is_ready()) {
      std::decay_t<Fn> f(std::forward<Fn>(fn));
      pgas::detail::settle(s, f, dst);
    } else {
      s->add_continuation(
          pgas::detail::make_continuation([dst, f = std::decay_t<Fn>(std::forward<Fn>(fn))](
                                              pgas::detail::state_base& ready) mutable noexcept {
            pgas::detail::settle(static_cast<const pgas::detail::state<T>*>(&ready), f, dst);
          }));
    }
    return pgas::detail::future_access::make<R>(std::move(dst));
  }

 private:
  friend struct pgas::detail::future_access;
  explicit future(std::shared_ptr<pgas::detail::state<T>> s) noexcept : state_(std::move(s)) {}
  template <pgas::detail::inline_value U>
  future(pgas::detail::ready_tag, const U& v) noexcept : ready_(v) {}

  // The state, or null for a default future<> (ready); raises for a default future<T>.
  pgas::detail::state<T>* checked(std::string_view call) const {
    if constexpr (!std::is_void_v<T>) {
      if (state_ == nullptr) pgas::detail::raise_invalid_future(call);
    }
    return state_.get();
  }
  static T value_of(const pgas::detail::state<T>& s) {
    s.rethrow_if_failed();
    if constexpr (!std::is_void_v<T>) return s.value();
  }

  std::shared_ptr<pgas::detail::state<T>> state_;
  [[no_unique_address]] pgas::detail::ready_slot<T> ready_;  // a ready value held in place
};

// Counts what a future waits for (UPC++ semantics). A promise starts with one dependency;
// require(n) adds n, fulfill(n) removes n, finalize() removes the initial one and returns the
// future. The future is ready when the count reaches zero; a promise<T> of a non-void T must
// have its value (set_value) by then. Copies share the promise (a handle, like future), and
// every member may be called from several threads at once: each operation a promise counts
// may fulfill it from the thread where it completes. Continuations of the future run in the
// call that readies it. Errors: error(arg) for a negative n, fulfill below zero, require or
// set_value on a ready promise, set_value twice, and for the call that takes a promise<T>
// to zero without a value (its future then fails with that same error).
template <class T>
class promise {
 public:
  promise()
      : state_(std::make_shared<pgas::detail::state<T>>(
            std::is_void_v<T> ? pgas::detail::completer::promise
                              : pgas::detail::completer::valued_promise)) {}

  void require(std::int64_t n = 1) const { checked("promise::require").require(n); }
  void fulfill(std::int64_t n = 1) const {
    checked("promise::fulfill").fulfill(n, "promise::fulfill");
  }

  // Stores the value the future will hold; the count is unchanged.
  template <pgas::detail::value_for<T> V>
  void set_value(V&& v) const {
    pgas::detail::state<T>& s = checked("promise::set_value");
    s.begin_value();
    try {
      s.emplace(std::forward<V>(v));
    } catch (...) {
      s.end_value(false);
      throw;
    }
    s.end_value(true);
  }

  // Readies the future at once with `e` (a non-null exception); error(arg) when it is ready.
  void set_exception(std::exception_ptr e) const {
    checked("promise::set_exception").fail(std::move(e));
  }

  // fulfill(1) for the initial dependency, then get_future().
  future<T> finalize() const {
    checked("promise::finalize").fulfill(1, "promise::finalize");
    return get_future();
  }
  future<T> get_future() const {
    checked("promise::get_future");
    return pgas::detail::future_access::make<T>(state_);
  }

 private:
  pgas::detail::state<T>& checked(std::string_view call) const {
    if (state_ == nullptr) pgas::detail::raise_invalid_promise(call);  // moved from
    return *state_;
  }

  std::shared_ptr<pgas::detail::state<T>> state_;
};

// A ready future holding `v`.
template <class V>
future<std::decay_t<V>> make_future(V&& v) {
  if constexpr (pgas::detail::inline_value<std::decay_t<V>>) {
    return pgas::detail::future_access::make_ready<std::decay_t<V>>(v);
  }
  auto s = std::make_shared<pgas::detail::state<std::decay_t<V>>>();
  s->emplace(std::forward<V>(v));
  s->publish();
  return pgas::detail::future_access::make<std::decay_t<V>>(std::move(s));
}

// A ready future<>.
inline future<> make_future() noexcept {
  return {};
}

// A ready future that failed with `e` (non-null, else error(arg)): wait() rethrows it.
template <class T = void>
future<T> make_exception_future(std::exception_ptr e) {
  if (e == nullptr) pgas::detail::raise_null_exception("make_exception_future");
  auto s = std::make_shared<pgas::detail::state<T>>();
  s->store_exception(std::move(e));
  s->publish();
  return pgas::detail::future_access::make<T>(std::move(s));
}

// Runs fn() on one of this rank's task-arena threads (this_rank_arena().enqueue) and returns
// a future of its result, ready when it returns (failed with what it throws; a returned
// future<U> is flattened as in then()). Raises error(not_open) when the runtime is not open.
template <pgas::detail::async_task Fn>
future<pgas::detail::result_value_t<std::decay_t<Fn>>> async(Fn&& fn) {
  using F = std::decay_t<Fn>;
  using R = pgas::detail::result_value_t<F>;
  const task_arena_ref arena = pgas::detail::async_arena();
  auto dst = std::make_shared<pgas::detail::state<R>>();
  if constexpr (std::is_copy_constructible_v<F>) {
    arena.enqueue(
        [dst, f = F(std::forward<Fn>(fn))]() mutable { pgas::detail::deliver(dst, "async", f); });
  } else {  // std::function copies what it holds
    arena.enqueue([dst, f = std::make_shared<F>(std::forward<Fn>(fn))] {
      pgas::detail::deliver(dst, "async", *f);
    });
  }
  return pgas::detail::future_access::make<R>(std::move(dst));
}

namespace pgas::detail {

// The result of when_all over futures of Ts: the non-void values as a tuple, one value as
// itself, none as void (UPC++'s rule).
template <class T>
using value_tuple_t = std::conditional_t<std::is_void_v<T>, std::tuple<>, std::tuple<T>>;
template <class Tuple>
struct unwrap_tuple {
  using type = Tuple;
};
template <>
struct unwrap_tuple<std::tuple<>> {
  using type = void;
};
template <class U>
struct unwrap_tuple<std::tuple<U>> {
  using type = U;
};
template <class... T>
using joined_tuple_t = decltype(std::tuple_cat(std::declval<value_tuple_t<T>>()...));
template <class... T>
using when_all_t = typename unwrap_tuple<joined_tuple_t<T...>>::type;

struct no_value {};
template <class T>
using slot_t = std::conditional_t<std::is_void_v<T>, no_value, std::optional<T>>;

// The state of a join: ready once every input arrived; the first input to fail (in time)
// decides its exception, else emplace_result() builds the value from the inputs' slots.
template <class R>
class join_base : public state<R> {
 public:
  explicit join_base(std::size_t inputs) : remaining_(inputs + 1) {}  // + 1: see start()

  // The inputs are attached: the join may complete from now on.
  void start() noexcept { arrive(); }

  // Input `ready` has arrived (null: a future<>{}, ready without a state).
  template <class T>
  void arrive_into(slot_t<T>& slot, const state_base* ready) noexcept {
    if (ready != nullptr && ready->has_failed()) {
      arrive_failed(ready->exception());
      return;
    }
    if constexpr (!std::is_void_v<T>) {
      try {
        slot.emplace(static_cast<const state<T>*>(ready)->value());
      } catch (...) {
        arrive_failed(std::current_exception());
        return;
      }
    }
    arrive();
  }

 protected:
  virtual void emplace_result() = 0;

 private:
  void arrive_failed(std::exception_ptr e) noexcept {
    if (!failed_.exchange(true, std::memory_order_acq_rel)) first_error_ = std::move(e);
    arrive();
  }
  void arrive() noexcept {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (failed_.load(std::memory_order_relaxed)) {
      this->store_exception(first_error_);
    } else {
      try {
        emplace_result();
      } catch (...) {
        this->store_exception(std::current_exception());
      }
    }
    this->publish();
  }

  std::atomic<std::size_t> remaining_;
  std::atomic<bool> failed_{false};
  std::exception_ptr first_error_;
};

template <class T>
value_tuple_t<T> take_slot(slot_t<T>& slot) {
  if constexpr (std::is_void_v<T>) {
    return {};
  } else {
    return value_tuple_t<T>(std::move(*slot));
  }
}

template <class... T>
class join_tuple final : public join_base<when_all_t<T...>> {
 public:
  join_tuple() : join_base<when_all_t<T...>>(sizeof...(T)) {}

  template <std::size_t I>
  void arrive_at(const state_base* ready) noexcept {
    using U = std::tuple_element_t<I, std::tuple<T...>>;
    this->template arrive_into<U>(std::get<I>(slots_), ready);
  }

 private:
  void emplace_result() override {
    using R = when_all_t<T...>;
    if constexpr (!std::is_void_v<R>) {
      auto all = std::apply([](auto&... s) { return std::tuple_cat(take_slot<T>(s)...); }, slots_);
      if constexpr (std::tuple_size_v<decltype(all)> == 1) {
        this->emplace(std::get<0>(std::move(all)));
      } else {
        this->emplace(std::move(all));
      }
    }
  }

  std::tuple<slot_t<T>...> slots_;
};

template <class T>
using when_all_vector_t = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;

template <class T>
class join_vector final : public join_base<when_all_vector_t<T>> {
 public:
  explicit join_vector(std::size_t n) : join_base<when_all_vector_t<T>>(n), slots_(n) {}

  void arrive_at(std::size_t i, const state_base* ready) noexcept {
    this->template arrive_into<T>(slots_[i], ready);
  }

 private:
  void emplace_result() override {
    if constexpr (!std::is_void_v<T>) {
      std::vector<T> values;
      values.reserve(slots_.size());
      for (std::optional<T>& s : slots_) values.push_back(std::move(*s));
      this->emplace(std::move(values));
    }
  }

  std::vector<slot_t<T>> slots_;
};

// Attaches input `f` to a join: arrive(join, &state) runs when f is ready, at once with a
// null state for a future<>{} (checked: only future<> may have no state).
template <class T, class J, class Arrive>
void attach(const future<T>& f, const std::shared_ptr<J>& join, Arrive arrive) {
  if (const std::shared_ptr<state<T>> s = future_access::state_of(f)) {
    s->add_continuation(
        make_continuation([join, arrive](state_base& ready) noexcept { arrive(*join, &ready); }));
  } else if constexpr (std::is_void_v<T>) {
    arrive(*join, nullptr);
  } else {
    raise_invalid_future("when_all");
  }
}

template <class T>
void check_joinable(const future<T>& f) {
  if constexpr (!std::is_void_v<T>) {
    if (!future_access::is_valid(f)) raise_invalid_future("when_all");
  }
}

template <class J, class... T, std::size_t... I>
void attach_all(const std::shared_ptr<J>& join, std::index_sequence<I...>, const future<T>&... fs) {
  (attach(fs, join, [](J& j, const state_base* ready) { j.template arrive_at<I>(ready); }), ...);
}

}  // namespace pgas::detail

// A future of all the values of `fs`, ready when all of them are: std::tuple of the
// non-void values in order, the value itself when exactly one is non-void, future<> when
// all are void. When some fail, the result fails with the exception of the first to fail
// (in time), once all are ready. Raises error(arg) for a default future<T> before attaching
// anything.
template <class... T>
future<pgas::detail::when_all_t<T...>> when_all(const future<T>&... fs) {
  using R = pgas::detail::when_all_t<T...>;
  (pgas::detail::check_joinable(fs), ...);
  auto join = std::make_shared<pgas::detail::join_tuple<T...>>();
  pgas::detail::attach_all(join, std::index_sequence_for<T...>{}, fs...);
  join->start();
  return pgas::detail::future_access::make<R>(std::move(join));
}

// The same over a vector: future<std::vector<T>> (values in the vector's order), or future<>
// for futures of void. An empty vector gives a ready future.
template <class T>
future<pgas::detail::when_all_vector_t<T>> when_all(const std::vector<future<T>>& fs) {
  using R = pgas::detail::when_all_vector_t<T>;
  for (const future<T>& f : fs) pgas::detail::check_joinable(f);
  auto join = std::make_shared<pgas::detail::join_vector<T>>(fs.size());
  for (std::size_t i = 0; i < fs.size(); ++i) {
    pgas::detail::attach(
        fs[i], join, [i](pgas::detail::join_vector<T>& j, const pgas::detail::state_base* ready) {
          j.arrive_at(i, ready);
        });
  }
  join->start();
  return pgas::detail::future_access::make<R>(std::move(join));
}

}  // namespace oneside
