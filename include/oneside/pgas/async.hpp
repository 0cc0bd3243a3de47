// async(): runs work on this rank's task arena and returns a future of its result.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include <oneside/pgas/future/future.hpp>
#include <oneside/pgas/future/state.hpp>
#include <oneside/pgas/future/then.hpp>
#include <oneside/runtime/task_arena.hpp>

namespace oneside {

namespace pgas::detail {
// What async() runs: callable with no arguments (a decayed copy of it).
template <class Fn>
concept async_task = continuation_for<Fn, void>;
// This rank's task arena for async(); error(not_open) naming "async" when none is open.
task_arena_ref async_arena();
}  // namespace pgas::detail

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

}  // namespace oneside
