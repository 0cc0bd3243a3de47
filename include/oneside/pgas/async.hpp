// async() and async_on(): run work on this rank's task arena (or another) and return a future
// of its result.
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

// Runs fn() on one of `arena`'s threads (arena.enqueue) and returns a future of its result,
// ready when it returns (failed with what it throws; a returned future<U> is flattened as in
// then()). Continuations of that future run on the arena thread that readies it. The arena
// must outlive the task (this_rank_arena() lives until the runtime closes).
template <pgas::detail::async_task Fn>
future<pgas::detail::result_value_t<std::decay_t<Fn>>> async_on(task_arena_ref arena, Fn&& fn) {
  using F = std::decay_t<Fn>;
  using R = pgas::detail::result_value_t<F>;
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

// async_on(this_rank_arena(), fn). Raises error(not_open) when the runtime is not open.
template <pgas::detail::async_task Fn>
future<pgas::detail::result_value_t<std::decay_t<Fn>>> async(Fn&& fn) {
  return async_on(pgas::detail::async_arena(), std::forward<Fn>(fn));
}

}  // namespace oneside
