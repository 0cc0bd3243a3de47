// Fiber stacks (runtime/fiber/): mapped once, kept in a per-thread pool and reused, each with
// a guard page below it. A stack reserves 256 KiB of address space and commits only what its
// fibers touch; one that went deeper than 64 KiB (a canary word there was overwritten) gives
// those pages back before it is reused, so an idle pooled or shallow fiber holds a few KiB.
#pragma once

#include <cstddef>
#include <vector>

#include <boost/context/stack_context.hpp>

#include "fiber/sanitizer_switch.hpp"

namespace oneside::detail {

class stack_pool {
 public:
  static constexpr std::size_t reserved_bytes = 256 * 1024;  // per stack, without the guard
  static constexpr std::size_t shallow_bytes = 64 * 1024;    // deeper pages are given back
  static constexpr std::size_t max_idle = 256;               // stacks the pool keeps

  stack_pool() = default;
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  // Raises error(no_mem) when no stack can be mapped.
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& sc) noexcept;

 private:
  std::vector<void*> idle_;  // tops of pooled stacks (page boundaries)
};

// The allocator handed to boost::context::fiber (a pointer to the thread's pool); tells the
// fiber's sanitizer marks where its stack is.
struct pool_allocator {
  stack_pool* pool;
  switch_marks* marks;
  boost::context::stack_context allocate() {
    boost::context::stack_context sc = pool->allocate();
    marks_for_new_fiber(*marks, sc.sp, sc.size);
    return sc;
  }
  void deallocate(boost::context::stack_context& sc) noexcept { pool->deallocate(sc); }
};

}  // namespace oneside::detail
