// How continuations run (pgas::detail): the type rules of then() (what a continuation is
// called with, what its future holds, flattening of a returned future) and the steps that
// complete a continuation's state: deliver() runs it and stores its outcome, settle() passes
// a failure on or delivers, run_now() runs one on a future that is already ready.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

#include <oneside/pgas/future/state.hpp>

namespace oneside::pgas::detail {

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
      if constexpr (inline_value<R>) {
        if (const R* v = future_access::ready_value(inner)) {
          dst->emplace(*v);
          dst->publish();
          return;
        }
      }
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

// A ready future that failed with the exception being handled.
template <class R>
future<R> current_failure() {
  auto failed = std::make_shared<state<R>>();
  failed->store_exception(std::current_exception());
  failed->publish();
  return future_access::make<R>(std::move(failed));
}

// then(fn) on a future ready with a value (or on a ready future<>): runs fn(args...) now, in
// a continuation frame (the caller checked may_run_inline()). A plain result small enough to
// live in a future (or none) makes a ready future without a shared state; a returned future
// is the result itself (nothing to flatten: fn already ran); anything else (a larger value,
// an exception) goes through deliver() into a new state.
template <class R, class Fn, class... A>
future<R> run_now(Fn& fn, const A&... args) {
  using out = std::remove_cvref_t<std::invoke_result_t<Fn&, const A&...>>;
  const inline_frame frame;
  if constexpr (is_future_v<out>) {
    try {
      out inner = std::invoke(fn, args...);
      if (!future_access::is_valid(inner)) raise_invalid_future("future::then");
      return inner;
    } catch (...) {
      return current_failure<R>();
    }
  } else if constexpr (std::is_void_v<R> || inline_value<R>) {
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(fn, args...);
        return future<R>();
      } else {
        return future_access::make_ready<R>(R(std::invoke(fn, args...)));
      }
    } catch (...) {
      return current_failure<R>();
    }
  } else {
    auto dst = std::make_shared<state<R>>();
    deliver(dst, "future::then", fn, args...);
    return future_access::make<R>(std::move(dst));
  }
}

// then(fn) on a ready future when this thread is max_inline_depth continuations deep: fn
// runs (with copies of args) once the outermost frame closes; the future it returns now is
// ready then. This is what keeps any chain of ready futures in bounded stack.
template <class R, class Fn, class... A>
future<R> defer_now(Fn&& fn, const A&... args) {
  auto dst = std::make_shared<state<R>>();
  state<R>& ready = *dst;  // not read: the continuation carries its arguments
  defer(dst, ready,
        make_continuation([dst, f = std::forward<Fn>(fn), args...](state_base&) mutable noexcept {
          deliver(dst, "future::then", f, args...);
        }));
  return future_access::make<R>(std::move(dst));
}

}  // namespace oneside::pgas::detail
