// A process-local lock biased to one thread, its owner (the thread that made it): while no
// other thread took it, the owner takes and releases it with plain stores, no atomic
// read-modify-write and no fence (an aggregator's calls: one thread issues millions). The first
// other thread to take it revokes the bias, after which everybody takes an inner spin_lock:
// it withdraws the ownership, forces a barrier on every thread of the process
// (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED) and waits (detail::wait_until) for the
// owner to leave. The owner's side is half of a Dekker pair whose fence the membarrier
// supplies (an asymmetric fence, as liburcu and folly use them): after it, the owner either
// has announced it is inside (and the revoker waits for it) or sees the ownership withdrawn.
// Where the kernel has no private expedited membarrier, the lock is never biased. A holder may
// wait inside (an aggregator's full buffers): a task suspended there may resume on another
// thread and release the lock from there, and another task of the owner's thread that comes in
// meanwhile finds it held and takes the shared way, which waits for the holder.
//
//   owned_lock lock;
//   { const owned_lock::guard g(lock); /* … */ }
#pragma once

#include <atomic>

#include "pgas/spin_lock.hpp"

namespace oneside::pgas::detail {

class owned_lock {
 public:
  // Biased to the calling thread when the kernel allows it.
  owned_lock() noexcept;
  owned_lock(const owned_lock&) = delete;
  owned_lock& operator=(const owned_lock&) = delete;

  // Holds the lock for its scope (the owner's way or the shared one).
  class guard {
   public:
    explicit guard(owned_lock& l) noexcept : lock_(l), owned_(l.enter_owned()) {
      if (!owned_) lock_.lock_shared();
    }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    ~guard() {
      if (owned_) {
        lock_.inside_.store(false, std::memory_order_release);
      } else {
        lock_.inner_.unlock();
      }
    }

   private:
    owned_lock& lock_;
    bool owned_;
  };

  // Whether the lock is still biased (for tests).
  bool is_biased() const noexcept { return owner_.load(std::memory_order_relaxed) != nullptr; }

 private:
  // A token of the calling thread, unique among live threads (its thread pointer).
  static void* self() noexcept { return __builtin_thread_pointer(); }

  // Inside already (a task that holds it suspended in a wait and another task of this thread
  // came in): the shared way, which revokes the bias and waits for the holder.
  bool enter_owned() noexcept {
    if (owner_.load(std::memory_order_relaxed) != self() ||
        inside_.load(std::memory_order_acquire)) {
      return false;
    }
    inside_.store(true, std::memory_order_relaxed);
    // The compiler's order only: a revoker's membarrier orders the two at run time.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (owner_.load(std::memory_order_relaxed) == self()) [[likely]] {
      return true;
    }
    inside_.store(false, std::memory_order_release);
    return false;
  }
  // Takes the inner lock, first revoking the bias if it still holds.
  void lock_shared() noexcept;

  std::atomic<void*> owner_{nullptr};  // null once revoked, or never biased
  std::atomic<bool> inside_{false};    // written by the owner only
  spin_lock inner_;
};

}  // namespace oneside::pgas::detail
