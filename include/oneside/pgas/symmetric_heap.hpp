// The symmetric heap, as OpenSHMEM's shmem_malloc/shmem_free: symmetric_allocate is collective
// over the world and gives every rank a block of its own at the same offset of its own
// symmetric heap, so a pointer to this rank's block names every rank's copy through
// p.on(r). Each rank's symmetric heap is separate from its global heap (heap.hpp): segments
// of ONESIDE_HEAP_SEGMENT_BYTES (larger requests get one of their own size) of exposed memory
// from the transport, added on every rank at once when a block does not fit, within a
// budget of ONESIDE_HEAP_MAX_BYTES of its own (0: none) and at most 64 segments. Node peers
// load and store the blocks directly (global_ptr::local()).
#pragma once

#include <cstddef>
#include <type_traits>

#include <oneside/pgas/global_ptr.hpp>
#include <oneside/pgas/heap.hpp>

namespace oneside {

namespace pgas::detail {
global_ptr<void> symmetric_allocate_bytes(std::size_t bytes, std::size_t align);
void symmetric_free_block(global_ptr<void> p);
}  // namespace pgas::detail

// Uninitialised storage for n T's on every rank, aligned to `align` (at least alignof(T), a
// power of two up to 4096), at the same offset of every rank's symmetric heap; returns this
// rank's block (p.on(r) is rank r's). Collective over the world with a barrier's semantics:
// every rank calls it with the same n and align (and T), one thread per rank at a time as
// for every collective, and when it returns on any rank every rank has its block. Errors,
// raised on every rank alike with nothing allocated: arg (the ranks passed different sizes
// or alignments; a bad alignment), no_mem (the budget or the 64 segments would be exceeded,
// or a rank could not get memory).
template <class T>
global_ptr<T> symmetric_allocate(std::size_t n = 1, std::size_t align = alignof(T)) {
  static_assert(!std::is_void_v<T> && !std::is_reference_v<T>);
  return static_pointer_cast<T>(pgas::detail::symmetric_allocate_bytes(
      pgas::detail::array_bytes(n, sizeof(T)), align < alignof(T) ? alignof(T) : align));
}

// Frees the block of a symmetric_allocate on every rank (no destructor runs). Collective over
// the world with a barrier's semantics: every rank passes a pointer to the same block (its
// own copy, or any rank's: p.on(r) names the same block), or null on every rank (then only
// the barrier). Errors, raised on every rank alike with nothing freed: arg (the ranks named
// different blocks; the block is freed already, is not the start of a block or lies outside
// the symmetric heap, on some rank), rank (a pointer's rank outside the world).
template <class T>
void symmetric_free(global_ptr<T> p) {
  pgas::detail::symmetric_free_block(pgas::detail::as_void(p));
}

// This rank's symmetric heap (the same figures on every rank while they make the same calls).
heap_stats_t symmetric_heap_stats();

}  // namespace oneside
