// The machinery under every collective of one team. Each member owns an *area* in exposed
// shared memory, which the other members pin (map) when the team is made:
//
//   barrier[k]  dissemination-barrier flag of round k, written by member (me - 2^k) mod n
//   consumed    the last step this member finished reading everyone's slots for
//   slot[0..K)  a ring of K staging buffers (ONESIDE_COLL_SLOTS × ONESIDE_COLL_SLOT_BYTES),
//               each starting with the number of the step whose data it holds
//
// A collective is a sequence of *steps*, numbered alike on every member (members run the same
// collectives in the same order). In step s a producer writes its slot s%K and then the slot's
// step word; consumers wait for that, read it, and everyone marks s consumed. Payloads of up
// to 56 bytes sit in the step word's own cache line, so a small step costs a consumer one
// line transfer per producer. A producer may reuse slot
// s%K once every member consumed step s-K, so consecutive steps pipeline: large messages move
// in slot-sized pieces with copy-in and copy-out overlapping. The ring is long (4 × 1 MiB by
// default) for the caches' sake: a slot is rewritten only after readers have moved on to
// enough other memory to have evicted it, so the producer's stores do not have to take the
// lines back from the readers' caches one by one. Measured on the 2-core EPYC machines here
// (1 MiB L2 per core), 2 × 256 KiB slots made 1 MiB broadcasts 4× slower than 4 × 1 MiB. All flags
// are monotonic counters, so nothing is ever reset and a fast member running ahead is harmless.
//
// Every wait goes through the waiting primitive; writers wake the members that may sleep.
// Not thread-safe: one collective at a time per team (as in MPI).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <oneside/runtime/transport.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside::detail {

class coll_engine {
 public:
  // Allocates this member's area. `world_ranks[i]` is member i's world rank.
  // How barrier() synchronizes: dissemination (log2 n rounds of pairwise flags: fastest when
  // every rank has a core) or central (one shared counter and one release flag: fewer
  // dependency chains, so fewer scheduling rounds when ranks outnumber cores).
  enum class barrier_kind : std::uint8_t { dissemination, central };

  coll_engine(transport::backend& t, std::size_t slot_bytes, std::size_t slots, rank_t rank,
              std::vector<rank_t> world_ranks, barrier_kind barrier);
  ~coll_engine();
  coll_engine(const coll_engine&) = delete;
  coll_engine& operator=(const coll_engine&) = delete;

  // Address of this member's area, to be exchanged with the other members.
  std::uintptr_t area_address() const noexcept;
  // Pins every member's area (addresses in member order). Throws error(intern) when a member
  // is not load/store reachable (collectives across nodes arrive with the MPI transport).
  void connect(std::span<const std::uint64_t> areas);

  void barrier();

  // Largest payload of one step.
  std::size_t capacity() const noexcept { return slot_bytes_ - line; }
  std::uint64_t begin_step() noexcept { return ++step_; }
  // Where this member writes a payload of `bytes` for step s, once every member is done with
  // the slot (step s-K). Producer and consumers must pass the same `bytes` (it decides where
  // in the slot the payload sits).
  std::byte* acquire_slot(std::uint64_t s, std::size_t bytes);
  // Marks step s published. Waking sleepers is deferred to this member's next wait or the end
  // of the step (finish), when the fence it needs has little left to wait for.
  void publish(std::uint64_t s);
  void publish(std::uint64_t s, const void* data, std::size_t bytes);
  // Member q's payload of `bytes` for step s, once q published it (q produces in step s).
  const std::byte* peer_slot(rank_t q, std::uint64_t s, std::size_t bytes);
  // This member is done reading step s (and wakes whoever waits for this member).
  void finish(std::uint64_t s);

 private:
  struct alignas(64) flag {
    std::atomic<std::uint64_t> value{0};
  };
  static constexpr std::size_t line = 64;
  static constexpr std::size_t inline_bytes = line - sizeof(std::uint64_t);
  struct area {
    flag barrier[64];
    flag consumed;
    flag arrived;  // central barrier, in member 0's area: arrivals so far, all epochs
    flag release;  // central barrier, in member 0's area: the last completed epoch
  };
  static std::size_t slots_offset() noexcept { return (sizeof(area) + 4095) & ~std::size_t{4095}; }
  area& area_of(rank_t q) const noexcept {
    return *static_cast<area*>(peers_[static_cast<std::size_t>(q)].get());
  }
  std::byte* slot_of(rank_t q, std::uint64_t s) const noexcept {
    return static_cast<std::byte*>(peers_[static_cast<std::size_t>(q)].get()) + slots_offset() +
           (s % slots_) * slot_bytes_;
  }
  std::atomic<std::uint64_t>& step_word(rank_t q, std::uint64_t s) const noexcept {
    return *reinterpret_cast<std::atomic<std::uint64_t>*>(slot_of(q, s));
  }
  // Small payloads share the step word's line; larger ones start at the next line.
  static std::size_t data_offset(std::size_t bytes) noexcept {
    return bytes <= inline_bytes ? sizeof(std::uint64_t) : line;
  }
  std::size_t area_bytes() const noexcept { return slots_offset() + slots_ * slot_bytes_; }
  void wake_others() noexcept;
  void flush_wake() noexcept {
    if (wake_due_) {
      wake_due_ = false;
      wake_others();
    }
  }
  void dissemination_barrier(std::uint64_t epoch);
  void central_barrier(std::uint64_t epoch);

  transport::backend& transport_;
  std::size_t slot_bytes_;
  std::size_t slots_;
  rank_t rank_;
  int size_;
  std::vector<rank_t> world_ranks_;
  std::vector<rank_t> others_;  // world ranks of the other members (for wake-ups)
  barrier_kind barrier_kind_;
  transport::segment own_;
  std::vector<transport::pinned> peers_;
  std::uint64_t step_ = 0;
  std::uint64_t barrier_epoch_ = 0;
  std::uint64_t all_consumed_ = 0;  // every member is known to have consumed up to here
  bool wake_due_ = false;           // something was published since the last wake-up
};

}  // namespace oneside::detail
