// Passive-target synchronization: lock/unlock, lock_all/unlock_all (SYN-15 … SYN-20,
// SYN-34) with the epoch checks the spec asks for. Passive-target locks are a word in each
// member's control block, changed with atomics by the origins alone (the target is never
// involved: SYN-4); waiters that go to sleep are counted there so the releaser can wake them.
//
// A control block this process cannot load and store (another node) is changed with the
// transport's atomics at its address in the owner's space, by the same protocols. Those
// operations are nonblocking and unordered, so: an attempt to take a lock is a fetching amo
// (its result is in place only once it ran); a write that must be seen before a later access
// (a release before reading lock_waiters, a waiter's registration before it looks again) is
// flushed to that rank first; waiting on another rank's lock re-checks it with a transport
// atomic through the waiting primitive.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/wait.hpp>

#include "runtime/transport.hpp"
#include "sync/sync.hpp"
#include "window/window_impl.hpp"

namespace oneside::rma {
namespace {

using detail::check_assert;
using detail::check_target;
using detail::complete_all;
using detail::lock_exclusive;
using detail::target_view;
using detail::window_ctl;
using detail::window_impl;
using transport::amo_op;
using transport::amo_type;

constexpr std::size_t lock_offset = offsetof(window_ctl, lock);
constexpr std::size_t waiters_offset = offsetof(window_ctl, lock_waiters);

// The window rank of the target `tv` views.
rank_t target_of(const window_impl& w, const target_view& tv) noexcept {
  return static_cast<rank_t>(&tv - w.targets.get());
}

// Waits (through the waiting primitive) until `acquired()` holds, counted as a lock waiter.
template <class Acquire>
void wait_for_lock(window_impl& w, target_view& tv, Acquire&& acquired) {
  if (acquired()) {
    oneside::detail::cross_process_acquire();
    return;
  }
  tv.ctl->lock_waiters.fetch_add(1, std::memory_order_seq_cst);
  {
    const auto waiting =
        detail::window_scope("window::lock, waiting for the lock", w, target_of(w, tv));
    oneside::wait_until(acquired);
  }
  tv.ctl->lock_waiters.fetch_sub(1, std::memory_order_relaxed);
}

// Through the transport. One attempt: exclusive is a compare-and-swap from 0; shared adds a
// holder and takes it back (flushed, so an exclusive contender is not kept out) while an
// exclusive holder is there. A waiter first looks, and only then registers again.
bool try_acquire_remote(window_impl& w, target_view& tv, lock_type type, bool waiting) {
  if (type == lock_type::exclusive) {
    return detail::ctl_fetch(w, tv, lock_offset, amo_op::compare_swap, amo_type::u64,
                             lock_exclusive, 0) == 0;
  }
  if (waiting &&
      (detail::ctl_fetch(w, tv, lock_offset, amo_op::load, amo_type::u64) & lock_exclusive) != 0) {
    return false;
  }
  if ((detail::ctl_fetch(w, tv, lock_offset, amo_op::add, amo_type::u64, 1) & lock_exclusive) ==
      0) {
    return true;
  }
  detail::ctl_update(w, tv, lock_offset, amo_op::add, amo_type::u64, ~std::uint64_t{0});  // -1
  w.transport->flush(tv.world);
  return false;
}

// The waiter's half of the lock_waiters protocol, as wait_for_lock: the registration is
// complete at the target (flushed) before the lock is looked at again, and the releaser
// completes its release before it reads lock_waiters, so one of the two sees the other.
[[gnu::noinline]] void acquire_remote(window_impl& w, target_view& tv, lock_type type) {
  if (try_acquire_remote(w, tv, type, false)) {
    oneside::detail::cross_process_acquire();
    return;
  }
  detail::ctl_update(w, tv, waiters_offset, amo_op::add, amo_type::u32, 1);
  w.transport->flush(tv.world);
  {
    const auto waiting =
        detail::window_scope("window::lock, waiting for the lock", w, target_of(w, tv));
    oneside::wait_until([&] { return try_acquire_remote(w, tv, type, true); });
  }
  // The deregistration may complete lazily (at the next flush): a stale count only costs a
  // wake-up.
  detail::ctl_update(w, tv, waiters_offset, amo_op::add, amo_type::u32, 0xFFFFFFFFU);  // -1
  detail::note_transport_op(tv);
}

// The caller completed the epoch's operations at the target; the release is complete there
// before lock_waiters is read (see acquire_remote).
[[gnu::noinline]] void release_remote(window_impl& w, target_view& tv, std::uint64_t held) {
  oneside::detail::cross_process_release();
  detail::ctl_update(w, tv, lock_offset, amo_op::add, amo_type::u64, std::uint64_t{0} - held);
  w.transport->flush(tv.world);
  if (detail::ctl_fetch(w, tv, waiters_offset, amo_op::load, amo_type::u32) != 0) {
    w.transport->wake(std::span<const rank_t>(w.member_worlds));
  }
}

// One attempt with CPU atomics. Shared: register, and back off while an exclusive holder is
// there.
inline bool try_acquire_direct(target_view& tv, lock_type type) {
  std::atomic<std::uint64_t>& word = tv.ctl->lock;
  if (type == lock_type::exclusive) {
    std::uint64_t expected = 0;
    return word.load(std::memory_order_relaxed) == 0 &&
           word.compare_exchange_strong(expected, lock_exclusive, std::memory_order_acquire);
  }
  if ((word.fetch_add(1, std::memory_order_acquire) & lock_exclusive) == 0) return true;
  word.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

bool try_acquire(window_impl& w, target_view& tv, lock_type type) {
  const bool held =
      tv.locks_direct ? try_acquire_direct(tv, type) : try_acquire_remote(w, tv, type, false);
  if (held) oneside::detail::cross_process_acquire();
  return held;
}

// Blocks until the lock is held. The direct attempt is inline (it is the cost of lock); the
// wait is not.
inline void acquire_direct(window_impl& w, target_view& tv, lock_type type) {
  if (try_acquire_direct(tv, type)) [[likely]] {
    oneside::detail::cross_process_acquire();
    return;
  }
  wait_for_lock(w, tv, [&] { return try_acquire_direct(tv, type); });
}

inline void acquire(window_impl& w, target_view& tv, lock_type type) {
  if (!tv.locks_direct) [[unlikely]] {
    acquire_remote(w, tv, type);
    return;
  }
  acquire_direct(w, tv, type);
}

inline void release(window_impl& w, target_view& tv, lock_type type) {
  const std::uint64_t held = type == lock_type::exclusive ? lock_exclusive : 1;
  if (!tv.locks_direct) [[unlikely]] {
    release_remote(w, tv, held);
    return;
  }
  std::atomic<std::uint64_t>& word = tv.ctl->lock;
  oneside::detail::cross_process_release();
  word.fetch_sub(held, std::memory_order_release);
  if (tv.ctl->lock_waiters.load(std::memory_order_seq_cst) != 0) {
    w.transport->wake(std::span<const rank_t>(w.member_worlds));
  }
}

// The fetching atomic `args` on the control-block word at `offset` of every target in
// `targets`, all in flight at once; out[i] gets targets[i]'s old value (Word: its width).
template <class Word>
void fetch_from_all(window_impl& w, const std::vector<rank_t>& targets, std::size_t offset,
                    const transport::amo_args& args, std::vector<Word>& out) {
  out.assign(targets.size(), 0);
  transport::completion c;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const target_view& tv = w.target(targets[i]);
    w.transport->amo(tv.world, tv.ctl_address + offset, args, &out[i], &c);
  }
  w.transport->wait(c);
}

// Gives back one shared holder at every target of `targets`, complete there on return.
void drop_shared_holders(window_impl& w, const std::vector<rank_t>& targets) {
  for (rank_t r : targets) {
    detail::ctl_update(w, w.target(r), lock_offset, amo_op::add, amo_type::u64,
                       ~std::uint64_t{0});  // -1
  }
  w.transport->flush_all();
}

// lock_all's shared locks at the targets reached through the transport: every attempt in
// flight at once (one round trip for all, not one per target). When one finds an exclusive
// holder, every lock taken this way is given back and they are taken one at a time, as
// acquire() does, so a contended lock_all waits holding no more than the plain way would.
[[gnu::noinline]] void acquire_shared_remote(window_impl& w, const std::vector<rank_t>& targets) {
  std::vector<std::uint64_t> old;
  fetch_from_all(w, targets, lock_offset, {amo_op::add, amo_type::u64, 1, 0}, old);
  if (std::none_of(old.begin(), old.end(),
                   [](std::uint64_t v) { return (v & lock_exclusive) != 0; })) {
    oneside::detail::cross_process_acquire();
    return;
  }
  drop_shared_holders(w, targets);  // an exclusive contender sees the words free again
  for (rank_t r : targets) acquire_remote(w, w.target(r), lock_type::shared);
}

// unlock_all's releases at the targets reached through the transport, pipelined as above:
// the releases, one flush, then every lock_waiters word read at once.
[[gnu::noinline]] void release_shared_remote(window_impl& w, const std::vector<rank_t>& targets) {
  oneside::detail::cross_process_release();
  drop_shared_holders(w, targets);
  std::vector<std::uint32_t> waiting;
  fetch_from_all(w, targets, waiters_offset, {amo_op::load, amo_type::u32, 0, 0}, waiting);
  if (std::any_of(waiting.begin(), waiting.end(), [](std::uint32_t n) { return n != 0; })) {
    w.transport->wake(std::span<const rank_t>(w.member_worlds));
  }
}

// Takes the lock of lock(type, target) while this process holds untouched locks (epoch_state).
// A process that waits for a lock while holding others can close a cycle of waiters (each
// holding what the next waits for), so when the lock is not free at once the untouched locks
// are let go during the wait, then taken again with one attempt each; when one of them is not
// free, every lock of the set taken so far is let go again and the wait is for that one. The
// process never waits holding an untouched lock, and they are all held again when this
// returns. Operations of other threads to their targets wait on untouched_mutex meanwhile.
[[gnu::noinline]] void acquire_beside_untouched(window_impl& w, target_view& tv, lock_type type) {
  detail::epoch_state& e = w.epoch;
  std::lock_guard guard(e.untouched_mutex);
  if (try_acquire(w, tv, type)) return;
  struct wanted {
    target_view* target;
    lock_type type;
    bool held;
  };
  std::vector<wanted> set;
  set.reserve(e.untouched_locks.size() + 1);
  for (const auto& u : e.untouched_locks) set.push_back({&w.target(u.target), u.type, true});
  set.push_back({&tv, type, false});
  std::size_t next = set.size() - 1;
  for (;;) {
    for (wanted& x : set) {
      if (x.held) release(w, *x.target, x.type);
      x.held = false;
    }
    acquire(w, *set[next].target, set[next].type);
    set[next].held = true;
    next = set.size();
    for (std::size_t i = 0; i < set.size() && next == set.size(); ++i) {
      if (set[i].held) continue;
      set[i].held = try_acquire(w, *set[i].target, set[i].type);
      if (!set[i].held) next = i;
    }
    if (next == set.size()) return;
  }
}

// lock() when it is not the plain direct one: a lock through the transport, or untouched
// locks held (which a second lock of the same target may be one of).
[[gnu::noinline]] void lock_in_general(window_impl& w, target_view& tv, rank_t target,
                                       lock_type type, mode assert) {
  detail::epoch_state& e = w.epoch;
  if (e.is_untouched(target)) {
    w.fail(error_class::rma_sync, w.where("window::lock", "SYN-2", target),
           "target " + std::to_string(target) + " is locked already by this process");
  }
  if (!any(assert& mode::nocheck)) {
    if (e.untouched_locks.empty()) {
      acquire(w, tv, type);
    } else {
      acquire_beside_untouched(w, tv, type);
    }
    if (!tv.locks_direct && target != w.rank) {
      std::lock_guard guard(e.untouched_mutex);
      e.untouched_locks.push_back({target, type, assert});
      return;
    }
  }
  e.locks.emplace_back(target, type);
  e.lock_asserts.push_back(assert);
}

// unlock() of an epoch that is not in `locks`: an untouched one (nothing to complete, the
// lock to give back), or none (error).
[[gnu::noinline]] void unlock_untouched(window_impl& w, rank_t target) {
  detail::epoch_state& e = w.epoch;
  std::unique_lock guard(e.untouched_mutex);
  auto u = std::find_if(e.untouched_locks.begin(), e.untouched_locks.end(),
                        [&](const auto& l) { return l.target == target; });
  if (u == e.untouched_locks.end()) {
    guard.unlock();
    w.fail(error_class::rma_sync, w.where("window::unlock", "SYN-16", target),
           e.lock_all ? "unlock of one target inside a lock_all epoch (use unlock_all)"
                      : "unlock without a matching lock");
  }
  target_view& tv = w.target(target);
  detail::flush_target(w, tv);
  release(w, tv, u->type);
  e.untouched_locks.erase(u);
  e.show();
}

}  // namespace

void window::lock(lock_type type, rank_t target, mode assert) {
  window_impl& w = checked("window::lock");
  if (type != lock_type::shared && type != lock_type::exclusive) {
    w.fail(error_class::locktype, w.where("window::lock", "SYN-15", target),
           "lock type " + std::to_string(static_cast<unsigned>(type)) +
               " is neither shared nor exclusive");
  }
  check_assert(w, "window::lock", assert);
  if (target == proc_null) return;  // SYN-35: accepted as a no-op
  check_target(w, "window::lock", target);
  detail::epoch_state& e = w.epoch;
  if (w.no_locks) {
    w.fail(error_class::rma_sync, w.where("window::lock", "WIN-24", target),
           "the window was made with no_locks=true");
  }
  if (e.lock_all || e.started) {
    w.fail(error_class::rma_sync, w.where("window::lock", "SYN-2", target),
           e.lock_all ? "lock inside a lock_all epoch" : "lock inside a start epoch");
  }
  if (target == w.rank && e.posted) {
    w.fail(error_class::rma_sync, w.where("window::lock", "SYN-20", target),
           "lock of this process's own window while it is exposed by post (wait first)");
  }
  if (e.locked(target)) {
    w.fail(error_class::rma_sync, w.where("window::lock", "SYN-2", target),
           "target " + std::to_string(target) + " is locked already by this process");
  }
  if (e.fence_open && e.fence_used.load(std::memory_order_relaxed)) {
    w.fail(error_class::rma_sync, w.where("window::lock", "SYN-34", target),
           "lock while a fence epoch has RMA operations pending (fence first)");
  }
  // Remote locks may be taken lazily by the spec; oneside takes them now, which also makes a
  // lock on one's own window block until held (SYN-19). One taken through the transport stays
  // untouched until an operation uses it: until then another lock() may let it go while it
  // waits (acquire_beside_untouched), as a lazy lock would not be held yet.
  target_view& tv = w.target(target);
  if (!tv.locks_direct || !e.untouched_locks.empty()) [[unlikely]] {
    lock_in_general(w, tv, target, type, assert);
    e.fence_open = false;
    e.show();
  } else {
    if (!any(assert& mode::nocheck)) acquire_direct(w, tv, type);
    e.locks.emplace_back(target, type);
    e.lock_asserts.push_back(assert);
    if (e.fence_open) {
      e.fence_open = false;
      e.show();
    } else {
      e.show_locked(target, type);
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void window::unlock(rank_t target) {
  window_impl& w = checked("window::unlock");
  if (target == proc_null) return;
  check_target(w, "window::unlock", target);
  detail::epoch_state& e = w.epoch;
  auto it = std::find_if(e.locks.begin(), e.locks.end(),
                         [&](const auto& l) { return l.first == target; });
  if (it == e.locks.end()) [[unlikely]] {
    unlock_untouched(w, target);
    return;
  }
  const auto index = static_cast<std::size_t>(it - e.locks.begin());
  // Everything of the epoch is complete at the target when unlock returns (SYN-16, MEM-10).
  target_view& tv = w.target(target);
  detail::flush_target(w, tv);
  if (!any(e.lock_asserts[index] & mode::nocheck)) release(w, tv, it->second);
  e.locks.erase(it);
  e.lock_asserts.erase(e.lock_asserts.begin() + static_cast<std::ptrdiff_t>(index));
  e.show_unlocked();
}

void window::lock_all(mode assert) {
  window_impl& w = checked("window::lock_all");
  const auto waiting = detail::window_scope("window::lock_all", w);
  check_assert(w, "window::lock_all", assert);
  detail::epoch_state& e = w.epoch;
  if (w.no_locks) {
    w.fail(error_class::rma_sync, w.where("window::lock_all", "WIN-24"),
           "the window was made with no_locks=true");
  }
  if (e.passive() || e.started) {
    w.fail(error_class::rma_sync, w.where("window::lock_all", "SYN-2"),
           e.lock_all  ? "lock_all inside a lock_all epoch"
           : e.started ? "lock_all inside a start epoch"
                       : "lock_all inside a lock epoch");
  }

  if (e.fence_open && e.fence_used.load(std::memory_order_relaxed)) {
    w.fail(error_class::rma_sync, w.where("window::lock_all", "SYN-34"),
           "lock_all while a fence epoch has RMA operations pending (fence first)");
  }
  if (!any(assert& mode::nocheck)) {
    std::vector<rank_t>& remote = e.lock_all_remote;
    remote.clear();
    for (rank_t r = 0; r < w.size; ++r) {
      target_view& tv = w.target(r);
      if (tv.locks_direct) {
        acquire_direct(w, tv, lock_type::shared);
      } else {
        remote.push_back(r);
      }
    }
    if (!remote.empty()) acquire_shared_remote(w, remote);
  }
  e.lock_all = true;
  e.lock_all_assert = assert;
  e.fence_open = false;
  e.show();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void window::unlock_all() {
  window_impl& w = checked("window::unlock_all");
  const auto waiting = detail::window_scope("window::unlock_all", w);
  detail::epoch_state& e = w.epoch;
  if (!e.lock_all) {
    w.fail(error_class::rma_sync, w.where("window::unlock_all", "SYN-17"),
           "unlock_all without lock_all");
  }
  complete_all(w);  // complete at every target (SYN-17)
  if (!any(e.lock_all_assert & mode::nocheck)) {
    for (rank_t r = 0; r < w.size; ++r) {
      target_view& tv = w.target(r);
      if (tv.locks_direct) release(w, tv, lock_type::shared);
    }
    if (!e.lock_all_remote.empty()) release_shared_remote(w, e.lock_all_remote);
  }
  e.lock_all = false;
  e.lock_all_assert = mode::none;
  e.show();
}

}  // namespace oneside::rma
