// The shared path of owned_lock and its revocation (see owned_lock.hpp).
#include "pgas/owned_lock.hpp"

#include <cstdio>
#include <cstdlib>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <oneside/runtime/wait.hpp>

namespace oneside::pgas::detail {
namespace {

long membarrier(int cmd) noexcept {
  return ::syscall(SYS_membarrier, cmd, 0U, 0);
}

// Whether this process may force barriers on its threads (registered once).
bool can_revoke() noexcept {
  static const bool registered = [] {
    const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    return cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
           membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return registered;
}

}  // namespace

owned_lock::owned_lock() noexcept {
  if (can_revoke()) owner_.store(self(), std::memory_order_relaxed);
}

void owned_lock::lock_shared() noexcept {
  inner_.lock();
  if (owner_.load(std::memory_order_relaxed) == nullptr) return;
  owner_.store(nullptr, std::memory_order_relaxed);
  // A barrier on every thread of the process: after it the owner either announced it is
  // inside (visible here now) or reads the ownership withdrawn. Registered, it cannot fail
  // but for a kernel bug, and then nothing could exclude the owner.
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
    std::fprintf(stderr, "oneside: membarrier failed after its registration; aborting\n");
    std::abort();
  }
  if (inside_.load(std::memory_order_acquire)) {
    oneside::detail::wait_until(
        [this]() noexcept { return !inside_.load(std::memory_order_acquire); });
  }
}

}  // namespace oneside::pgas::detail
