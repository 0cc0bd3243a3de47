// One rank's part of the global heap (include/oneside/pgas/heap.hpp): segments of exposed
// memory from the transport (in its table of exposed memory, which is how peers reach them),
// carved by a free_list.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include <oneside/pgas/heap.hpp>

#include "pgas/free_list.hpp"
#include "runtime/transport.hpp"

namespace oneside::pgas::detail {

// What heap_stats() reports of a free list (the global and the symmetric heap).
heap_stats_t as_heap_stats(const free_list_stats& s) noexcept;

class global_heap {
 public:
  // Segments of `segment_bytes` (rounded up to pages; larger requests get their own size),
  // at most `cap` bytes in all (0: no cap).
  global_heap(transport::backend& t, std::size_t segment_bytes, std::size_t cap);
  global_heap(const global_heap&) = delete;
  global_heap& operator=(const global_heap&) = delete;
  ~global_heap();

  // A block, growing the heap when none fits. Errors name `call`: no_mem (the cap, or more
  // than a segment can hold), arg (bad alignment). Inline: the free list serves almost every
  // call, so the public allocate path goes straight to it.
  void* allocate(std::size_t bytes, std::size_t align, std::string_view call = "allocate") {
    if (void* p = list_.allocate(bytes, align, call)) [[likely]] {
      return p;
    }
    return grow_and_allocate(bytes, align, call);
  }
  // Collective over `members` (the world): adds a first segment the transport makes for them
  // together (transport::backend::allocate_group), which it may reach faster than segments in
  // general (MPI: a window of its own). Of ONESIDE_HEAP_SEGMENT_BYTES, within the cap.
  void add_group_segment(std::span<const rank_t> members);
  // A block from the segments there are, or null when the heap would have to grow or reserve
  // memory first (a new segment may wait for the transport, and reserving is a system call:
  // active-message handlers call this).
  void* try_allocate(std::size_t bytes, std::size_t align);
  void deallocate(void* p) { list_.deallocate(p); }
  void check_block(const void* p) const;
  heap_stats_t stats() const;

  // Runs `job` on a thread of the heap's own, jobs in the order given: for what an
  // active-message handler must not do on the agent (allocate() that grows the heap). The
  // thread starts when a job arrives and ends when none is left; the destructor joins it, so
  // jobs must be done before the window goes (remote_heap.cpp: every job answers a request
  // whose origin waits for the answer before the runtime closes). `job` must not throw.
  void defer(std::function<void()> job);

 private:
  // allocate() once the segments there are could not serve it: grows the heap.
  void* grow_and_allocate(std::size_t bytes, std::size_t align, std::string_view call);
  // Adds a segment that can serve `bytes` at `align`; error(no_mem) past the cap.
  void grow(std::size_t bytes, std::size_t align, std::string_view call);
  void run_deferred() noexcept;

  // Adds `seg` to the segments and to the free list, its first `reserved` bytes and its last
  // page reserved. Caller holds grow_mutex_.
  void add_segment(transport::segment seg, std::size_t reserved);
  // The free list's reserve function: reserves part of the segment at `base`.
  void reserve(void* base, std::size_t offset, std::size_t bytes, std::string_view call);

  transport::backend& transport_;
  const std::size_t segment_bytes_;
  const std::size_t cap_;
  free_list list_;
  std::mutex grow_mutex_;  // one growth at a time
  // Segments are reserved as the free list reaches into them (transport::segment_request):
  // a segment of 64 MiB costs /dev/shm only what its blocks use.
  std::mutex segments_mutex_;                 // taken inside grow_mutex_, never around list_
  std::vector<transport::segment> segments_;  // guarded by segments_mutex_
  std::mutex defer_mutex_;
  std::deque<std::function<void()>> deferred_;  // guarded by defer_mutex_
  bool deferring_ = false;                      // the thread runs; guarded by defer_mutex_
  std::thread deferred_thread_;                 // guarded by defer_mutex_
};

}  // namespace oneside::pgas::detail
