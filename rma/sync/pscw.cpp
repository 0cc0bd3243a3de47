// General active-target synchronization: post/start/complete/wait/test (SYN-7 … SYN-14,
// SYN-30) with the epoch checks the spec asks for. Each member's control block carries a
// counter per member for posts and one for completes; they only grow, so successive epochs
// match in order. What a rank waits for in its own control block stays a local load; an
// update through the transport is applied by the owner, which wakes its own waiters
// (transport::backend::amo), so the updater neither flushes nor wakes it.
#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/group.hpp>
#include <oneside/runtime/wait.hpp>

#include "runtime/transport.hpp"
#include "sync/sync.hpp"
#include "window/window_impl.hpp"

namespace oneside::rma {
namespace {

using detail::check_assert;
using detail::target_view;
using detail::window_impl;
using transport::amo_op;
using transport::amo_type;

// Fills `out` (kept between epochs: no allocation per epoch) with the window ranks of `g`'s
// members, and e.wake_worlds with the world ranks of those whose control block this process
// changes with CPU atomics (the others apply the transport's atomics themselves and wake
// their own waiters: transport::backend::amo); error(group) when one is not in the
// window's group (`out` is only read while its epoch is open, so a half-filled one is
// harmless).
void window_ranks(window_impl& w, std::string_view call, const oneside::group& g,
                  std::vector<rank_t>& out) {
  out.clear();
  std::vector<rank_t>& worlds = w.epoch.wake_worlds;
  worlds.clear();
  const oneside::group& members = w.team.group();
  for (rank_t world : g.world_ranks()) {
    const rank_t r = members.from_world(world);
    if (r == no_rank) {
      w.fail(error_class::group, w.where(call, "SYN-8"),
             "world rank " + std::to_string(world) +
                 " of the group is not a member of the window's group");
    }
    out.push_back(r);
    if (w.target(r).ctl != nullptr) worlds.push_back(world);
  }
}

// An access or exposure epoch may not begin while a fence epoch has operations pending.
void check_fence_closed(window_impl& w, std::string_view call) {
  const detail::epoch_state& e = w.epoch;
  if (e.fence_open && e.fence_used.load(std::memory_order_relaxed)) {
    w.fail(error_class::rma_sync, w.where(call, "SYN-34"),
           "a fence epoch has RMA operations pending (fence first)");
  }
}

bool all_completed(window_impl& w) {
  detail::epoch_state& e = w.epoch;
  std::atomic<std::uint64_t>* completed = detail::pscw_completed(w.own_ctl, w.size);
  for (rank_t o : e.exposure_group) {
    const auto i = static_cast<std::size_t>(o);
    if (completed[i].load(std::memory_order_acquire) < e.exposure_epochs[i]) return false;
  }
  return true;
}

void close_exposure(window_impl& w) {
  // Every origin's operations are complete here: later loads see them (SYN-11, MEM-9).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  oneside::detail::cross_process_acquire();
  w.epoch.posted = false;
  w.epoch.show();
}

void check_exposure_open(window_impl& w, std::string_view call) {
  if (!w.epoch.posted) {
    w.fail(error_class::rma_sync, w.where(call, "SYN-12"),
           "no post epoch is open on this window (post first; after test returned true, "
           "post again)");
  }
}

}  // namespace

void window::post(const oneside::group& origins, mode assert) {
  window_impl& w = checked("window::post");
  check_assert(w, "window::post", assert);
  detail::epoch_state& e = w.epoch;
  if (e.posted) {
    w.fail(error_class::rma_sync, w.where("window::post", "SYN-3"),
           "post inside a post epoch (exposure epochs are disjoint; wait first)");
  }
  // Locally detectable only for lock(self); lock_all beside a post epoch is left alone (the
  // checker is never stricter than the spec).
  if (e.has_lock(w.rank)) {
    w.fail(error_class::rma_sync, w.where("window::post", "SYN-20"),
           "post while this process holds a lock on its own window (unlock first)");
  }
  check_fence_closed(w, "window::post");
  window_ranks(w, "window::post", origins, e.exposure_group);
  // Stores to the window before post are visible to the origins' accesses (SYN-14).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  oneside::detail::cross_process_release();
  for (rank_t o : e.exposure_group) {
    ++e.exposure_epochs[static_cast<std::size_t>(o)];
    target_view& tv = w.target(o);
    if (tv.ctl != nullptr) {
      detail::pscw_posted(tv.ctl)[static_cast<std::size_t>(w.rank)].fetch_add(
          1, std::memory_order_release);
    } else {
      // The origin applies it and wakes itself; completed at this process's next flush.
      detail::ctl_update(w, tv, detail::pscw_posted_offset(w.rank), amo_op::add, amo_type::u64, 1);
    }
  }
  w.transport->wake(std::span<const rank_t>(e.wake_worlds));
  e.posted = true;
  e.show();
}

void window::start(const oneside::group& targets, mode assert) {
  window_impl& w = checked("window::start");
  check_assert(w, "window::start", assert);
  detail::epoch_state& e = w.epoch;
  if (e.started || e.passive()) {
    w.fail(error_class::rma_sync, w.where("window::start", "SYN-2"),
           e.started    ? "start inside a start epoch (complete first)"
           : e.lock_all ? "start inside a lock_all epoch"
                        : "start inside a lock epoch");
  }
  check_fence_closed(w, "window::start");
  window_ranks(w, "window::start", targets, e.access_group);
  std::atomic<std::uint64_t>* posted = detail::pscw_posted(w.own_ctl);
  for (rank_t t : e.access_group) {
    const auto i = static_cast<std::size_t>(t);
    const std::uint64_t k = ++e.access_epochs[i];
    // NOCHECK promises the post happened already (SYN-30); otherwise look without waiting:
    // an operation to a target whose post has not arrived waits for it (start never blocks).
    const bool seen = any(assert& mode::nocheck) || posted[i].load(std::memory_order_acquire) >= k;
    e.access[i] = seen ? detail::epoch_state::post_seen : detail::epoch_state::awaiting_post;
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  oneside::detail::cross_process_acquire();
  e.started = true;
  e.fence_open = false;
  e.show();
}

void detail::await_post(window_impl& w, rank_t target) {
  detail::epoch_state& e = w.epoch;
  const auto i = static_cast<std::size_t>(target);
  std::atomic<std::uint64_t>& posted = detail::pscw_posted(w.own_ctl)[i];
  const std::uint64_t k = e.access_epochs[i];
  const auto waiting =
      detail::window_scope("waiting for the post of the target (start)", w, target);
  oneside::wait_until([&] { return posted.load(std::memory_order_acquire) >= k; });
  e.access[i] = detail::epoch_state::post_seen;
}

void window::complete() {
  window_impl& w = checked("window::complete");
  const auto waiting = detail::window_scope("window::complete", w);
  detail::epoch_state& e = w.epoch;
  if (!e.started) {
    w.fail(error_class::rma_sync, w.where("window::complete", "SYN-9"), "complete without start");
  }
  // Everything of the epoch is applied at its targets before they learn of the complete, so
  // their wait implies completion there (SYN-11, MEM-9), active-message operations included.
  for (rank_t t : e.access_group) {
    if (e.access[static_cast<std::size_t>(t)] == detail::epoch_state::post_seen) {
      detail::flush_target(w, w.target(t));
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  oneside::detail::cross_process_release();
  std::vector<rank_t>& worlds = e.wake_worlds;
  worlds.clear();
  for (rank_t t : e.access_group) {
    target_view& tv = w.target(t);
    if (tv.ctl != nullptr) {
      detail::pscw_completed(tv.ctl, w.size)[static_cast<std::size_t>(w.rank)].fetch_add(
          1, std::memory_order_release);
      worlds.push_back(tv.world);
    } else {
      // The target applies it and wakes itself (after the operations, flushed above).
      detail::ctl_update(w, tv, detail::pscw_completed_offset(w.rank, w.size), amo_op::add,
                         amo_type::u64, 1);
    }
    e.access[static_cast<std::size_t>(t)] = detail::epoch_state::not_accessed;
  }
  w.transport->wake(std::span<const rank_t>(worlds));
  e.access_group.clear();
  e.started = false;
  e.show();
}

void window::wait() {
  window_impl& w = checked("window::wait");
  const auto waiting = detail::window_scope("window::wait", w);
  check_exposure_open(w, "window::wait");
  if (!all_completed(w)) oneside::wait_until([&] { return all_completed(w); });
  close_exposure(w);
}

bool window::test() {
  window_impl& w = checked("window::test");
  check_exposure_open(w, "window::test");
  if (!all_completed(w)) return false;
  close_exposure(w);
  return true;
}

}  // namespace oneside::rma
