// The global heap: each rank's heap is a set of segments of exposed memory from the transport
// (shared memory its node peers map; under MPI also reachable through the job's MPI window),
// served by a linked-list free-list
// allocator (boundary tags, first fit, coalescing, alignment up to 4 KiB). It grows by a
// segment when full (ONESIDE_HEAP_SEGMENT_BYTES, a larger request gets one of its own size)
// up to an optional cap (ONESIDE_HEAP_MAX_BYTES). Every call here is thread-safe and none is
// collective: allocate/new_ serve this rank's heap; allocate_on and deallocate of another
// rank's block ask that rank (an active message its agent answers; the owner's program need
// not call anything). Blocks are reachable by every rank through the global_ptr they come
// as; node peers load and store them directly. The symmetric heap (collective allocation at
// the same offset on every rank) is in symmetric_heap.hpp.
#pragma once

#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include <oneside/pgas/future.hpp>
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
struct heap_request;  // remote_heap.cpp
// A request to a rank's heap (allocate_on) as the future made of it polls it.
class heap_reply {
 public:
  explicit heap_reply(std::shared_ptr<heap_request> r) noexcept : request_(std::move(r)) {}
  // The block once the owner replied (its error raised then, the same class and message);
  // nullopt before. Not called concurrently (the future's poller is not).
  std::optional<global_ptr<void>> poll() const;

 private:
  std::shared_ptr<heap_request> request_;
};
// Asks for `bytes` of `owner`'s heap (remote_heap.cpp; this rank's is served at once):
// error(rank) at once for a rank outside the world; every other error comes from poll().
heap_reply heap_allocate_on(rank_t owner, std::size_t bytes, std::size_t align);
// Frees any rank's block: this rank's at once, another's by asking its owner. Errors fail
// the future, but error(rank) for a rank outside the world is raised at once.
future<> heap_deallocate_async(global_ptr<void> p);
// deallocate(): this rank's block at once, another's through heap_deallocate_async().wait().
void heap_deallocate_any(global_ptr<void> p);
// n * size, or the largest size_t when that overflows (no heap serves it: no_mem).
constexpr std::size_t array_bytes(std::size_t n, std::size_t size) noexcept {
  return size != 0 && n > std::numeric_limits<std::size_t>::max() / size
             ? std::numeric_limits<std::size_t>::max()
             : n * size;
}
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
  return static_pointer_cast<T>(pgas::detail::heap_allocate(
      pgas::detail::array_bytes(n, sizeof(T)), align < alignof(T) ? alignof(T) : align));
}

// Uninitialised storage for n T's in rank `owner`'s heap, as allocate() would give it there,
// without any collective: an active message asks the owner's agent, which answers with the
// block (or, when the heap must grow, hands the request to a thread of the owner's heap that
// grows it). For this rank: a ready future from its own heap. The future is polled: wait(),
// is_ready() and progress() complete it, and its continuations run on the thread that does.
// Errors: rank (owner outside the world) is raised at once; arg (bad alignment, found here)
// and the owner's errors (no_mem at its cap, its message naming its rank and the call) fail
// the future, and wait() rethrows them. Wait for the future before the runtime closes.
template <class T>
future<global_ptr<T>> allocate_on(rank_t owner, std::size_t n = 1, std::size_t align = alignof(T)) {
  static_assert(!std::is_void_v<T> && !std::is_reference_v<T>);
  return pgas::detail::make_pending_future(
      [r = pgas::detail::heap_allocate_on(
           owner, pgas::detail::array_bytes(n, sizeof(T)),
           align < alignof(T) ? alignof(T) : align)]() -> std::optional<global_ptr<T>> {
        const std::optional<global_ptr<void>> p = r.poll();
        if (!p) return std::nullopt;
        return static_pointer_cast<T>(*p);
      });
}

// Frees a block from allocate() or allocate_on() (no destructor runs). Null is ignored.
// Another rank's block is freed by its owner (an active message; its agent frees it) and
// this call waits for the answer. Errors, the heap left as it was: arg (a pointer that is no
// live block of its owner's heap: freed already, interior, foreign; for another rank's block
// the owner's message, naming it), rank (owner outside the world).
template <class T>
void deallocate(global_ptr<T> p) {
  pgas::detail::heap_deallocate_any(pgas::detail::as_void(p));
}

// deallocate() that returns at once: the future completes when the block is free (this
// rank's: before the call returns; another rank's: when its owner answered), or fails with
// the error deallocate() would raise (wait() rethrows it; error(rank) for an owner outside
// the world is raised at once). Polled, like allocate_on's. Wait for it before the runtime
// closes.
template <class T>
future<> deallocate_async(global_ptr<T> p) {
  return pgas::detail::heap_deallocate_async(pgas::detail::as_void(p));
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

// Destroys and frees a T from new_ (this rank's). Null is ignored. Another rank's object
// raises error(rank) and is left alone: its destructor must run at its owner, which is the
// one to delete_ it (deallocate of another rank's block frees memory, it runs no code there).
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
  const std::size_t body = pgas::detail::array_bytes(n, sizeof(T));
  global_ptr<void> block = pgas::detail::heap_allocate(
      body > std::numeric_limits<std::size_t>::max() - prefix ? body : prefix + body,
      alignof(T) < 8 ? 8 : alignof(T));
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

// Destroys and frees an array from new_array (this rank's). Null is ignored. Another rank's
// array raises error(rank), as delete_ does.
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
