// The global heap: each rank's heap is a set of shared-memory segments attached to one
// job-wide dynamic window (made when the runtime opens), served by a linked-list free-list
// allocator (boundary tags, first fit, coalescing, alignment up to 4 KiB). It grows by a
// segment when full (ONESIDE_HEAP_SEGMENT_BYTES, a larger request gets one of its own size)
// up to an optional cap (ONESIDE_HEAP_MAX_BYTES). Every call here is local to the calling
// rank (no collective) and thread-safe. Blocks are reachable by every rank through the
// global_ptr they come as; node peers load and store them directly.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include <oneside/pgas/global_ptr.hpp>

namespace oneside {

// What heap_stats() reports for this rank's heap.
struct heap_stats_t {
  std::size_t size = 0;          // bytes of the segments
  std::size_t used = 0;          // bytes of live blocks, allocator overhead included
  std::size_t free = 0;          // bytes of free blocks
  std::size_t largest_free = 0;  // the largest allocate() that fits without growing
  std::size_t segments = 0;
  std::size_t live_blocks = 0;
};

namespace pgas::detail {
// `bytes` of this rank's heap aligned to `align` (a power of two up to 4096). Errors: arg
// (bad alignment), no_mem (the cap would be exceeded; nothing changes), not_open.
global_ptr<void> heap_allocate(std::size_t bytes, std::size_t align);
// Frees a block of this rank's heap. Errors: arg (a pointer that is no live block of this
// rank's heap: freed already, interior, or foreign; nothing changes), rank (another rank's
// block).
void heap_deallocate(global_ptr<void> p);
// Raises what heap_deallocate would for `p`, changing nothing (before destructors run).
void heap_check_block(global_ptr<void> p);
template <class T>
global_ptr<void> as_void(global_ptr<T> p) noexcept {
  return global_ptr<void>(p.where(), p.address());
}
// The count new_array stored in front of an array of `align` alignment.
inline std::size_t array_prefix(std::size_t align) noexcept {
  return align > sizeof(std::size_t) ? align : sizeof(std::size_t);
}
}  // namespace pgas::detail

// Uninitialised storage for n T's on this rank (n may be 0: a block of its own). Aligned to
// `align` (at least alignof(T), a power of two up to 4096).
template <class T>
global_ptr<T> allocate(std::size_t n = 1, std::size_t align = alignof(T)) {
  static_assert(!std::is_void_v<T> && !std::is_reference_v<T>);
  return static_pointer_cast<T>(
      pgas::detail::heap_allocate(n * sizeof(T), align < alignof(T) ? alignof(T) : align));
}

// Frees a block from allocate() (no destructor runs). Null is ignored.
template <class T>
void deallocate(global_ptr<T> p) {
  pgas::detail::heap_deallocate(pgas::detail::as_void(p));
}

// A T constructed in this rank's heap from `args`.
template <class T, class... Args>
global_ptr<T> new_(Args&&... args) {
  global_ptr<T> p = allocate<T>(1);
  try {
    ::new (static_cast<void*>(p.local())) T(std::forward<Args>(args)...);
  } catch (...) {
    deallocate(p);
    throw;
  }
  return p;
}

// Destroys and frees a T from new_ (this rank's). Null is ignored.
template <class T>
void delete_(global_ptr<T> p) {
  if (p.is_null()) return;
  pgas::detail::heap_check_block(pgas::detail::as_void(p));
  std::destroy_at(p.local());
  deallocate(p);
}

// n value-initialised T's in this rank's heap; the count is kept in front of them.
template <class T>
global_ptr<T> new_array(std::size_t n) {
  const std::size_t prefix = pgas::detail::array_prefix(alignof(T));
  global_ptr<void> block =
      pgas::detail::heap_allocate(prefix + n * sizeof(T), alignof(T) < 8 ? 8 : alignof(T));
  auto* base = static_cast<std::byte*>(block.local());
  std::memcpy(base + prefix - sizeof n, &n, sizeof n);
  T* first = reinterpret_cast<T*>(base + prefix);
  std::size_t made = 0;
  try {
    for (; made < n; ++made) ::new (static_cast<void*>(first + made)) T();
  } catch (...) {
    std::destroy_n(first, made);
    pgas::detail::heap_deallocate(block);
    throw;
  }
  return global_ptr<T>(block.where(), block.address() + prefix);
}

// Destroys and frees an array from new_array (this rank's). Null is ignored.
template <class T>
void delete_array(global_ptr<T> p) {
  if (p.is_null()) return;
  const std::size_t prefix = pgas::detail::array_prefix(alignof(T));
  const global_ptr<void> block(p.where(), p.address() - prefix);
  pgas::detail::heap_check_block(block);
  T* first = p.local();
  std::size_t n = 0;
  std::memcpy(&n, reinterpret_cast<const std::byte*>(first) - sizeof n, sizeof n);
  std::destroy_n(first, n);
  pgas::detail::heap_deallocate(block);
}

// This rank's heap.
heap_stats_t heap_stats();

}  // namespace oneside
