// The global heap's allocator: a linked-list free list over arenas it does not own (the
// heap's segments). Address-ordered first fit over one doubly linked list of free blocks;
// boundary tags (a header and a footer word per block) let a freed block coalesce with both
// neighbours in O(1); alignments up to 4 KiB. Misuse (double free, foreign or interior
// pointers) is recognised before anything changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "pgas/spin_lock.hpp"

namespace oneside::pgas::detail {

// What stats() reports. The bytes add up: total = used + free + arena_count * arena_overhead.
struct free_list_stats {
  std::size_t total_bytes = 0;   // sum of the arenas' sizes
  std::size_t used_bytes = 0;    // live blocks, their tags and rounding included
  std::size_t free_bytes = 0;    // free blocks, their tags included
  std::size_t largest_free = 0;  // the most bytes one allocate(n, 16) can get now
  std::size_t arena_count = 0;
  std::size_t live_blocks = 0;
  std::size_t free_blocks = 0;

  bool operator==(const free_list_stats&) const = default;
};

// Block layout (every block starts 8 bytes past a multiple of 16, its size a multiple of 16):
//
//   [ header word | payload (16-aligned) ... | footer word ]      live block
//   [ header word | next | prev | ...        | footer word ]      free block
//
// header == footer == cookie (24 bits from the header's address) | size | in-use bit, so a
// block is 16 bytes of tags plus its payload, 32 bytes at least (16 usable). Each arena
// starts and ends with a fence word (an in-use block of size 0), so coalescing never looks
// past an arena and adjacent arenas are never merged.
//
// Order: the free list is ordered by heap offset, i.e. by arena in order of addition and by
// address within an arena. So results depend only on the sequence of calls and on the sizes
// and order of the arenas, never on where the arenas lie: identical call sequences on arenas
// at different addresses return blocks at identical (arena, offset) pairs. The symmetric heap
// relies on this. (Within one arena this is plain address order.)
//
// Misuse: a pointer is accepted only if its header word carries the cookie of its own
// address, the in-use bit, a size inside its arena and an equal footer word. Freed blocks
// keep their header word (in-use bit cleared) even after being merged into a neighbour, so a
// second free of the same pointer is reported as such until that memory is handed out again
// and overwritten. Not detectable (the checks are O(1)): a stale pointer whose address starts
// a live block again after reuse, and user data forging both tags with the right cookie.
//
// Reservation: an arena may come with only part of its memory safe to touch (the heap's
// segments are reserved in shared memory as they are used: a store to an unreserved page of a
// full /dev/shm is a SIGBUS). The list then tracks how far from its start each arena is
// reserved and, before it writes past that or hands out a block reaching past it, calls the
// reserve function (outside its lock) for the next stretch; when that fails, the allocation
// fails and nothing changes. Only first fit's steady climb through a fresh arena costs such a
// call, one per reserve_ahead bytes.
//
// Thread-safety: every member function may be called concurrently (one spin_lock; each call
// holds it for O(1) work plus the list walk of first fit or of an insertion).
class free_list {
 public:
  static constexpr std::size_t arena_alignment = 4096;  // of an arena's base and size
  static constexpr std::size_t max_alignment = 4096;
  static constexpr std::size_t block_overhead = 16;  // header and footer of a block
  static constexpr std::size_t arena_overhead = 16;  // the fence words at an arena's ends
  static constexpr std::size_t min_block = 32;       // bytes of the smallest block, tags included
  static constexpr std::size_t max_arena_bytes = std::size_t{1} << 40;
  static constexpr std::size_t reserve_ahead = std::size_t{1} << 20;  // reserved at a time

  // Makes [offset, offset + bytes) of the arena at `base` safe to touch (page multiples), or
  // raises (error no_mem naming `call`) having reserved nothing more.
  using reserve_fn =
      std::function<void(void* base, std::size_t offset, std::size_t bytes, std::string_view call)>;

  free_list() = default;
  free_list(const free_list&) = delete;
  free_list& operator=(const free_list&) = delete;

  // The reserve function of arenas added with part of their memory unreserved. Set it once,
  // before the first such arena.
  void set_reserve(reserve_fn reserve) { reserve_ = std::move(reserve); }

  // Hands [base, base + bytes) to the allocator; it stays in use until the free_list is
  // destroyed (the free_list never frees or unmaps it). One free block of
  // bytes - arena_overhead - block_overhead usable bytes appears, after every earlier arena
  // in first-fit order. The first `reserved` bytes of the arena (rounded down to pages, at
  // least one) and its last page are safe to touch already, all of it by default; the rest is
  // reserved through the reserve function as blocks reach it. Errors: arg (base null or not
  // 4096-aligned, bytes zero, not a multiple of 4096 or above max_arena_bytes, overlap with an
  // arena of this list, less than a page reserved, or part unreserved without a reserve
  // function).
  void add_arena(void* base, std::size_t bytes, std::size_t reserved = SIZE_MAX);

  // How many bytes from the start of a fresh arena allocate(bytes, align) writes to at most:
  // what to reserve of an arena added for that one block.
  static std::size_t first_block_extent(std::size_t bytes, std::size_t align) noexcept;

  // A block of at least `bytes` usable bytes (0 is allowed and gets a block of its own)
  // whose address is a multiple of `align`: the first free block in heap order that can hold
  // it, split when the rest can make a block. Returns nullptr when no free block fits (add an
  // arena and retry). Errors: arg (align not a power of two from 1 to 4096); what the reserve
  // function raises when the block reaches memory not reserved yet and it cannot be (no_mem,
  // naming `call`); nothing changed on error.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t align = 16,
                               std::string_view call = "allocate");
  // allocate(), but never reserving: null also when the block would reach memory not
  // reserved yet (for callers that must not make system calls).
  [[nodiscard]] void* try_allocate(std::size_t bytes, std::size_t align = 16);

  // Frees a block from allocate(); merges it with free neighbours. nullptr is ignored.
  // Errors, raised before anything changes: arg ("was freed already"; "is not a block of
  // this heap" for a pointer outside every arena or not the start of a live block).
  void deallocate(void* p);

  // Usable bytes of the live block at p (at least what allocate() was asked for).
  // Errors: those of deallocate, nullptr included.
  std::size_t block_size(const void* p) const;
  // The checks of deallocate (same errors, naming `call`), changing nothing.
  void check_block(const void* p, std::string_view call) const;

  free_list_stats stats() const;

  // Walks every arena through the boundary tags and the free list and raises intern naming
  // the first violation: fence words intact, header == footer with the right cookie, blocks
  // tile each arena exactly, no two adjacent free blocks, the list (and each arena's part of
  // it) holds exactly the free blocks in heap order with consistent back links, counters
  // match. O(blocks).
  void check_consistency() const;

 private:
  struct arena {
    std::byte* base;
    std::size_t bytes;
    std::byte* first_free;  // this arena's part of the list: first and last free block, or null
    std::byte* last_free;
    // [base, reserved_end) and the last page are safe to touch (UINTPTR_MAX: all of it, so
    // that the check of a block against it is one comparison).
    std::uintptr_t reserved_end;
  };

  // What allocate_in could not take because it reaches unreserved memory: arena `ai` must be
  // reserved from offset `from` up to offset `to` first.
  struct shortfall {
    std::size_t ai = SIZE_MAX;
    std::size_t from = 0;
    std::size_t to = 0;
  };
  // First fit under the lock; takes the block unless it reaches unreserved memory (null and
  // `*missing` set then). Inline (see below): allocate stays one call.
  inline void* allocate_in(std::size_t bytes, std::size_t align, shortfall* missing);
  // Reserves what `m` names ahead by up to reserve_ahead bytes, then records it.
  void reserve_for(const shortfall& m, std::string_view call);

  // An arena's address range; by_address_ keeps them sorted by base for arena lookups, the
  // bounds inline so that finding a pointer's arena reads one array.
  struct arena_range {
    std::byte* base;
    std::size_t bytes;
    std::size_t index;  // into arenas_
  };

  // What a pointer given to deallocate or block_size is; only `live` has a block, its arena
  // and its header word.
  enum class pointer_kind : std::uint8_t { live, null, in_no_arena, misplaced, freed, damaged };
  struct lookup {
    pointer_kind kind;
    std::byte* block;
    std::size_t arena;
    std::uint64_t tag;
  };

  // The hot paths' helpers are inline (defined in free_list.cpp, their only user), so that
  // allocate and deallocate are one call each.
  inline const arena_range* range_of(const void* p) const noexcept;  // null: in no arena
  inline lookup find_block(const void* p) const noexcept;
  // Raises arg naming `call` for a pointer find_block did not find live.
  [[noreturn]] static void reject(pointer_kind kind, const void* p, std::string_view call);
  // Makes a live block of `need` bytes at b + lead inside the free block b (header `tag`).
  inline void take(std::size_t ai, std::byte* b, std::uint64_t tag, std::size_t lead,
                   std::size_t need);
  void insert(std::size_t ai, std::byte* b);
  void unlink(arena& a, std::byte* b) noexcept;
  void replace(arena& a, std::byte* old_block, std::byte* b) noexcept;
  void join(std::byte* p, std::byte* n) noexcept;
  void link(std::byte* p, std::byte* n, std::byte* b) noexcept;

  reserve_fn reserve_;  // set before use, read only afterwards
  mutable spin_lock lock_;
  std::vector<arena> arenas_;            // in order of addition (= heap order)
  std::vector<arena_range> by_address_;  // every arena's range, by base address
  std::byte* head_ = nullptr;            // the first free block in heap order
  std::size_t total_bytes_ = 0;
  std::size_t used_bytes_ = 0;
  std::size_t live_blocks_ = 0;
  std::size_t free_blocks_ = 0;
};

}  // namespace oneside::pgas::detail
