// The global heap of one rank (see global_heap.hpp and include/oneside/pgas/heap.hpp).
#include "heap/global_heap.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/check.hpp"

namespace oneside::pgas::detail {
namespace {

constexpr std::size_t page = free_list::arena_alignment;

constexpr std::size_t round_up(std::size_t n, std::size_t to) noexcept {
  return (n + to - 1) / to * to;
}

}  // namespace

global_heap::global_heap(transport::backend& t, std::size_t segment_bytes, std::size_t cap)
    : transport_(t),
      segment_bytes_(round_up(segment_bytes == 0 ? page : segment_bytes, page)),
      cap_(cap) {
  list_.set_reserve([this](void* base, std::size_t offset, std::size_t bytes,
                           std::string_view call) { reserve(base, offset, bytes, call); });
}

void global_heap::reserve(void* base, std::size_t offset, std::size_t bytes,
                          std::string_view call) {
  const std::lock_guard lock(segments_mutex_);
  for (const transport::segment& s : segments_) {
    if (s.base() == base) return transport_.reserve(s, offset, bytes, call);
  }
  oneside::detail::raise(error_class::intern, {.call = call},
                         "the heap has no segment at the arena it reserves memory of");
}

void global_heap::add_segment(transport::segment seg, std::size_t reserved) {
  void* const base = seg.base();
  const std::size_t size = seg.size();
  {
    // Found by reserve() before the free list can hand out a block of it.
    const std::lock_guard lock(segments_mutex_);
    segments_.push_back(std::move(seg));
  }
  try {
    list_.add_arena(base, size, reserved);
  } catch (...) {
    const std::lock_guard lock(segments_mutex_);
    segments_.pop_back();
    throw;
  }
}

global_heap::~global_heap() {
  std::thread last;
  {
    std::lock_guard lock(defer_mutex_);
    last = std::move(deferred_thread_);
  }
  if (last.joinable()) last.join();
}

void* global_heap::grow_and_allocate(std::size_t bytes, std::size_t align, std::string_view call) {
  // More than any segment may hold (also what n * sizeof(T) saturates to on overflow).
  ONESIDE_CHECK(bytes <= free_list::max_arena_bytes - 2 * free_list::max_alignment,
                error_class::no_mem, {.call = call, .bytes = bytes},
                "larger than the global heap can ever serve");
  std::lock_guard lock(grow_mutex_);
  if (void* p = list_.allocate(bytes, align)) return p;  // another thread grew it
  grow(bytes, align, call);
  void* p = list_.allocate(bytes, align);
  ONESIDE_CHECK(p != nullptr, error_class::intern, {.call = call, .bytes = bytes},
                "a new heap segment could not serve the request it was made for");
  return p;
}

void* global_heap::try_allocate(std::size_t bytes, std::size_t align) {
  return list_.try_allocate(bytes, align);
}

void global_heap::defer(std::function<void()> job) {
  std::lock_guard lock(defer_mutex_);
  deferred_.push_back(std::move(job));
  if (deferring_) return;  // the running thread takes it
  // The previous thread has left run_deferred (it cleared deferring_ under the lock and
  // touches nothing after): joining it is immediate.
  if (deferred_thread_.joinable()) deferred_thread_.join();
  deferring_ = true;
  deferred_thread_ = std::thread([this] { run_deferred(); });
}

void global_heap::run_deferred() noexcept {
  for (;;) {
    std::function<void()> job;
    {
      std::lock_guard lock(defer_mutex_);
      if (deferred_.empty()) {
        deferring_ = false;
        return;
      }
      job = std::move(deferred_.front());
      deferred_.pop_front();
    }
    job();
  }
}

void global_heap::grow(std::size_t bytes, std::size_t align, std::string_view call) {
  // What one block of `bytes` at `align` needs in a fresh segment, tags and fences included.
  const std::size_t need = round_up(
      bytes + align + free_list::block_overhead + free_list::min_block + free_list::arena_overhead,
      page);
  std::size_t size = std::max(segment_bytes_, need);
  const std::size_t have = list_.stats().total_bytes;
  if (cap_ != 0 && have + size > cap_) {
    // Up to the cap, if that still serves the request.
    size = cap_ > have ? (cap_ - have) / page * page : 0;
    ONESIDE_CHECK(size >= need, error_class::no_mem, {.call = call, .bytes = bytes},
                  "the global heap of this rank would exceed its cap of " + std::to_string(cap_) +
                      " bytes (ONESIDE_HEAP_MAX_BYTES; " + std::to_string(have) +
                      " bytes in segments, " + std::to_string(list_.stats().largest_free) +
                      " the largest free block)");
  }
  // In the transport's table of exposed memory from now on: peers reach it. Reserved as far
  // as the block it is made for reaches (and its last page, where the free list keeps its end
  // fence); when that cannot be, the segment is not made and the heap is as it was.
  const std::size_t front = round_up(free_list::first_block_extent(bytes, align), page);
  add_segment(transport_.allocate_segment(
                  size, {.call = call, .reserve_front = front, .reserve_back = page}),
              front);
}

void global_heap::add_group_segment(std::span<const rank_t> members) {
  // The same size on every rank (the settings are the job's).
  const std::size_t size =
      cap_ != 0 ? std::min(cap_ / page * page, segment_bytes_) : segment_bytes_;
  if (size < page) return;
  transport::segment seg = transport_.allocate_group(
      members, size, {.call = "runtime", .reserve_front = page, .reserve_back = page});
  const std::lock_guard lock(grow_mutex_);
  add_segment(std::move(seg), page);
}

void global_heap::check_block(const void* p) const {
  list_.check_block(p, "deallocate");
}

heap_stats_t as_heap_stats(const free_list_stats& s) noexcept {
  return heap_stats_t{.size = s.total_bytes,
                      .used = s.used_bytes,
                      .free = s.free_bytes,
                      .largest_free = s.largest_free,
                      .segments = s.arena_count,
                      .live_blocks = s.live_blocks};
}

heap_stats_t global_heap::stats() const {
  return as_heap_stats(list_.stats());
}

}  // namespace oneside::pgas::detail
