// The machinery under every collective of one team. Each member owns an *area* in exposed
// memory, allocated when the team is made; the members exchange the areas' addresses. How the
// members reach each other's areas decides the mode, the same on every member: *pull* when
// every member is load/store reachable from every other (all are in transport node_ranks()),
// *push* otherwise (some member is on another node).
//
// Pull mode: every member pins every area and reads the producers' slots where they are.
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
// Push mode: a member only ever waits on its own area; the others write into it with
// transport put (payloads) and amo (store/add on the u64 words waited on: a put may tear, and
// a torn word could end a wait early). The area holds
//
//   barrier[k]      as in pull mode (the partner stores the epoch with an amo)
//   arrived         central barrier, member 0 only: the others add 1 per barrier (amo add)
//   release         central barrier: the last completed epoch, stored by member 0
//   consumed_by[q]  the last step member q finished, stored by q after reading our data
//   mirror[p][0..K) member p's ring as far as this member reads it: p puts the payload bytes
//                   this member needs (only those) and then stores the step word; row
//                   mirror[me] is this member's own staging ring, the source of its puts
//
// Publishing step s to reader q: wait (locally) until consumed_by[q] reaches the step last put
// into mirror[me][s%K] at q; put the payload; flush(q) (puts are unordered and invisible until
// flushed); amo-store the step word; the flush and wake that make the step word visible and
// rouse q are deferred to this member's next wait or the end of its step (finish), so they
// overlap with other work. To a member this process cannot reach, payload and step word
// travel instead as one active message whose handler stores both and wakes (when they fit in
// one). finish(s) stores s into consumed_by[me] of every producer this
// member read since its last report, flushes and wakes. Each step names its readers (and the
// part of the payload each needs), so rooted collectives move data only where it is needed
// and a member reports only to the producers it read (a named reader that never reads would
// stall the producer). The ring is kept small, because
// every member mirrors every producer (n × K slots): slots of min(ONESIDE_COLL_SLOT_BYTES,
// 64 KiB), smaller still when n × K × slot would exceed 8 MiB (never below 4 KiB). A member
// frees its area only once every reader reported reading the last step pushed to it, so no
// late report lands in freed memory (every other write into an area is waited for).
//
// Every wait goes through the waiting primitive; writers wake the members that may sleep.
// A member this process cannot reach applies the amo itself and wakes its own waiters
// (transport::backend::amo), so the deferred flush and wake are only for members the
// transport reaches directly: over a network one message per word, not three.
// Not thread-safe: one collective at a time per team (as in MPI).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <oneside/runtime/types.hpp>

#include "runtime/transport.hpp"

namespace oneside::detail {

class coll_engine {
 public:
  // How barrier() synchronizes: dissemination (log2 n rounds of pairwise flags: fastest when
  // every rank has a core) or central (one shared counter and one release flag: fewer
  // dependency chains, so fewer scheduling rounds when ranks outnumber cores).
  enum class barrier_kind : std::uint8_t { dissemination, central };

  // Allocates this member's area. `world_ranks[i]` is member i's world rank. Push mode when
  // some member is not in the transport's node_ranks() (every member decides alike).
  coll_engine(transport::backend& t, std::size_t slot_bytes, std::size_t slots, rank_t rank,
              std::vector<rank_t> world_ranks, barrier_kind barrier);
  // In push mode, waits until every reader reported the steps pushed to it (see above).
  ~coll_engine();
  coll_engine(const coll_engine&) = delete;
  coll_engine& operator=(const coll_engine&) = delete;

  // Address of this member's area, to be exchanged with the other members.
  std::uintptr_t area_address() const noexcept;
  // Takes every member's area address (in member order). Pull mode pins them all; throws
  // error(intern) when a member the transport called reachable cannot be pinned.
  void connect(std::span<const std::uint64_t> areas);

  bool is_push() const noexcept { return push_; }

  void barrier();

  // Largest payload of one step.
  std::size_t capacity() const noexcept { return slot_bytes_ - line; }
  std::uint64_t begin_step() noexcept { return ++step_; }
  // Where this member writes a payload of `bytes` for step s, once the slot may be reused
  // (pull: every member is done with step s-K; push: at once, the slot is local). Producer and
  // consumers must pass the same `bytes` (it decides where in the slot the payload sits).
  std::byte* acquire_slot(std::uint64_t s, std::size_t bytes);

  // The bytes [offset, offset + bytes) of a step's payload (clipped to it), which one reader
  // needs. `whole` is all of it.
  struct part {
    std::size_t offset;
    std::size_t bytes;
  };
  static constexpr part whole{0, SIZE_MAX};

  // Marks step s published, for every other member to read all of it. Waking sleepers is
  // deferred to this member's next wait or the end of the step (finish), when the fence it
  // needs has little left to wait for.
  void publish(std::uint64_t s);
  void publish(std::uint64_t s, const void* data, std::size_t bytes);
  // The same for the readers `part_of` names: part_of(q) is the part member q reads, or
  // nullopt when q does not read this step (q then must not call peer_slot for it; every
  // member it names must). Pull mode ignores it; push mode moves only those bytes.
  template <class PartOf>
  void publish_to(std::uint64_t s, PartOf&& part_of) {
    if (!push_) {
      publish(s);
      return;
    }
    targets_.clear();
    for (rank_t q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      if (const std::optional<part> p = part_of(q)) targets_.push_back({q, *p});
    }
    push_step(s);
  }
  template <class PartOf>
  void publish_to(std::uint64_t s, const void* data, std::size_t bytes, PartOf&& part_of) {
    stage(s, data, bytes);
    publish_to(s, part_of);
  }

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
    flag consumed;  // pull mode only
    flag arrived;   // central barrier, in member 0's area: arrivals so far, all epochs
    flag release;   // central barrier, in member 0's area (push: in everyone's): last epoch
  };
  struct target {
    rank_t member;
    part what;
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
  std::size_t area_bytes() const noexcept {
    return push_ ? mirror_offset() + static_cast<std::size_t>(size_) * slots_ * slot_bytes_
                 : slots_offset() + slots_ * slot_bytes_;
  }
  void wake_others() noexcept;
  void flush_wake() noexcept {
    if (wake_due_) {
      wake_due_ = false;
      wake_others();
    }
  }
  void dissemination_barrier(std::uint64_t epoch);
  void central_barrier(std::uint64_t epoch);

  // ---- push mode ----
  std::byte* own_base() const noexcept { return static_cast<std::byte*>(own_.base()); }
  area& own_area() const noexcept { return *static_cast<area*>(own_.base()); }
  // Offsets inside an area, alike in every member's.
  std::size_t offset_in_area(const void* p) const noexcept {
    return static_cast<std::size_t>(static_cast<const std::byte*>(p) - own_base());
  }
  std::size_t mirror_offset() const noexcept {
    return (sizeof(area) + static_cast<std::size_t>(size_) * line + 4095) & ~std::size_t{4095};
  }
  std::size_t mirror_slot_offset(rank_t producer, std::uint64_t s) const noexcept {
    return mirror_offset() +
           (static_cast<std::size_t>(producer) * slots_ + s % slots_) * slot_bytes_;
  }
  std::atomic<std::uint64_t>& consumed_by(rank_t q) const noexcept {
    return reinterpret_cast<flag*>(own_base() + sizeof(area))[q].value;
  }
  std::atomic<std::uint64_t>& mirror_word(rank_t producer, std::uint64_t s) const noexcept {
    return *reinterpret_cast<std::atomic<std::uint64_t>*>(own_base() +
                                                          mirror_slot_offset(producer, s));
  }
  rank_t world_of(rank_t q) const noexcept { return world_ranks_[static_cast<std::size_t>(q)]; }
  void stage(std::uint64_t s, const void* data, std::size_t bytes);
  void push_step(std::uint64_t s);
  // amo(op) of `value` on the u64 at `offset` of member q's area; q is flushed and woken at
  // the next settle().
  void push_word(rank_t q, std::size_t offset, transport::amo_op op, std::uint64_t value);
  void mark_dirty(rank_t q);
  // Makes every pushed word visible (flush) and wakes its owners.
  void settle();
  void push_dissemination_barrier(std::uint64_t epoch);
  void push_central_barrier(std::uint64_t epoch);

  transport::backend& transport_;
  std::size_t slot_bytes_;
  std::size_t slots_;
  rank_t rank_;
  int size_;
  std::vector<rank_t> world_ranks_;
  std::vector<rank_t> others_;  // world ranks of the other members (for wake-ups)
  barrier_kind barrier_kind_;
  bool push_ = false;
  transport::segment own_;
  std::vector<transport::pinned> peers_;
  std::uint64_t step_ = 0;
  std::uint64_t barrier_epoch_ = 0;
  std::uint64_t all_consumed_ = 0;  // every member is known to have consumed up to here
  bool wake_due_ = false;           // something was published since the last wake-up

  // Push mode, indexed by member.
  std::vector<std::uint64_t> remote_;    // area addresses
  std::vector<std::uint64_t> written_;   // [q*K + j]: the step last pushed to q's mirror slot j
  std::vector<std::uint64_t> pushed_;    // the last step pushed to q
  std::vector<std::uint64_t> read_;      // the last step read from q
  std::vector<std::uint64_t> reported_;  // the last step reported to q as consumed
  std::vector<std::size_t> staged_;      // [j]: payload bytes staged in own slot j
  std::vector<target> targets_;          // readers of the step being published
  std::vector<char> dirty_;              // q has words pushed but not yet flushed and woken
  std::vector<char> owner_wakes_;        // q applies our words itself, waking its waiters
  std::vector<std::byte> push_buffer_;   // one pushed step as an active message
  std::vector<rank_t> dirty_world_;      // world ranks of those members
};

}  // namespace oneside::detail
