// Each rank's task arena: the worker threads this rank may use for tasks, sized to the cores
// it is bound to (see README: ONESIDE_TASK_THREADS). Backed by oneTBB; no TBB type appears here.
#pragma once

#include <cstddef>
#include <functional>

namespace oneside {

namespace detail {
class arena_impl;
}

class task_arena_ref {
 public:
  explicit task_arena_ref(detail::arena_impl* impl) noexcept : impl_(impl) {}

  // Number of threads that may run this arena's tasks at once (including the caller's).
  int max_concurrency() const noexcept;
  // Runs fn inside the arena and returns when it is done; parallel work started by fn uses
  // the arena's threads.
  void execute(const std::function<void()>& fn) const;
  // Queues fn to run on one of the arena's threads; fire and forget.
  void enqueue(std::function<void()> fn) const;
  // Calls body(begin, end) over chunks of [0, n) in parallel and returns when all are done.
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body) const;
  // Waits until every task enqueued so far has finished.
  void wait_enqueued() const;

 private:
  detail::arena_impl* impl_;
};

// The arena of this rank. Throws error(not_open) when the runtime is not open.
task_arena_ref this_rank_arena();

}  // namespace oneside
