// What a window looks like to a thread blocked in one of its calls, for hang diagnosis
// (oneside::detail::wait_scope; ONESIDE_HANG_TIMEOUT, oneside-run --dump): the window, its
// epochs, the target's lock word when it is readable here, and what is not yet completed.
#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/wait_context.hpp"
#include "window/window_impl.hpp"

namespace oneside::rma::detail {
namespace {

std::string_view flavor_name(rma::flavor f) noexcept {
  switch (f) {
    case rma::flavor::create:
      return "create";
    case rma::flavor::allocate:
      return "allocate";
    case rma::flavor::allocate_shared:
      return "allocate_shared";
    case rma::flavor::dynamic:
      return "dynamic";
  }
  return "?";
}

void append_ranks(std::string& out, const std::vector<rank_t>& ranks) {
  constexpr std::size_t shown = 16;
  out.append("[");
  for (std::size_t i = 0; i < ranks.size() && i < shown; ++i) {
    if (i > 0) out.append(" ");
    out.append(std::to_string(ranks[i]));
  }
  if (ranks.size() > shown) out.append(" … ").append(std::to_string(ranks.size())).append(" ranks");
  out.append("]");
}

void describe_epochs(const window_impl& w, std::string& out) {
  const epoch_state& e = w.epoch;
  std::string epochs;
  const auto add = [&](std::string_view what) {
    if (!epochs.empty()) epochs.append("; ");
    epochs.append(what);
  };
  if (e.fence_open) add("fence epoch open");
  if (e.lock_all) add("lock_all");
  // Another thread's first operation under a lock moves it between the lists, under the mutex.
  if (std::unique_lock guard(e.untouched_mutex, std::try_to_lock); guard.owns_lock()) {
    for (const auto& [target, type] : e.locks) {
      add("lock(" + std::string(type == lock_type::exclusive ? "exclusive" : "shared") +
          ", target " + std::to_string(target) + ")");
    }
    for (const auto& l : e.untouched_locks) {
      add("lock(" + std::string(l.type == lock_type::exclusive ? "exclusive" : "shared") +
          ", target " + std::to_string(l.target) + ", not used yet)");
    }
  }
  if (e.started) {
    std::string access = "access epoch (start) to ";
    append_ranks(access, e.access_group);
    std::vector<rank_t> awaiting;
    for (rank_t t : e.access_group) {
      if (e.access[static_cast<std::size_t>(t)] == epoch_state::awaiting_post)
        awaiting.push_back(t);
    }
    if (!awaiting.empty()) {
      access.append(", post not seen yet from ");
      append_ranks(access, awaiting);
    }
    add(access);
  }
  if (e.posted) {
    std::string exposure = "exposure epoch (post) to ";
    append_ranks(exposure, e.exposure_group);
    add(exposure);
  }
  out.append("epochs: ").append(epochs.empty() ? "none" : epochs);
}

void describe_lock_word(const window_impl& w, rank_t target, std::string& out) {
  const target_view& tv = w.target(target);
  if (tv.ctl == nullptr) return;  // reached through the transport: not read from here
  const std::uint64_t word = tv.ctl->lock.load(std::memory_order_relaxed);
  out.append("; lock word of target ").append(std::to_string(target)).append(": ");
  if ((word & lock_exclusive) != 0) {
    out.append("held exclusively");
  } else if (word != 0) {
    out.append("held shared by ").append(std::to_string(word));
  } else {
    out.append("free");
  }
  const std::uint32_t waiters = tv.ctl->lock_waiters.load(std::memory_order_relaxed);
  if (waiters != 0) out.append(", ").append(std::to_string(waiters)).append(" waiting");
}

void describe_outstanding(const window_impl& w, std::string& out) {
  std::string pending;
  int listed = 0;
  int more = 0;
  for (rank_t t = 0; t < w.size; ++t) {
    const target_view& tv = w.target(t);
    const std::uint64_t issued = tv.transport_ops.load(std::memory_order_relaxed);
    const std::uint64_t flushed = tv.transport_flushed.load(std::memory_order_relaxed);
    const bool agent = tv.agent_pending.load(std::memory_order_relaxed);
    if (issued <= flushed && !agent) continue;
    if (listed == 8) {
      ++more;
      continue;
    }
    ++listed;
    if (!pending.empty()) pending.append(", ");
    if (issued > flushed) {
      pending.append(std::to_string(issued - flushed))
          .append(" to rank ")
          .append(std::to_string(t));
    }
    if (agent) {
      pending.append(issued > flushed ? " (accumulates at its agent)"
                                      : "accumulates at rank " + std::to_string(t) + "'s agent");
    }
  }
  if (more > 0) pending.append(" and more to ").append(std::to_string(more)).append(" ranks");
  out.append("; not yet flushed: ").append(pending.empty() ? "nothing" : pending);
}

// The epochs of a window of another call, from what its calls showed (epoch_state::show).
void describe_shown(const window_impl& w, std::string& out) {
  const epoch_state& e = w.epoch;
  const std::uint32_t kinds = e.shown_kinds.load(std::memory_order_relaxed);
  const std::int32_t locks = e.shown_locks.load(std::memory_order_relaxed);
  if (kinds == 0 && locks == 0) return;
  std::string epochs;
  const auto add = [&](const std::string& what) {
    if (!epochs.empty()) epochs.append(", ");
    epochs.append(what);
  };
  if ((kinds & epoch_state::shown_fence) != 0) add("fence epoch open");
  if ((kinds & epoch_state::shown_lock_all) != 0) add("lock_all");
  if (locks > 0) {
    const bool exclusive = e.shown_lock_exclusive.load(std::memory_order_relaxed);
    std::string what = "lock(";
    what.append(exclusive ? "exclusive" : "shared").append(", target ");
    what.append(std::to_string(e.shown_lock_target.load(std::memory_order_relaxed))).append(")");
    if (locks > 1) what.append(" and ").append(std::to_string(locks - 1)).append(" more locks");
    add(what);
  }
  if ((kinds & epoch_state::shown_access) != 0) add("access epoch (start)");
  if ((kinds & epoch_state::shown_exposure) != 0) add("exposure epoch (post)");
  if (!out.empty()) out.append("; ");
  out.append("window #").append(std::to_string(w.id)).append(": ").append(epochs);
}

}  // namespace

window_registry::window_registry() {
  oneside::detail::add_wait_context(&window_registry::describe, this);
}

window_registry::~window_registry() {
  oneside::detail::remove_wait_context(this);
}

void window_registry::add(const window_impl* w) {
  std::lock_guard lock(mutex_);
  windows_.push_back(w);
}

void window_registry::remove(const window_impl* w) noexcept {
  std::lock_guard lock(mutex_);
  std::erase(windows_, w);
}

void window_registry::describe(const void* registry, std::string& out) noexcept {
  auto& self = *static_cast<window_registry*>(const_cast<void*>(registry));
  std::unique_lock lock(self.mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // a window is being made or freed: next time
  try {
    std::string epochs;
    for (const window_impl* w : self.windows_) describe_shown(*w, epochs);
    if (!epochs.empty()) out.append("open epochs of this rank: ").append(epochs);
  } catch (...) {
    // Out of memory: nothing added.
  }
}

window_impl::~window_impl() {
  if (registry) registry->remove(this);
}

void describe_window(const void* window, rank_t target, std::string& out) noexcept {
  try {
    const auto& w = *static_cast<const window_impl*>(window);
    out.append("window #").append(std::to_string(w.id)).append(" (");
    out.append(flavor_name(w.flavor)).append(", rank ").append(std::to_string(w.rank));
    out.append(" of ").append(std::to_string(w.size)).append("); ");
    describe_epochs(w, out);
    if (target >= 0 && target < w.size) describe_lock_word(w, target, out);
    describe_outstanding(w, out);
  } catch (...) {
    // Out of memory: the description stays as far as it got.
  }
}

}  // namespace oneside::rma::detail
