// when_all(): a future of several futures' values, ready when all of them are (UPC++'s rules
// for what it holds), over a parameter pack or a vector of futures; rma requests join too.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <oneside/pgas/future/future.hpp>
#include <oneside/pgas/future/request.hpp>
#include <oneside/pgas/future/state.hpp>
#include <oneside/rma/request.hpp>

namespace oneside {

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

// What the mixed when_all takes: futures, and rma requests by rvalue (the join owns them).
template <class A>
concept future_arg = is_future_v<std::remove_cvref_t<A>>;
template <class A>
concept request_arg = std::is_same_v<A, rma::request>;  // A&& deduced from an rvalue
template <class A>
concept joinable = future_arg<A> || request_arg<A>;

template <class F>
requires future_arg<F>
const F& as_future(const F& f) noexcept {
  return f;
}
inline future<> as_future(rma::request&& r) {
  return to_future(std::move(r));
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

// The same over futures and rma requests mixed (at least one request, each moved in and
// joined as to_future(std::move(r)): ready at its local completion). A request contributes
// no value: when_all(f_int, std::move(req)) is a future<int>.
template <class... A>
requires(pgas::detail::joinable<A>&&...) &&
    (pgas::detail::request_arg<A> || ...) auto when_all(A&&... args) {
  return when_all(pgas::detail::as_future(std::forward<A>(args))...);
}

// A future<> ready when every request of `requests` is complete (locally, as to_future); the
// requests are moved into it and become null, as rma::wait_all leaves them.
inline future<> when_all(std::span<rma::request> requests) {
  std::vector<future<>> all;
  all.reserve(requests.size());
  for (rma::request& r : requests) all.push_back(to_future(std::move(r)));
  return when_all(all);
}

}  // namespace oneside
