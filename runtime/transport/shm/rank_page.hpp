// The page one rank shares with its node peers in the shm transport: a shared-memory object
// "/oneside.<job>.r<rank>.ctl" that every peer maps when the runtime opens (and whose name
// is removed right after, so it cannot leak). It holds what peers need to reach this rank
// without its help:
//   - doorbells: `main` for the rank's waiting threads, `agent` for its agent thread,
//     `space` for senders waiting on a full message queue;
//   - the table of exposed memory: every segment (id, address, length), which peers map
//     lazily, and every exposure of user memory (its whole range, flagged: reached by
//     cross-memory attach or inline messages, not mapped), published under a sequence lock
//     so peers notice new and withdrawn ones;
//   - applied[o]: the ticket of the last active message from this rank that rank o has
//     applied (written by o's agent), which is how flush and completions learn that an
//     operation is remotely complete;
//   - reply slots: where a target's agent writes what this rank's inline gets and fetching
//     atomics asked it for, before it stores their ticket in applied[];
//   - the active-message queue: a bounded multi-producer ring (D. Vyukov's algorithm).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <oneside/runtime/types.hpp>
#include <oneside/runtime/wait.hpp>

#include "runtime/transport.hpp"

namespace oneside::transport::shm_detail {

inline constexpr std::uint64_t page_magic = 0x4c544345'44495345ULL;  // "ESIDECTL"
inline constexpr std::size_t max_segments = 1024;
inline constexpr std::size_t am_header_bytes = 64;

struct segment_entry {
  std::uint64_t id;    // 0: free; exposure_flag: an exposure's range, not a mapped object;
                       // moved_flag: an object of user pages an exposure moved (its id's)
  std::uint64_t base;  // address in the owner's address space
  std::uint64_t len;
};
inline constexpr std::uint64_t exposure_flag = std::uint64_t{1} << 63;
// The pages of exposure `id` moved into shared memory in place: peers map the object (named by
// the id without the flag) but reach through it only the bytes inside that exposure's own
// range. The rest of its edge pages is other data of the owner, which may stay shared longer
// or shorter than the exposure (another exposure's, or none), so it is reached as unexposed
// memory: a peer never keeps loading and storing bytes that are about to become private
// again under its feet.
inline constexpr std::uint64_t moved_flag = std::uint64_t{1} << 62;

struct alignas(64) padded_u64 {
  std::atomic<std::uint64_t> value{0};
};

// What a message asks of its target's agent: run a registered handler, or one of the
// backend's own operations on the target's memory, for memory the origin does not load and
// store (inline: small transfers in the message itself instead of a cross-memory attach).
enum message_kind : std::uint32_t { kind_handler = 0, kind_put = 1, kind_get = 2, kind_amo = 3 };

struct am_slot_header {
  std::atomic<std::uint64_t> seq;  // Vyukov ring sequence
  std::uint32_t handler;           // kind_handler
  std::uint32_t len;
  std::int32_t source;
  std::uint32_t kind;  // message_kind
  std::uint64_t ticket;
};
static_assert(sizeof(am_slot_header) <= am_header_bytes);

// Replies: the target's agent writes them into the origin's page, then stores the message's
// ticket in applied[target] (release), so the origin reads them once that ticket is applied.
inline constexpr std::uint32_t reply_slot_count = 64;
inline constexpr std::size_t reply_bytes = 256;
inline constexpr std::uint32_t no_reply = ~std::uint32_t{0};
struct alignas(64) reply_slot {
  std::byte data[reply_bytes];
};

// The payloads of the inline kinds:
//   kind_put: inline_head{count, no_reply}, count x inline_piece, the pieces' bytes in order
//   kind_get: inline_head{count, reply slot}, count x inline_piece; the agent writes the
//             pieces' bytes, in order, into the reply slot (at most reply_bytes in all)
//   kind_amo: inline_amo; the old value goes into the reply slot unless it is no_reply
struct inline_head {
  std::uint32_t count;
  std::uint32_t reply;
};
struct inline_piece {
  std::uint64_t addr;  // in the target's address space
  std::uint64_t len;
};
struct inline_amo {
  std::uint64_t addr;
  amo_args args;
  std::uint32_t reply;
};
// Set while this thread runs messages (drain): what their handlers send is complete when they
// return (the transport's rule for handlers), so it does not go inline (a put would wait in
// the target's queue; a get would wait for an agent that may be waiting for this one).
inline thread_local bool t_serving = false;

struct page_header {
  std::uint64_t magic;
  std::int32_t rank;
  std::int32_t pid;
  std::uint32_t am_slots;
  std::uint32_t am_slot_bytes;
  std::uint32_t nranks;
  std::uint32_t reserved;
  alignas(64) oneside::detail::doorbell main_bell;
  alignas(64) oneside::detail::doorbell agent_bell;
  alignas(64) oneside::detail::doorbell space_bell;
  alignas(64) std::atomic<std::uint64_t> table_version;  // odd while being changed
  std::atomic<std::uint64_t> table_count;                // entries in use: [0, count)
  // Moves of this rank's pages between private and shared memory (page_move.hpp) and peers'
  // cross-memory writes into this rank exclude each other: such a write pins the pages it
  // writes and copies into them afterwards, so a page replaced in between would take the write
  // with it. A writer counts itself in, then backs off while a move is under way; a mover
  // raises its flag, then waits until no writer is in (both sides sequentially consistent).
  alignas(64) std::atomic<std::uint32_t> pages_moving;  // 1 while this rank moves pages
  std::atomic<std::uint32_t> cma_writers;               // peers' writes into this rank in flight
  oneside::detail::doorbell move_bell;                  // rung when either goes down
  alignas(64) std::atomic<std::uint64_t> am_enqueue;
  alignas(64) std::atomic<std::uint64_t> am_dequeue;
  alignas(64) segment_entry table[max_segments];
};

// The two sides of page_header's exclusion of page moves and cross-memory writes. A writer's:
// a cross-memory write into `owner`'s memory, counted in while it runs: the owner moves no
// page meanwhile, and the write waits for a move under way (page_header::pages_moving).
class counted_write {
 public:
  explicit counted_write(page_header& owner) noexcept : h_(owner) {
    for (;;) {
      h_.cma_writers.fetch_add(1, std::memory_order_seq_cst);
      if (h_.pages_moving.load(std::memory_order_seq_cst) == 0) return;
      leave();
      oneside::detail::wait_until(
          h_.move_bell, [&] { return h_.pages_moving.load(std::memory_order_acquire) == 0; });
    }
  }
  ~counted_write() { leave(); }
  counted_write(const counted_write&) = delete;
  counted_write& operator=(const counted_write&) = delete;

 private:
  void leave() noexcept {
    h_.cma_writers.fetch_sub(1, std::memory_order_seq_cst);
    oneside::detail::notify_after_rmw(h_.move_bell);
  }
  page_header& h_;
};

// The mover's: holds peers' cross-memory writes into this rank off while its pages move, once the
// writes under way are done (page_header::pages_moving). Waits in place: the caller holds
// segments_mutex_, so its wait must not be handed to a fiber or task host.
class moving_pages {
 public:
  explicit moving_pages(page_header& own) noexcept : h_(own) {
    h_.pages_moving.store(1, std::memory_order_seq_cst);
    auto drained = [&] { return h_.cma_writers.load(std::memory_order_seq_cst) == 0; };
    if (drained()) return;
    oneside::detail::backoff b(h_.move_bell);
    oneside::detail::wait_with(b, drained);
  }
  ~moving_pages() {
    h_.pages_moving.store(0, std::memory_order_seq_cst);
    oneside::detail::notify(h_.move_bell);
  }
  moving_pages(const moving_pages&) = delete;
  moving_pages& operator=(const moving_pages&) = delete;

 private:
  page_header& h_;
};

// Byte layout of the whole object: header, applied[nranks], the reply slots, then the ring
// slots.
struct page_layout {
  std::size_t applied_offset;
  std::size_t replies_offset;
  std::size_t slots_offset;
  std::size_t total;

  static page_layout of(int nranks, std::size_t slots, std::size_t slot_bytes) noexcept {
    page_layout l{};
    l.applied_offset = (sizeof(page_header) + 63) & ~std::size_t{63};
    l.replies_offset = l.applied_offset + static_cast<std::size_t>(nranks) * sizeof(padded_u64);
    l.slots_offset = l.replies_offset + reply_slot_count * sizeof(reply_slot);
    l.slots_offset = (l.slots_offset + 4095) & ~std::size_t{4095};
    l.total = l.slots_offset + slots * slot_bytes;
    return l;
  }
};

// A mapped rank page (ours or a peer's).
struct page_view {
  page_header* header = nullptr;
  padded_u64* applied = nullptr;
  reply_slot* replies = nullptr;
  std::byte* slots = nullptr;

  am_slot_header& slot(std::uint64_t pos) const noexcept {
    const std::uint64_t i = pos % header->am_slots;
    return *reinterpret_cast<am_slot_header*>(slots + i * header->am_slot_bytes);
  }
  std::byte* payload(am_slot_header& s) const noexcept {
    return reinterpret_cast<std::byte*>(&s) + am_header_bytes;
  }
};

}  // namespace oneside::transport::shm_detail
