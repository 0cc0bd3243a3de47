// Fibers: lightweight threads that a thread runs cooperatively, so that thousands of them can
// each block on a remote access while the others compute (Grappa's style). Backed by
// Boost.Context in runtime/fiber/; no Boost type appears here.
//
// Where a fiber runs: on the thread that spawned it, never on another. A new fiber is ready at
// once and first runs when its thread next yields, waits or joins. A thread runs its other
// fibers whenever the running one (or the thread's own code) waits in oneside (future::wait,
// wait_until on a signal, flush, lock acquisition, barrier, …; the one waiting primitive
// suspends it), joins or yields; when none can run, the thread drives the transport's progress
// and backs off (spin, yield, sleep) until one can.
//
// Cooperative: a fiber that computes without waiting or yielding keeps its thread. The thread's
// other fibers and its own code then do not run until it does; other threads, the rank's agent
// and progress threads, and other ranks are not held up (remote accesses to this rank's memory
// still complete). Long computations in a fiber should call this_fiber::yield() now and then.
//
// Fibers spawned inside a task of the rank's arena (async, enqueue) finish before that task does;
// the runtime's close runs the fibers of the thread that closes it to their end.
//
// Stacks come from a per-thread pool, taken when a fiber first runs (fibers that run one after
// another share one): 256 KiB reserved each, with a guard page below (an overflow faults
// instead of corrupting memory); an idle fiber commits only the pages it touched (a few KiB),
// and a stack that went deeper than 64 KiB is given back to the system before it is reused.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace oneside {

namespace detail {
class fiber_record;

// What a fiber runs, type-erased once (runtime/fiber/).
class fiber_body {
 public:
  virtual ~fiber_body() = default;
  virtual void run() = 0;
};

template <class Fn>
class fiber_body_of final : public fiber_body {
 public:
  explicit fiber_body_of(Fn fn) : fn_(std::move(fn)) {}
  void run() override { std::invoke(fn_); }

 private:
  Fn fn_;
};

fiber_record* spawn_fiber(std::unique_ptr<fiber_body> body);
void join_fiber(fiber_record* f);
void release_fiber(fiber_record* f) noexcept;  // detach: the fiber frees itself when done
std::uint64_t fiber_id(const fiber_record* f) noexcept;

// Fiber-local storage: a key per fiber_local object, a slot per key in each context.
std::size_t new_fiber_local_key() noexcept;
void* fiber_local_get(std::size_t key) noexcept;
// Stores `value` (destroyed by `destroy` when the context ends) and returns it.
void* fiber_local_set(std::size_t key, void* value, void (*destroy)(void*) noexcept);
}  // namespace detail

// A handle on a fiber, like std::thread's on a thread: move-only; joinable from spawn until
// join() or detach().
class fiber {
 public:
  // 0 is no fiber (the thread's own code).
  using id = std::uint64_t;

  fiber() noexcept = default;

  // Spawns a fiber running fn() on this thread (see the file comment). The fiber takes its
  // stack when it first runs; when none can be mapped then, it ends without running and join()
  // rethrows error(no_mem).
  template <class Fn>
  requires std::invocable < std::decay_t<Fn>
  & > static fiber spawn(Fn&& fn) {
    return fiber(detail::spawn_fiber(
        std::make_unique<detail::fiber_body_of<std::decay_t<Fn>>>(std::forward<Fn>(fn))));
  }

  // Joins a joinable fiber (as std::jthread does); an exception it ended with then calls
  // std::terminate, since nobody can take it.
  ~fiber() {
    if (joinable()) join_or_terminate();
  }
  fiber(fiber&& other) noexcept : record_(std::exchange(other.record_, nullptr)) {}
  fiber& operator=(fiber&& other) noexcept {
    if (this != &other) {
      if (joinable()) join_or_terminate();
      record_ = std::exchange(other.record_, nullptr);
    }
    return *this;
  }

  bool joinable() const noexcept { return record_ != nullptr; }

  // Waits until the fiber has returned (a oneside wait: in a fiber it suspends the caller, and
  // the thread runs its other fibers meanwhile), then rethrows the exception it ended with, if
  // any. Any thread may join; the fiber keeps running on its own thread. Not joinable after.
  void join() { detail::join_fiber(std::exchange(record_, nullptr)); }

  // Lets the fiber run on its own; an exception it ends with calls std::terminate (as one
  // escaping a std::thread does).
  void detach() noexcept { detail::release_fiber(std::exchange(record_, nullptr)); }

  id get_id() const noexcept { return record_ != nullptr ? detail::fiber_id(record_) : 0; }

 private:
  explicit fiber(detail::fiber_record* r) noexcept : record_(r) {}
  void join_or_terminate() noexcept { join(); }  // noexcept: a failed fiber terminates here
  detail::fiber_record* record_ = nullptr;
};

namespace this_fiber {
// The running fiber's id, or 0 in a thread's own code.
fiber::id get_id() noexcept;
// Lets the thread's other ready fibers (and its own code, when that waits) run first; returns
// at once when none is ready. In a thread without fibers it does nothing.
void yield();
}  // namespace this_fiber

// A T per fiber (and one per thread for a thread's own code), default-constructed on first
// access in each and destroyed when that fiber ends. Values of a fiber_local destroyed before
// them stay until their fiber ends.
template <class T>
class fiber_local {
 public:
  fiber_local() noexcept : key_(detail::new_fiber_local_key()) {}
  fiber_local(const fiber_local&) = delete;
  fiber_local& operator=(const fiber_local&) = delete;

  T& get() {
    if (void* p = detail::fiber_local_get(key_); p != nullptr) return *static_cast<T*>(p);
    auto value = std::make_unique<T>();
    void* p = detail::fiber_local_set(key_, value.get(), &destroy);
    (void)value.release();
    return *static_cast<T*>(p);
  }
  T& operator*() { return get(); }
  T* operator->() { return &get(); }

 private:
  static void destroy(void* p) noexcept { delete static_cast<T*>(p); }
  std::size_t key_;
};

}  // namespace oneside
