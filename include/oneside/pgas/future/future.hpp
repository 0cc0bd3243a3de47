// The future<T> handle and the futures made ready: make_future, make_exception_future. Where
// continuations run and who may call what are in <oneside/pgas/future.hpp>, the header to
// include for futures (it also brings promise, when_all, async and progress).
#pragma once

#include <exception>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

#include <oneside/pgas/future/state.hpp>
#include <oneside/pgas/future/then.hpp>

namespace oneside {

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
    if constexpr (std::is_void_v<T>) {
      if (ticket_.is_set()) return pgas::detail::ticket_poll(ticket_.ticket);
    }
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
    if constexpr (std::is_void_v<T>) {
      // A remote operation's: completing it is one flush of its target (unless done).
      if (ticket_.is_set()) {
        pgas::detail::ticket_wait(ticket_.ticket);
        return;
      }
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
    if constexpr (std::is_void_v<T>) {
      if (ticket_.is_set()) {
        if (!pgas::detail::ticket_poll(ticket_.ticket)) {
          pgas::detail::raise_not_ready("future::result");
        }
        return;
      }
    }
    pgas::detail::state<T>* s = checked("future::result");
    if constexpr (std::is_void_v<T>) {
      if (s == nullptr) return;
    }
    if (!s->poll()) pgas::detail::raise_not_ready("future::result");
    return value_of(*s);
  }

  // A future of fn(value) (fn() for future<>): fn runs once this future is ready; at once,
  // inline, when it already is, unless this thread is deep in nested continuations (then
  // right after the outermost returns, on this thread: any chain takes bounded stack; see the
  // file comment of <oneside/pgas/future.hpp>). When fn returns a future<U>, the result is
  // future<U>, ready when that one is. An exception of this future skips fn and passes on; an
  // exception thrown by fn fails the returned future.
  template <pgas::detail::continuation_for<T> Fn>
  future<pgas::detail::then_value_t<T, std::decay_t<Fn>>> then(Fn&& fn) const {
    using R = pgas::detail::then_value_t<T, std::decay_t<Fn>>;
    using F = std::decay_t<Fn>;
    if constexpr (pgas::detail::inline_value<T>) {
      if (ready_.has_value()) {
        if (!pgas::detail::may_run_inline()) [[unlikely]] {
          return pgas::detail::defer_now<R>(F(std::forward<Fn>(fn)), ready_.value);
        }
        F f(std::forward<Fn>(fn));
        return pgas::detail::run_now<R>(f, ready_.value);
      }
    }
    std::shared_ptr<pgas::detail::state<T>> held;  // a remote operation's, made for fn
    pgas::detail::state<T>* s = nullptr;
    if constexpr (std::is_void_v<T>) {
      if (ticket_.is_set()) {
        held = pgas::detail::ticket_state(ticket_.ticket);
        s = held.get();
      }
    }
    if (s == nullptr) s = checked("future::then");
    if constexpr (std::is_void_v<T>) {
      if (s == nullptr) {
        if (!pgas::detail::may_run_inline()) [[unlikely]] {
          return pgas::detail::defer_now<R>(F(std::forward<Fn>(fn)));
        }
        F f(std::forward<Fn>(fn));
        return pgas::detail::run_now<R>(f);
      }
    }
    const bool ready = s->is_ready();
    if (ready && !s->has_failed() && pgas::detail::may_run_inline()) {
      F f(std::forward<Fn>(fn));
      if constexpr (std::is_void_v<T>) {
        return pgas::detail::run_now<R>(f);
      } else {
        return pgas::detail::run_now<R>(f, s->value());
      }
    }
    auto dst = std::make_shared<pgas::detail::state<R>>();
    if (ready && s->has_failed()) {
      F f(std::forward<Fn>(fn));
      pgas::detail::settle(s, f, dst);  // passes the exception on; fn does not run
      return pgas::detail::future_access::make<R>(std::move(dst));
    }
    auto step = pgas::detail::make_continuation(
        [dst, f = F(std::forward<Fn>(fn))](pgas::detail::state_base& src) mutable noexcept {
          pgas::detail::settle(static_cast<const pgas::detail::state<T>*>(&src), f, dst);
        });
    if (ready) {  // too deep to run inline: after the outermost continuation returns
      if (held == nullptr) held = state_;
      pgas::detail::defer(held, *s, std::move(step));
    } else {
      s->add_continuation(std::move(step));
    }
    return pgas::detail::future_access::make<R>(std::move(dst));
  }

 private:
  friend struct pgas::detail::future_access;
  explicit future(std::shared_ptr<pgas::detail::state<T>> s) noexcept : state_(std::move(s)) {}
  template <pgas::detail::inline_value U>
  future(pgas::detail::ready_tag, const U& v) noexcept : ready_(v) {}
  future(pgas::detail::ticket_tag,
         const pgas::detail::op_ticket& t) noexcept requires std::is_void_v<T> {
    ticket_.ticket = t;
  }

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
  [[no_unique_address]] pgas::detail::ready_slot<T> ready_;    // a ready value held in place
  [[no_unique_address]] pgas::detail::ticket_slot<T> ticket_;  // a remote operation's (future<>)
};

inline future<void> pgas::detail::future_access::make_ticket(const op_ticket& t) noexcept {
  if (!t.is_set()) return {};
  return future<void>(ticket_tag{}, t);
}

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

}  // namespace oneside
