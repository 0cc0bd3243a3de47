// The launcher-to-rank protocol. oneside-run creates one shared-memory object per job,
// "/oneside.<job>.boot", before it starts the ranks, and passes in the environment
// ONESIDE_JOB_ID, ONESIDE_RANK, ONESIDE_SIZE, ONESIDE_LOCAL_RANK, ONESIDE_LOCAL_SIZE and
// ONESIDE_BINDING (see settings.cpp). The ranks use the object for their bootstrap: a
// barrier and fixed-size record exchange, before any transport exists.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <oneside/runtime/wait.hpp>

#include "progress/wait_record.hpp"

namespace oneside::detail {

inline constexpr std::uint64_t boot_magic = 0x314544495345'4e4fULL;  // "ONESIDE1"
inline constexpr std::uint32_t boot_version = 3;
inline constexpr std::size_t boot_slot_bytes = 4096;

struct boot_header {
  std::uint64_t magic;
  std::uint32_t version;
  std::int32_t size;
  std::uint32_t slot_bytes;
  std::uint32_t reserved;
  alignas(64) std::atomic<std::uint32_t> arrived;     // ranks in the current barrier
  alignas(64) std::atomic<std::uint32_t> generation;  // bumped when a barrier completes
  alignas(64) doorbell bell;                          // barrier waiters sleep here
};

inline constexpr std::size_t boot_slots_offset = 256;
static_assert(sizeof(boot_header) <= boot_slots_offset);

// What each rank did with the runtime, for the launcher: a rank that exits with status 0 while
// its runtime is open (opened, never closed) leaves the others waiting for it, and fails the job.
enum class runtime_state : std::uint32_t { not_opened = 0, open = 1, closed = 2 };

// One per rank, after the slots.
struct boot_rank {
  std::atomic<std::uint32_t> state;  // a runtime_state
  // The process that joined the job as this rank (0: none yet). Processes it starts inherit
  // the launcher's variables; finding the rank taken, they start jobs of their own.
  std::atomic<std::int32_t> owner;
  // What the rank's long waits tell the launcher (hang check, oneside-run --dump).
  wait_record waits;
};

constexpr std::size_t boot_ranks_offset(int size) noexcept {
  return boot_slots_offset + static_cast<std::size_t>(size) * boot_slot_bytes;
}

constexpr std::size_t boot_segment_bytes(int size) noexcept {
  return boot_ranks_offset(size) + static_cast<std::size_t>(size) * sizeof(boot_rank);
}

// Rank r's record in a mapped boot object of `size` ranks.
inline boot_rank& boot_rank_of(void* mem, int size, int r) noexcept {
  return reinterpret_cast<boot_rank*>(static_cast<std::byte*>(mem) + boot_ranks_offset(size))[r];
}

// Fills in the header of a freshly created (zeroed) boot object. Called by the launcher.
void init_boot_segment(void* mem, int size) noexcept;

}  // namespace oneside::detail
