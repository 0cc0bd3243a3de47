// One rank's part of the global heap (include/oneside/pgas/heap.hpp): segments of exposed
// memory from the transport, attached to the job-wide dynamic window, carved by a free_list.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include <oneside/pgas/heap.hpp>
#include <oneside/rma/window.hpp>
#include <oneside/runtime/transport.hpp>

#include "heap/free_list.hpp"

namespace oneside::pgas::detail {

class global_heap {
 public:
  // Segments of `segment_bytes` (rounded up to pages; larger requests get their own size),
  // at most `cap` bytes in all (0: no cap), attached to `window` (a dynamic window).
  global_heap(transport::backend& t, rma::window& window, std::size_t segment_bytes,
              std::size_t cap);
  global_heap(const global_heap&) = delete;
  global_heap& operator=(const global_heap&) = delete;
  ~global_heap();

  void* allocate(std::size_t bytes, std::size_t align);
  void deallocate(void* p);
  void check_block(const void* p) const;
  heap_stats_t stats() const;

 private:
  // Adds a segment that can serve `bytes` at `align`; error(no_mem) past the cap.
  void grow(std::size_t bytes, std::size_t align);

  transport::backend& transport_;
  rma::window& window_;
  const std::size_t segment_bytes_;
  const std::size_t cap_;
  free_list list_;
  std::mutex grow_mutex_;                     // one growth at a time
  std::vector<transport::segment> segments_;  // guarded by grow_mutex_
};

}  // namespace oneside::pgas::detail
