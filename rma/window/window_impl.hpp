// What a window is made of: this member's memory and control block, a view of every target
// (where its memory is, whether node peers reach it directly, its control block and stripe
// table), the epoch state, the hints, and — for dynamic windows — the attached regions.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/transport.hpp>

#include "state/rma_state.hpp"

namespace oneside::rma::detail {

inline constexpr std::size_t max_regions = 1024;  // attached regions per member (dynamic)

struct region_entry {
  std::uint64_t base;
  std::uint64_t len;
};

// One per member per window, in exposed memory. Peers change it with atomics (lock word) or
// read it under its sequence lock (regions), never with the owner's help.
struct ctl_block {
  alignas(64) std::atomic<std::uint64_t> lock{0};  // exclusive bit | shared holders
  std::atomic<std::uint32_t> lock_waiters{0};      // ranks waiting for the lock (to wake them)
  alignas(64) std::atomic<std::uint64_t> regions_version{0};  // odd while changing
  std::atomic<std::uint64_t> region_count{0};
  region_entry regions[max_regions];
};
inline constexpr std::uint64_t lock_exclusive = std::uint64_t{1} << 63;

// Right after each member's ctl_block, the PSCW counters: two arrays with one word per member
// of the window. They only grow, so successive epochs match in order (SYN-13):
//   posted[r]    posts of member r whose group held this member (r adds 1; this member's
//                access to r in its k-th epoch including r waits until posted[r] >= k);
//   completed[r] completes of member r's access epochs that included this member (r adds 1;
//                this member's k-th wait covering r waits until completed[r] >= k).
inline std::atomic<std::uint64_t>* pscw_posted(ctl_block* c) noexcept {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(c + 1);
}
inline std::atomic<std::uint64_t>* pscw_completed(ctl_block* c, int members) noexcept {
  return pscw_posted(c) + members;
}
// Bytes of one member's control block with its PSCW counters, in whole pages.
inline std::size_t ctl_bytes(int members) noexcept {
  const std::size_t raw =
      sizeof(ctl_block) + 2 * static_cast<std::size_t>(members) * sizeof(std::uint64_t);
  return (raw + 4095) & ~std::size_t{4095};
}
static_assert(sizeof(ctl_block) % alignof(std::atomic<std::uint64_t>) == 0);

// A region of a dynamic window as an origin sees it.
struct region_view {
  std::uintptr_t base;
  std::size_t len;
  std::byte* direct;  // load/store pointer to base, or null (cross-memory attach / agent)
  transport::pinned pin;
};
// The regions of one target at one version of its table. Immutable once published; replaced
// (never changed) when the target attaches or detaches.
struct region_snapshot {
  std::uint64_t version;
  std::vector<region_view> regions;  // sorted by base
};

struct target_view {
  rank_t world = 0;
  std::uintptr_t base = 0;  // in the target's address space (0 for dynamic)
  std::size_t size = 0;
  std::ptrdiff_t disp_unit = 1;
  std::byte* direct_base = nullptr;  // load/store pointer to base, or null
  // The part of [0, size) reachable through direct_base (all of it, except for windows over
  // user memory, where only whole pages moved into shared memory are).
  std::size_t direct_lo = 0;
  std::size_t direct_hi = 0;
  transport::pinned memory_pin;
  ctl_block* ctl = nullptr;
  transport::pinned ctl_pin;
  stripe_table* stripes = nullptr;  // the target's accumulate locks, when reachable
  // Accumulates sent to the target's agent and maybe not applied yet. A later accumulate that
  // this process applies directly (another part of the same window) first waits for them, so
  // one origin's accumulates stay in issue order (SEM-6) across the two paths.
  std::atomic<bool> agent_pending{false};
  // Operations to this target that went through the transport (not this process's own loads
  // and stores), and how many of them a flush has completed: a flush with nothing new to
  // complete is a fence (flush_target in sync.cpp).
  std::atomic<std::uint64_t> transport_ops{0};
  std::atomic<std::uint64_t> transport_flushed{0};
  std::uintptr_t stripes_address = 0;
  transport::pinned stripes_pin;
  // Dynamic windows: the target's attached regions as last read (lock-free to read; refreshed
  // under the mutex when the target's table changed). Old snapshots stay until the window
  // goes, as a reader may still hold one.
  std::atomic<const region_snapshot*> regions{nullptr};
  std::mutex regions_mutex;
  std::vector<std::unique_ptr<region_snapshot>> region_snapshots;
};

struct epoch_state {
  // A fence opened a period in which every target may be accessed (not after NOSUCCEED).
  bool fence_open = false;
  // RMA was issued since the last fence (a later lock/lock_all is then an error, SYN-34).
  std::atomic<bool> fence_used{false};
  bool lock_all = false;
  mode lock_all_assert = mode::none;
  std::vector<std::pair<rank_t, lock_type>> locks;  // lock() epochs, one per target
  std::vector<mode> lock_asserts;

  // PSCW access epoch (start … complete): per target, whether it is in the start group and
  // whether its matching post has been seen; the targets in start order; per target, how many
  // access epochs included it (the post count that opens epoch k is k).
  enum : std::uint8_t { not_accessed = 0, awaiting_post = 1, post_seen = 2 };
  bool started = false;
  std::vector<std::uint8_t> access;  // one per member, allocated with the window
  std::vector<rank_t> access_group;
  std::vector<std::uint64_t> access_epochs;
  // PSCW exposure epoch (post … wait/test): the origins, and per origin how many exposure
  // epochs included it (the complete count that closes epoch k is k).
  bool posted = false;
  std::vector<rank_t> exposure_group;
  std::vector<std::uint64_t> exposure_epochs;
  std::vector<rank_t> wake_worlds;  // scratch: the world ranks a post or complete wakes

  bool locked(rank_t t) const noexcept {
    for (const auto& l : locks) {
      if (l.first == t) return true;
    }
    return false;
  }
  bool passive() const noexcept { return lock_all || !locks.empty(); }
  bool any() const noexcept { return fence_open || passive() || started; }
  bool covers(rank_t t) const noexcept {
    return fence_open || lock_all || locked(t) ||
           (started && access[static_cast<std::size_t>(t)] == post_seen);
  }
};

struct window_impl {
  std::uint64_t id = 0;
  transport::backend* transport = nullptr;  // the runtime's, for the window's life
  oneside::team team;                       // a private copy of the creating team
  rank_t rank = 0;
  int size = 0;
  rma::flavor flavor = rma::flavor::create;
  void* base = nullptr;
  std::size_t bytes = 0;
  std::ptrdiff_t disp_unit = 1;
  errors policy = errors::throws;

  // Hints in effect (WIN-21 … WIN-27).
  info hints;
  bool no_locks = false;
  bool same_op_only = false;  // accumulate_ops=same_op
  std::string accumulate_ordering = "rar,raw,war,waw";
  bool ordered = true;  // accumulate_ordering is not "none"

  transport::segment segment;    // control block, followed by the memory of allocate windows
  transport::exposure exposure;  // create: the user's memory
  ctl_block* own_ctl = nullptr;
  // allocate_shared: the memory this member made (its part, or everyone's for member 0 of a
  // contiguous window), and every member's part as seen from here.
  transport::segment shared_memory;
  std::vector<transport::pinned> shared_pins;
  std::vector<shared_segment> shared;

  std::unique_ptr<target_view[]> targets;
  std::vector<rank_t> member_worlds;  // world ranks of the members (for wake-ups)
  epoch_state epoch;

  // Dynamic windows: this member's attached regions.
  std::mutex attach_mutex;
  std::vector<region_entry> attached;

  target_view& target(rank_t r) const noexcept { return targets[static_cast<std::size_t>(r)]; }
  std::size_t ctl_size() const noexcept { return ctl_bytes(size); }

  // Raises `ec` as the window's error handler says (throw, or abort the job: ERR-2).
  [[noreturn]] void fail(error_class ec, const error_context& where, std::string_view what) const;
  error_context where(std::string_view call, std::string_view rule = {}, rank_t target = no_rank,
                      std::optional<std::int64_t> disp = {},
                      std::optional<std::uint64_t> bytes_moved = {}) const {
    return error_context{.call = call,
                         .rule = rule,
                         .window = static_cast<std::int64_t>(id),
                         .target = target,
                         .disp = disp,
                         .bytes = bytes_moved};
  }
};

inline void note_transport_op(target_view& tv) noexcept {
  tv.transport_ops.fetch_add(1, std::memory_order_release);
}
// Completes at `tv` every operation this process issued to it, and is a full memory barrier.
void flush_target(window_impl& w, target_view& tv);

// Blocks (through the waiting primitive) until the post matching the current access epoch
// arrived from `target`, which the epoch includes but has not seen post yet (sync.cpp).
void await_post(window_impl& w, rank_t target);

}  // namespace oneside::rma::detail
