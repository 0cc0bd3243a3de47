// flush, flush_all, flush_local, flush_local_all and sync inside passive-target epochs
// (SYN-21 … SYN-28), and flush_target, the completion at one target that unlock and complete
// use too.
#include <atomic>
#include <cstdint>
#include <string>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/wait.hpp>

#include "sync/sync.hpp"
#include "window/window_impl.hpp"

namespace oneside::rma {
namespace {

using detail::check_target;
using detail::complete_all;
using detail::target_view;
using detail::window_impl;

inline void check_flush(window_impl& w, std::string_view call, rank_t target) {
  const detail::epoch_state& e = w.epoch;
  if (e.lock_all && target >= 0 && target < w.size) return;  // the common case
  if (!e.passive()) {
    w.fail(error_class::rma_sync, w.where(call, "SYN-23", target),
           "flush and sync need a passive-target epoch (lock or lock_all)");
  }
  if (target == proc_null) return;
  check_target(w, call, target);
  if (!e.lock_all && !e.has_lock(target)) {
    w.fail(error_class::rma_sync, w.where(call, "SYN-23", target),
           "target " + std::to_string(target) + " is not locked by this process");
  }
}

}  // namespace

void detail::flush_target(window_impl& w, target_view& tv) {
  const std::uint64_t ops = tv.transport_ops.load(std::memory_order_acquire);
  std::uint64_t done = tv.transport_flushed.load(std::memory_order_relaxed);
  if (ops != done) {
    const auto waiting = window_scope("completing the operations at the target", w,
                                      static_cast<rank_t>(&tv - w.targets.get()));
    w.transport->flush(tv.world);
    // Everything counted before `ops` was read is complete now (never lower the mark).
    while (done < ops &&
           !tv.transport_flushed.compare_exchange_weak(done, ops, std::memory_order_relaxed)) {
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);  // loads and stores: SEM-13
  oneside::detail::cross_process_sync();
}

void window::flush(rank_t target) {
  window_impl& w = checked("window::flush");
  check_flush(w, "window::flush", target);
  if (target != proc_null) {
    detail::flush_target(w, w.target(target));
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

void window::flush_all() {
  window_impl& w = checked("window::flush_all");
  const auto waiting = detail::window_scope("window::flush_all", w);
  check_flush(w, "window::flush_all", proc_null);
  complete_all(w);
}

void window::flush_local(rank_t target) {
  window_impl& w = checked("window::flush_local");
  const auto waiting = detail::window_scope("window::flush_local", w, target);
  check_flush(w, "window::flush_local", target);
  if (target != proc_null) w.transport->flush_local(w.target(target).world);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void window::flush_local_all() {
  window_impl& w = checked("window::flush_local_all");
  const auto waiting = detail::window_scope("window::flush_local_all", w);
  check_flush(w, "window::flush_local_all", proc_null);
  w.transport->flush_local_all();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void window::sync() {
  window_impl& w = checked("window::sync");
  check_flush(w, "window::sync", proc_null);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // private and public copies agree (SYN-28)
  oneside::detail::cross_process_sync();
}

}  // namespace oneside::rma
