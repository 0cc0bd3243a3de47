// The page one rank shares with its node peers in the shm transport: a shared-memory object
// "/oneside.<job>.r<rank>.ctl" that every peer maps when the runtime opens (and whose name
// is removed right after, so it cannot leak). It holds what peers need to reach this rank
// without its help:
//   - doorbells: `main` for the rank's waiting threads, `agent` for its agent thread,
//     `space` for senders waiting on a full message queue;
//   - the segment table: which exposed segments exist (id, address, length), published
//     under a sequence lock so peers can map them lazily and notice withdrawn ones;
//   - applied[o]: the ticket of the last active message from this rank that rank o has
//     applied (written by o's agent), which is how flush and completions learn that an
//     operation is remotely complete;
//   - the active-message queue: a bounded multi-producer ring (D. Vyukov's algorithm).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <oneside/runtime/types.hpp>
#include <oneside/runtime/wait.hpp>

namespace oneside::transport::shm_detail {

inline constexpr std::uint64_t page_magic = 0x4c544345'44495345ULL;  // "ESIDECTL"
inline constexpr std::size_t max_segments = 1024;
inline constexpr std::size_t am_header_bytes = 64;

struct segment_entry {
  std::uint64_t id;    // 0: free
  std::uint64_t base;  // address in the owner's address space
  std::uint64_t len;
};

struct alignas(64) padded_u64 {
  std::atomic<std::uint64_t> value{0};
};

struct am_slot_header {
  std::atomic<std::uint64_t> seq;  // Vyukov ring sequence
  std::uint32_t handler;
  std::uint32_t len;
  std::int32_t source;
  std::uint32_t reserved;
  std::uint64_t ticket;
};
static_assert(sizeof(am_slot_header) <= am_header_bytes);

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
  alignas(64) std::atomic<std::uint64_t> am_enqueue;
  alignas(64) std::atomic<std::uint64_t> am_dequeue;
  alignas(64) segment_entry table[max_segments];
};

// Byte layout of the whole object: header, applied[nranks], then the ring slots.
struct page_layout {
  std::size_t applied_offset;
  std::size_t slots_offset;
  std::size_t total;

  static page_layout of(int nranks, std::size_t slots, std::size_t slot_bytes) noexcept {
    page_layout l{};
    l.applied_offset = (sizeof(page_header) + 63) & ~std::size_t{63};
    l.slots_offset = l.applied_offset + static_cast<std::size_t>(nranks) * sizeof(padded_u64);
    l.slots_offset = (l.slots_offset + 4095) & ~std::size_t{4095};
    l.total = l.slots_offset + slots * slot_bytes;
    return l;
  }
};

// A mapped rank page (ours or a peer's).
struct page_view {
  page_header* header = nullptr;
  padded_u64* applied = nullptr;
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
