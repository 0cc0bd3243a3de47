// The contended path of spin_lock (see spin_lock.hpp).
#include "pgas/spin_lock.hpp"

#include <oneside/runtime/wait.hpp>

namespace oneside::pgas::detail {

void spin_lock::lock_contended() noexcept {
  oneside::detail::wait_until([this]() noexcept {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  });
}

}  // namespace oneside::pgas::detail
