// A process-local lock for critical sections of tens of nanoseconds (the heap's free list, the
// registry of pending futures): taking it is one atomic exchange and releasing it one store,
// where a std::mutex pays an atomic read-modify-write on both sides (a quarter of an
// allocate/deallocate pair, measured). A contended lock() waits the one way
// (detail::wait_until: spin, yield, sleep). unlock() rings nobody: a waiter that got as far as
// sleeping (after 220 µs with the default settings) notices the release when its sleep ends,
// at most ONESIDE_WAIT_SLEEP_MAX_US later.
#pragma once

#include <atomic>

namespace oneside::pgas::detail {

class spin_lock {
 public:
  void lock() noexcept {
    if (!held_.exchange(true, std::memory_order_acquire)) [[likely]]
      return;
    lock_contended();
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  void lock_contended() noexcept;
  std::atomic<bool> held_{false};
};

}  // namespace oneside::pgas::detail
