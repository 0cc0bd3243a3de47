// fence (SYN-5, SYN-6, SYN-32, SYN-34): the collective active-target synchronization, with
// the epoch checks the spec asks for.
#include <atomic>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/collectives.hpp>

#include "sync/sync.hpp"
#include "window/window_impl.hpp"

namespace oneside::rma {

using detail::complete_all;
using detail::window_impl;

void window::fence(mode assert) {
  window_impl& w = checked("window::fence");
  const auto waiting = detail::window_scope("window::fence", w);
  detail::check_assert(w, "window::fence", assert);
  detail::epoch_state& e = w.epoch;
  if (e.passive()) {
    w.fail(error_class::rma_sync, w.where("window::fence", "SYN-34"),
           "fence inside a passive-target epoch (unlock or unlock_all first)");
  }
  if (e.started || e.posted) {
    w.fail(error_class::rma_sync, w.where("window::fence", "SYN-34"),
           e.started ? "fence inside a start epoch (complete first)"
                     : "fence inside a post epoch (wait or test first)");
  }
  if (any(assert& mode::noprecede) && e.fence_open &&
      e.fence_used.load(std::memory_order_relaxed)) {
    w.fail(error_class::rma_sync, w.where("window::fence", "SYN-32"),
           "fence(noprecede) with RMA operations issued since the previous fence");
  }
  // Operations complete at their targets before anyone leaves the fence (MEM-8); the barrier
  // also orders the members' memory (SYN-5, SYN-6).
  complete_all(w);
  barrier(w.team);
  e.fence_open = !any(assert& mode::nosucceed);
  e.fence_used.store(false, std::memory_order_relaxed);
  e.show();
}

}  // namespace oneside::rma
