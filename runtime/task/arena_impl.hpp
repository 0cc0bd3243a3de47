// A rank's task arena (implementation of oneside::task_arena_ref). oneTBB types stay in
// task_arena.cpp behind a pimpl, so no other file of the runtime sees TBB.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace oneside::detail {

class arena_impl {
 public:
  // An arena of `threads` threads (at least 1, the caller's included).
  explicit arena_impl(int threads);
  ~arena_impl();
  arena_impl(const arena_impl&) = delete;
  arena_impl& operator=(const arena_impl&) = delete;

  int max_concurrency() const noexcept;
  void execute(const std::function<void()>& fn);
  void enqueue(std::function<void()> fn);
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body);
  void wait_enqueued();

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace oneside::detail
