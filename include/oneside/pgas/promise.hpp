// promise<T>: the producer's side of a future, after UPC++. It counts the operations a future
// waits for and carries the value (or the exception) the future becomes ready with.
#pragma once

#include <concepts>
#include <cstdint>
#include <exception>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

#include <oneside/pgas/future/future.hpp>
#include <oneside/pgas/future/state.hpp>

namespace oneside {

namespace pgas::detail {
// A value set_value() accepts.
template <class V, class T>
concept value_for = !std::is_void_v<T> && std::constructible_from<T, V&&>;
}  // namespace pgas::detail

// Counts what a future waits for (UPC++ semantics). A promise starts with one dependency;
// require(n) adds n, fulfill(n) removes n, finalize() removes the initial one and returns the
// future. The future is ready when the count reaches zero; a promise<T> of a non-void T must
// have its value (set_value) by then. Copies share the promise (a handle, like future), and
// every member may be called from several threads at once: each operation a promise counts
// may fulfill it from the thread where it completes. Continuations of the future run in the
// call that readies it. Errors: error(arg) for a negative n, fulfill below zero, require or
// set_value on a ready promise, set_value twice, and for the call that takes a promise<T>
// to zero without a value (its future then fails with that same error).
template <class T = void>
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

}  // namespace oneside
