// Each rank's task arena, on oneTBB (the only file of oneside that includes TBB).
// enqueue() runs tasks in a task_group inside the arena so wait_enqueued() can wait for them.
#include <algorithm>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <oneside/runtime/task_arena.hpp>

#include "context/context.hpp"
#include "task/arena_impl.hpp"

namespace oneside {
namespace detail {

struct arena_impl::state {
  // Enqueued work (async) needs a worker thread: a thread waiting on a future does not enter
  // the arena. So no slot is reserved for application threads (their execute() waits for a
  // free slot or runs as a task there), and TBB may start one worker even where it would
  // start none (a rank bound to one core: TBB sizes its pool by the affinity mask). The limit
  // counts the thread that sets it besides the workers: `threads` workers need threads + 1
  // (with `threads`, TBB warned on every start that it ignores the request for its last worker).
  explicit state(int threads)
      : workers(oneapi::tbb::global_control::max_allowed_parallelism,
                static_cast<std::size_t>(threads) + 1),
        arena(threads, 0) {}
  oneapi::tbb::global_control workers;
  oneapi::tbb::task_arena arena;
  oneapi::tbb::task_group group;
};

arena_impl::arena_impl(int threads) : state_(std::make_unique<state>(std::max(1, threads))) {
  state_->arena.initialize();
}

arena_impl::~arena_impl() {
  wait_enqueued();
}

int arena_impl::max_concurrency() const noexcept {
  return state_->arena.max_concurrency();
}

void arena_impl::execute(const std::function<void()>& fn) {
  state_->arena.execute(fn);
}

void arena_impl::enqueue(std::function<void()> fn) {
  state_->arena.execute([this, f = std::move(fn)]() mutable { state_->group.run(std::move(f)); });
}

void arena_impl::parallel_for(std::size_t n,
                              const std::function<void(std::size_t, std::size_t)>& body) {
  state_->arena.execute([&] {
    oneapi::tbb::parallel_for(
        oneapi::tbb::blocked_range<std::size_t>(0, n),
        [&](const oneapi::tbb::blocked_range<std::size_t>& r) { body(r.begin(), r.end()); });
  });
}

void arena_impl::wait_enqueued() {
  state_->arena.execute([this] { state_->group.wait(); });
}

}  // namespace detail

int task_arena_ref::max_concurrency() const noexcept {
  return impl_->max_concurrency();
}
void task_arena_ref::execute(const std::function<void()>& fn) const {
  impl_->execute(fn);
}
void task_arena_ref::enqueue(std::function<void()> fn) const {
  impl_->enqueue(std::move(fn));
}
void task_arena_ref::parallel_for(std::size_t n,
                                  const std::function<void(std::size_t, std::size_t)>& body) const {
  impl_->parallel_for(n, body);
}
void task_arena_ref::wait_enqueued() const {
  impl_->wait_enqueued();
}

task_arena_ref this_rank_arena() {
  return task_arena_ref(detail::require_context("this_rank_arena").arena.get());
}

}  // namespace oneside
