// The shared state behind a future (pgas::detail, compiled half in pgas/future/future.cpp):
// state_base holds readiness, the exception, the list of continuations and the promise's
// dependency count; state<T> adds the value. Also what builds and reads futures without being
// one (future_access) and the slot in which a ready future keeps a small value of its own.
// User code never names these; <oneside/pgas/future.hpp> is the header to include.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include <oneside/runtime/types.hpp>

namespace oneside {

template <class T = void>
class future;

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

// The continuations this thread is inside (then.hpp, future.cpp), for bounded stack: then()
// on a ready future runs its continuation inline while fewer than max_inline_depth are open
// and defers it beyond; a state readied inside one defers its own continuations. What is
// deferred runs on this thread once the outermost frame closes (a trampoline), or earlier in
// a wait() or progress() of this thread.
struct continuation_frames {
  static constexpr int max_inline_depth = 16;
  int depth = 0;              // continuations running on this thread, nested
  bool has_deferred = false;  // whether run_deferred() has work
};
// Initial-exec and constinit: one thread-pointer-relative access, no wrapper call (the library
// is linked into programs, not loaded with dlopen).
inline constinit thread_local continuation_frames t_frames [[gnu::tls_model("initial-exec")]];

// Runs what this thread deferred, oldest list last (depth-first), until none is left.
void run_deferred() noexcept;
// Defers `c`, to run on this thread as if attached to `ready`, which `keep` keeps alive.
void defer(std::shared_ptr<state_base> keep, state_base& ready,
           std::unique_ptr<continuation> c) noexcept;

// One continuation frame: the outermost one runs what was deferred while it was open.
class inline_frame {
 public:
  inline_frame() noexcept { ++t_frames.depth; }
  ~inline_frame() {
    if (--t_frames.depth == 0 && t_frames.has_deferred) run_deferred();
  }
  inline_frame(const inline_frame&) = delete;
  inline_frame& operator=(const inline_frame&) = delete;
};
// Whether a continuation may run inline here (the nesting is below the bound).
inline bool may_run_inline() noexcept {
  return t_frames.depth < continuation_frames::max_inline_depth;
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

// A remote operation's completion that the pgas layer tracks without a shared state: it is
// complete once the operations this process issued to `rank` are complete through `ticket`
// (a flush of that rank, or quiet(), makes them so). future<> holds one for a remote rput or
// atomic update, so that issuing one and waiting for it allocate nothing; the calls below,
// compiled in the pgas layer, answer for it.
struct op_ticket {
  rank_t rank = -1;  // -1: none
  std::uint64_t value = 0;
  bool is_set() const noexcept { return rank >= 0; }
};
// Whether it is complete, completing it when not (one flush of its rank, the poll of a remote
// operation): true on return unless that fails.
bool ticket_poll(const op_ticket& t);
// Completes it (future::wait): in a fiber, one still in flight suspends the fiber until a flush
// of its rank, made when the thread has no other fiber ready, completes it.
void ticket_wait(const op_ticket& t);
// A ready-when-complete state for it (then(), when_all()): readied by the completion that
// completes it, which progress() and waits drive.
std::shared_ptr<state<void>> ticket_state(const op_ticket& t);

// Where future<T> keeps one: nothing for a non-void T.
template <class T>
struct ticket_slot {
  static constexpr bool is_set() noexcept { return false; }
};
template <>
struct ticket_slot<void> {
  op_ticket ticket;
  bool is_set() const noexcept { return ticket.is_set(); }
};
struct ticket_tag {};

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
  // A future<> of a remote operation tracked by `t` (none: a ready future).
  static future<void> make_ticket(const op_ticket& t) noexcept;
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
    if constexpr (std::is_void_v<T>) {
      if (f.ticket_.is_set()) return ticket_state(f.ticket_.ticket);
    }
    return f.state_;
  }
  // The value a ready future holds in itself, or null.
  template <class T>
  static const T* ready_value(const future<T>& f) noexcept {
    if constexpr (inline_value<T>) {
      if (f.ready_.has_value()) return &f.ready_.value;
    }
    return nullptr;
  }
  // Whether the future has a state or a value of its own (every future<> has).
  template <class T>
  static bool is_valid(const future<T>& f) noexcept {
    return std::is_void_v<T> || f.ready_.has_value() || f.state_ != nullptr;
  }
};

}  // namespace pgas::detail
}  // namespace oneside
