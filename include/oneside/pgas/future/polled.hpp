// Futures of operations that complete by being polled (pgas::detail::make_pending_future, for
// rput, rget and the atomics) and progress(), which polls those still pending, process-wide.
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <oneside/pgas/future/state.hpp>

namespace oneside {

// Advances outstanding PGAS operations: polls every pending state (an operation's future
// that completes by being polled, see pgas::detail::make_pending_future), running the
// continuations of those that complete. Any thread may call it, also from a continuation;
// wait() calls it while it waits. Pending states are polled by one thread at a time.
void progress() noexcept;

namespace pgas::detail {

// Adds a pending polled state to the process-wide registry that progress() polls.
void add_pending(std::shared_ptr<state_base> s);

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
}  // namespace oneside
