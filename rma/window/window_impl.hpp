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
#include <oneside/runtime/wait.hpp>

#include "ops/stripe_lock.hpp"
#include "runtime/seqlock_table.hpp"
#include "runtime/transport.hpp"

namespace oneside::rma::detail {

inline constexpr std::size_t max_regions = 1024;  // attached regions per member (dynamic)

struct region_entry {
  std::uint64_t base;
  std::uint64_t len;
  std::uint64_t exposure;  // the transport's id of its exposure (0: none; pin_exposure)
};

// One per member per window, in exposed memory. Peers change it with atomics (lock word) or
// read it under its sequence lock (regions), never with the owner's help: node peers through
// a pinned mapping (CPU atomics, loads), other ranks through the transport at the block's
// address in the owner's space (amo, get; see ctl_fetch and ctl_update below).
struct window_ctl {
  alignas(64) std::atomic<std::uint64_t> lock{0};  // exclusive bit | shared holders
  std::atomic<std::uint32_t> lock_waiters{0};      // ranks waiting for the lock (to wake them)
  alignas(64) std::atomic<std::uint64_t> regions_version{0};  // odd while changing
  std::atomic<std::uint64_t> region_count{0};
  region_entry regions[max_regions];
};
inline constexpr std::uint64_t lock_exclusive = std::uint64_t{1} << 63;

// Right after each member's window_ctl, the PSCW counters: two arrays with one word per member
// of the window. They only grow, so successive epochs match in order (SYN-13):
//   posted[r]    posts of member r whose group held this member (r adds 1; this member's
//                access to r in its k-th epoch including r waits until posted[r] >= k);
//   completed[r] completes of member r's access epochs that included this member (r adds 1;
//                this member's k-th wait covering r waits until completed[r] >= k).
inline std::atomic<std::uint64_t>* pscw_posted(window_ctl* c) noexcept {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(c + 1);
}
inline std::atomic<std::uint64_t>* pscw_completed(window_ctl* c, int members) noexcept {
  return pscw_posted(c) + members;
}
// The same words as offsets from the start of the block (for access through the transport).
inline std::size_t pscw_posted_offset(rank_t r) noexcept {
  return sizeof(window_ctl) + static_cast<std::size_t>(r) * sizeof(std::uint64_t);
}
inline std::size_t pscw_completed_offset(rank_t r, int members) noexcept {
  return pscw_posted_offset(members) + static_cast<std::size_t>(r) * sizeof(std::uint64_t);
}
// After them, for dynamic windows, one word per member: regions_seen[r] is the version of
// member r's region table as r last told this member (r stores it here with the transport
// after every attach and detach, before the call returns, when this member cannot read r's
// control block itself). An origin's snapshot of r's regions is current while its version
// equals regions_seen[r]: a local load instead of a round trip to r per operation.
inline std::atomic<std::uint64_t>* regions_seen(window_ctl* c, int members) noexcept {
  return pscw_posted(c) + 2 * members;
}
inline std::size_t regions_seen_offset(rank_t r, int members) noexcept {
  return pscw_posted_offset(2 * members) + static_cast<std::size_t>(r) * sizeof(std::uint64_t);
}
// Bytes of one member's control block with its PSCW counters and region notices, in pages.
inline std::size_t ctl_bytes(int members) noexcept {
  const std::size_t raw =
      sizeof(window_ctl) + 3 * static_cast<std::size_t>(members) * sizeof(std::uint64_t);
  return (raw + 4095) & ~std::size_t{4095};
}
static_assert(sizeof(window_ctl) % alignof(std::atomic<std::uint64_t>) == 0);

// The part of memory [base, base + len) of a target that this process loads and stores: a
// pointer standing for `base` (maybe outside the mapping when only a part is reachable) and
// the reachable part [lo, hi) of the range, kept mapped by `pin`; `at_base` null when none is.
// Pinned through the memory's own exposure (`exposure`, 0 for memory in a segment), never
// through pages another exposure holds in shared memory on its own schedule.
struct direct_part {
  transport::pinned pin;
  std::byte* at_base = nullptr;
  std::size_t lo = 0;
  std::size_t hi = 0;
  // A load/store pointer to [offset, offset + bytes) of the range, or null when those bytes are
  // not all in the reachable part.
  std::byte* at(std::size_t offset, std::size_t bytes) const noexcept {
    return at_base != nullptr && offset >= lo && offset <= hi && bytes <= hi - offset
               ? at_base + offset
               : nullptr;
  }
};
// All of the range when the transport reaches it so, else its whole pages.
direct_part pin_direct_part(transport::backend& tp, rank_t world, std::uint64_t exposure,
                            std::uintptr_t base, std::size_t len);

// A region of a dynamic window as an origin sees it: where this process loads and stores it
// (the direct_part of its memory without the pin, which the target's view keeps beside the
// table: region_pins), else nowhere (cross-memory attach, the owner's agent).
struct region_view {
  std::uintptr_t base;
  std::size_t len;
  std::byte* direct;      // standing for `base`, or null (direct_part::at_base)
  std::size_t direct_lo;  // the reachable part of [0, len) (direct_part::lo, hi)
  std::size_t direct_hi;
  std::byte* at(std::size_t offset, std::size_t bytes) const noexcept {
    return direct != nullptr && offset >= direct_lo && offset <= direct_hi &&
                   bytes <= direct_hi - offset
               ? direct + offset
               : nullptr;
  }
};
// The regions of one target, sorted by base and tagged with the version of the target's table
// they copy: read without a lock, rewritten in place when the target attaches or detaches
// (seqlock_table.hpp).
using region_table = oneside::detail::seqlock_table<region_view>;
// A region_view's words, for lookups that read only what they need.
struct region_word {
  static constexpr std::size_t base = 0;
  static constexpr std::size_t len = 1;
  static constexpr std::size_t direct = 2;
  static constexpr std::size_t direct_lo = 3;
  static constexpr std::size_t direct_hi = 4;
};
static_assert(offsetof(region_view, base) == 0 && offsetof(region_view, len) == 8 &&
              offsetof(region_view, direct) == 16 && offsetof(region_view, direct_lo) == 24 &&
              offsetof(region_view, direct_hi) == 32 && sizeof(region_view) == 40);

struct target_view {
  rank_t world = 0;
  // Whether the lock word and lock_waiters are changed with CPU atomics through `ctl` (below). Only
  // when every rank that changes them does so too, or the transport's atomics are coherent
  // with the CPU's (the owner runs them with CPU atomics): otherwise transport amo, even on a
  // reachable block (a window across nodes on a transport whose atomics are not).
  bool locks_direct = false;
  std::uintptr_t base = 0;  // in the target's address space (0 for dynamic)
  std::size_t size = 0;
  std::ptrdiff_t disp_unit = 1;
  std::byte* direct_base = nullptr;  // load/store pointer to base, or null
  // The part of [0, size) reachable through direct_base (all of it, except for windows over
  // user memory, where only whole pages moved into shared memory are).
  std::size_t direct_lo = 0;
  std::size_t direct_hi = 0;
  transport::pinned memory_pin;
  // The target's control block: its address in the target's space, and a load/store pointer
  // to it when it is reachable from here (else null: reached through the transport). Memory
  // of the target is only ever direct (direct_base, region_view::direct) when the control block
  // and the stripe table are reachable too.
  std::uintptr_t ctl_address = 0;
  window_ctl* ctl = nullptr;
  // Dynamic windows: the word that says which version of the target's region table is
  // current: its regions_version when `ctl` is reachable, else the target's notice in this
  // member's own block (regions_seen). One load either way (find_direct, resolve_target).
  const std::atomic<std::uint64_t>* regions_version = nullptr;
  transport::pinned ctl_pin;
  stripe_table* stripes = nullptr;  // the target's accumulate locks, when reachable
  // Accumulates sent to the target's agent and maybe not applied yet. A later accumulate that
  // this process applies directly (another part of the same window) first waits for them, so
  // one origin's accumulates stay in issue order (SEM-6) across the two paths.
  std::atomic<bool> agent_pending{false};
  // Operations to this target that went through the transport (not this process's own loads
  // and stores), and how many of them a flush has completed: a flush with nothing new to
  // complete is a fence (flush_target in sync/flush.cpp).
  std::atomic<std::uint64_t> transport_ops{0};
  std::atomic<std::uint64_t> transport_flushed{0};
  std::uintptr_t stripes_address = 0;
  transport::pinned stripes_pin;
  // Dynamic windows: the target's attached regions as last read (lock-free to read; rewritten
  // under the mutex when the target's table changed), and the pins that keep the mappings of
  // those of them reachable here (in segments, or moved into shared memory by the target's
  // attach: region_view::direct) while the table names them.
  region_table regions;
  // The index of the region the last lookup found (most lookups hit the one before them),
  // tried first. Any thread may update it; a stale hint only costs the search.
  std::atomic<std::uint32_t> region_hint{0};
  std::mutex regions_mutex;
  std::vector<transport::pinned> region_pins;
};

struct epoch_state {
  // A fence opened a period in which every target may be accessed (not after NOSUCCEED).
  bool fence_open = false;
  // RMA was issued since the last fence (a later lock/lock_all is then an error, SYN-34).
  std::atomic<bool> fence_used{false};
  bool lock_all = false;
  mode lock_all_assert = mode::none;
  // lock() epochs, one per target, whose target operations may access (covers()). Capacity
  // for every member is reserved with the window, so adding one never moves the others (an
  // operation of another thread may be reading them).
  std::vector<std::pair<rank_t, lock_type>> locks;
  std::vector<mode> lock_asserts;
  // lock() epochs whose lock was taken through the transport (never this process's own) and
  // that no operation has used yet. While this process waits for another lock it lets them go
  // and takes them again (as if they had been taken lazily, which the spec allows), so
  // processes that each hold one and wait for the next cannot wait in a cycle (sync/passive.cpp).
  // covers() is false for them: the first operation takes the checked path, which moves the
  // epoch to `locks` (touch_lock), under untouched_mutex (operations may come from several
  // threads).
  struct untouched_lock {
    rank_t target;
    lock_type type;
    mode assert;
  };
  std::vector<untouched_lock> untouched_locks;
  mutable std::mutex untouched_mutex;

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
  std::vector<rank_t> wake_worlds;      // scratch: the world ranks a post or complete wakes
  std::vector<rank_t> lock_all_remote;  // lock_all: the targets locked through the transport

  bool locked(rank_t t) const noexcept {
    for (const auto& l : locks) {
      if (l.first == t) return true;
    }
    return false;
  }
  bool is_untouched(rank_t t) const noexcept {
    for (const auto& l : untouched_locks) {
      if (l.target == t) return true;
    }
    return false;
  }
  // A lock() epoch to `t` is open, used or not.
  bool has_lock(rank_t t) const noexcept { return locked(t) || is_untouched(t); }
  bool passive() const noexcept { return lock_all || !locks.empty() || !untouched_locks.empty(); }
  // The first operation to `t` under an untouched lock: from now on the lock is held for the
  // epoch's operations. False when `t` has no untouched lock.
  bool touch_lock(rank_t t) {
    std::lock_guard guard(untouched_mutex);
    for (auto it = untouched_locks.begin(); it != untouched_locks.end(); ++it) {
      if (it->target == t) {
        locks.emplace_back(t, it->type);
        lock_asserts.push_back(it->assert);
        untouched_locks.erase(it);
        return true;
      }
    }
    return false;
  }
  bool any() const noexcept { return fence_open || passive() || started; }

  // What other threads may read of the epochs (hang diagnosis: a rank waiting elsewhere may
  // hold a lock here): refreshed by show() after every call that opens or closes an epoch.
  enum : std::uint32_t {
    shown_fence = 1,
    shown_lock_all = 2,
    shown_access = 4,
    shown_exposure = 8
  };
  std::atomic<std::uint32_t> shown_kinds{0};
  std::atomic<std::int32_t> shown_locks{0};   // lock() epochs open
  std::atomic<rank_t> shown_lock_target{-1};  // the target of the latest of them
  std::atomic<bool> shown_lock_exclusive{false};
  // The same after the common lock() and unlock() (one epoch more or less; a store or two).
  void show_locked(rank_t target, lock_type type) noexcept {
    shown_locks.store(shown_locks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    shown_lock_target.store(target, std::memory_order_relaxed);
    shown_lock_exclusive.store(type == lock_type::exclusive, std::memory_order_relaxed);
  }
  void show_unlocked() noexcept {
    shown_locks.store(shown_locks.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
  void show() noexcept {
    shown_kinds.store((fence_open ? shown_fence : 0U) | (lock_all ? shown_lock_all : 0U) |
                          (started ? shown_access : 0U) | (posted ? shown_exposure : 0U),
                      std::memory_order_relaxed);
    shown_locks.store(static_cast<std::int32_t>(locks.size() + untouched_locks.size()),
                      std::memory_order_relaxed);
    if (!locks.empty()) {
      shown_lock_target.store(locks.back().first, std::memory_order_relaxed);
      shown_lock_exclusive.store(locks.back().second == lock_type::exclusive,
                                 std::memory_order_relaxed);
    } else if (!untouched_locks.empty()) {
      shown_lock_target.store(untouched_locks.back().target, std::memory_order_relaxed);
      shown_lock_exclusive.store(untouched_locks.back().type == lock_type::exclusive,
                                 std::memory_order_relaxed);
    }
  }
  bool covers(rank_t t) const noexcept {
    return fence_open || lock_all || locked(t) ||
           (started && access[static_cast<std::size_t>(t)] == post_seen);
  }
};

class window_registry;

struct window_impl {
  window_impl() = default;
  window_impl(const window_impl&) = delete;
  window_impl& operator=(const window_impl&) = delete;
  ~window_impl();

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
  window_ctl* own_ctl = nullptr;
  // allocate_shared: the memory this member made (its part, or everyone's for member 0 of a
  // contiguous window), and every member's part as seen from here.
  transport::segment shared_memory;
  std::vector<transport::pinned> shared_pins;
  std::vector<shared_segment> shared;

  std::unique_ptr<target_view[]> targets;
  std::vector<rank_t> member_worlds;  // world ranks of the members (for wake-ups)
  epoch_state epoch;

  // Dynamic windows: this member's attached regions, each with what the transport made of it
  // for node peers (expose_optional: an empty exposure when nothing).
  struct attached_region {
    region_entry entry;
    transport::exposure exposure;
  };
  std::mutex attach_mutex;
  std::vector<attached_region> attached;

  // This process's windows (hang diagnosis); the window is in it from build to destruction.
  // Last: the fields the operations use keep their places.
  std::shared_ptr<window_registry> registry;

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

// The transport's atomic on the word at `offset` of the control block of `tv`, for ranks that
// do not change it with CPU atomics (target_view::ctl null, or locks_direct false for the lock
// words). Fetching: returns the previous value once the operation ran at the target (a null
// completion returns with the result in place).
inline std::uint64_t ctl_fetch(window_impl& w, const target_view& tv, std::size_t offset,
                               transport::amo_op op, transport::amo_type type,
                               std::uint64_t operand = 0, std::uint64_t compare = 0) {
  const transport::amo_args args{op, type, operand, compare};
  if (transport::amo_type_size(type) == 4) {
    std::uint32_t old = 0;
    w.transport->amo(tv.world, tv.ctl_address + offset, args, &old);
    return old;
  }
  std::uint64_t old = 0;
  w.transport->amo(tv.world, tv.ctl_address + offset, args, &old);
  return old;
}
// The same without a result: locally complete on return, visible at the target only after
// the transport's flush of that rank (operations to one target are not ordered).
inline void ctl_update(window_impl& w, const target_view& tv, std::size_t offset,
                       transport::amo_op op, transport::amo_type type, std::uint64_t operand) {
  w.transport->amo(tv.world, tv.ctl_address + offset, transport::amo_args{op, type, operand, 0},
                   nullptr);
}

inline void note_transport_op(target_view& tv) noexcept {
  tv.transport_ops.fetch_add(1, std::memory_order_release);
}
// Completes at `tv` every operation this process issued to it, and is a full memory barrier.
void flush_target(window_impl& w, target_view& tv);

// For hang diagnosis: the window at `window` (a window_impl) as `target` sees it: its epochs,
// the target's lock word, what is not yet flushed (a wait_scope's describe; describe.cpp).
void describe_window(const void* window, rank_t target, std::string& out) noexcept;

// The windows of this process, for hang diagnosis: a long wait anywhere in the process also
// reports the epochs open on them (describe.cpp). Registered with the runtime's wait reports
// by the rma context while it lives; the windows keep it alive.
class window_registry {
 public:
  window_registry();
  ~window_registry();
  window_registry(const window_registry&) = delete;
  window_registry& operator=(const window_registry&) = delete;
  void add(const window_impl* w);
  void remove(const window_impl* w) noexcept;
  // "open epochs: window #1: lock(exclusive, target 0); …" (nothing when none is open).
  static void describe(const void* registry, std::string& out) noexcept;

 private:
  std::mutex mutex_;
  std::vector<const window_impl*> windows_;
};

// Opens the wait scope of window call `call` (to `target`, or -1).
inline oneside::detail::wait_scope window_scope(const char* call, const window_impl& w,
                                                rank_t target = -1) noexcept {
  return oneside::detail::wait_scope(call, target, describe_window, &w);
}

// Blocks (through the waiting primitive) until the post matching the current access epoch
// arrived from `target`, which the epoch includes but has not seen post yet (sync/pscw.cpp).
void await_post(window_impl& w, rank_t target);

}  // namespace oneside::rma::detail
