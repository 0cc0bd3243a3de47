// One rank's symmetric heap (include/oneside/pgas/symmetric_heap.hpp): segments of exposed
// memory from the transport (in its table of exposed memory, which is how peers reach them),
// carved by a free_list of its own. Every rank makes the same calls on it (the calls are
// collective) and its segments have the same sizes in the same order everywhere, so the
// deterministic free_list hands out every block at the same (segment, offset) on every rank. A
// table of every rank's segment bases, appended to when the heap grows and read without a lock,
// turns a rank's address into another rank's (global_ptr::on).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <oneside/pgas/heap.hpp>
#include <oneside/runtime/team.hpp>

#include "pgas/free_list.hpp"
#include "runtime/transport.hpp"

namespace oneside::pgas::detail {

class symmetric_heap {
 public:
  // Segments a symmetric heap may have; one more is error(no_mem) on every rank.
  static constexpr std::size_t max_segments = 64;

  // Segments of `segment_bytes` (rounded up to pages; larger requests get their own size), at
  // most `cap` bytes in all (0: no cap). Nothing is allocated before the first allocate().
  symmetric_heap(transport::backend& t, const team& world, std::size_t segment_bytes,
                 std::size_t cap);
  symmetric_heap(const symmetric_heap&) = delete;
  symmetric_heap& operator=(const symmetric_heap&) = delete;
  ~symmetric_heap();

  // Collective over the world, one thread per rank at a time (as every collective), with a
  // barrier's semantics: when it returns every rank has its block, at the same offset.
  // Checks that every rank asked for the same bytes and alignment first (error(arg) on every
  // rank otherwise, nothing allocated); grows every rank's heap by a segment of the same size
  // when the block does not fit. Errors, raised on every rank alike and changing nothing:
  // arg (different requests, bad alignment), no_mem (the cap, the segment table or a rank
  // that could not get memory), intern (the heaps diverged: a broken invariant).
  void* allocate(std::size_t bytes, std::size_t align);
  // Collective likewise: frees every rank's copy of the block that (from, addr) names (a
  // block of rank `from`'s symmetric heap, usually this rank's own); null on every rank does
  // nothing but synchronise. Every rank checks before anything is freed that it was given the
  // same block (error(arg) on every rank otherwise) and that the block is live (arg: freed
  // already, not a block, not in the symmetric heap; rank: `from` outside the world).
  void deallocate(rank_t from, std::uintptr_t addr);

  heap_stats_t stats() const;

  // The address in rank `to`'s heap of what lies at `addr` in rank `from`'s, or 0 when
  // `addr` lies in none of from's segments. Ranks must be in the world. Lock-free; any thread.
  std::uintptr_t translate(rank_t from, std::uintptr_t addr, rank_t to) const noexcept;

 private:
  // A segment as every rank has it: the same size, each rank's base.
  struct segment_row {
    std::size_t bytes = 0;
    std::unique_ptr<std::uintptr_t[]> bases;  // by world rank
  };

  // The offset of this rank's `addr` in heap order (segment index << 40 | offset in it), or
  // -1 when it lies in no segment.
  std::int64_t offset_of(std::uintptr_t addr) const noexcept;
  // Adds a segment on every rank (collective): allocates and attaches this rank's, then an
  // allgather of bases, sizes and failures; a failure anywhere fails every rank.
  void grow(std::size_t bytes, std::size_t align);

  transport::backend& transport_;
  const team& world_;
  const rank_t rank_;
  const std::size_t ranks_;
  const std::size_t segment_bytes_;
  const std::size_t cap_;
  free_list list_;
  std::vector<transport::segment> segments_;  // this rank's; changed by collective calls only
  std::size_t total_bytes_ = 0;               // of segments_
  // rows_[0, count_) are complete and never change again: readers load count_ (acquire) and
  // read those rows without a lock.
  std::array<segment_row, max_segments> rows_{};
  std::atomic<std::size_t> count_{0};
};

}  // namespace oneside::pgas::detail
