// Target resolution and its checks (see resolve.hpp).
#include "ops/resolve.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <oneside/runtime/wait.hpp>

#include "runtime/layout.hpp"
#include "runtime/transport.hpp"

namespace oneside::rma::detail {
namespace {

using transport::amo_op;
using transport::amo_type;

// The version of the target's region table (odd while it changes): a load when its control
// block is reachable, a transport atomic otherwise.
std::uint64_t regions_version(window_impl& w, target_view& tv) {
  if (tv.ctl != nullptr) return tv.ctl->regions_version.load(std::memory_order_acquire);
  return ctl_fetch(w, tv, offsetof(window_ctl, regions_version), amo_op::load, amo_type::u64);
}

// Whether what `t` reads of the target's regions is current, before an access to them: the
// version in the target's control block, or, when that is out of reach, the version the
// target last stored into this member's (it does so before its attach or detach returns);
// target_view::regions_version points at the one that applies.
bool is_current(const target_view& tv, const region_table::reader& t) {
  return t.tag() == tv.regions_version->load(std::memory_order_acquire);
}

// Reads the region table of a target whose control block is not reachable, under its sequence
// lock: the version (atomically), the count and that many entries (gets, each complete when it
// returns), the version again. Returns the version of what `entries` holds.
std::uint64_t read_regions_remote(window_impl& w, target_view& tv,
                                  std::vector<region_entry>& entries) {
  for (;;) {
    std::uint64_t version = 0;
    oneside::wait_until([&] {
      version = regions_version(w, tv);
      return (version & 1U) == 0;
    });
    std::uint64_t count = 0;
    w.transport->get(tv.world, tv.ctl_address + offsetof(window_ctl, region_count),
                     std::as_writable_bytes(std::span(&count, 1)));
    entries.resize(std::min<std::uint64_t>(count, max_regions));
    if (!entries.empty()) {
      w.transport->get(tv.world, tv.ctl_address + offsetof(window_ctl, regions),
                       std::as_writable_bytes(std::span(entries)));
    }
    if (regions_version(w, tv) == version) return version;
  }
}

// The same through a pinned control block.
std::uint64_t read_regions_local(const target_view& tv, std::vector<region_entry>& entries) {
  window_ctl& c = *tv.ctl;
  for (;;) {
    std::uint64_t version = 0;
    oneside::wait_until([&] {
      version = c.regions_version.load(std::memory_order_acquire);
      return (version & 1U) == 0;
    });
    const std::uint64_t n =
        std::min<std::uint64_t>(c.region_count.load(std::memory_order_relaxed), max_regions);
    entries.resize(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      entries[i].base =
          std::atomic_ref<std::uint64_t>(c.regions[i].base).load(std::memory_order_relaxed);
      entries[i].len =
          std::atomic_ref<std::uint64_t>(c.regions[i].len).load(std::memory_order_relaxed);
      entries[i].exposure =
          std::atomic_ref<std::uint64_t>(c.regions[i].exposure).load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (c.regions_version.load(std::memory_order_relaxed) == version) return version;
  }
}

// Reads the target's region table under its sequence lock and, when it changed, rewrites this
// member's view of it; then finds the region holding [lo, hi) there.
std::optional<region_view> refresh_regions(window_impl& w, target_view& tv, std::uintptr_t lo,
                                           std::uintptr_t hi) {
  std::lock_guard lock(tv.regions_mutex);
  std::vector<region_entry> entries;
  std::uint64_t version = 0;
  if (tv.ctl == nullptr) {
    version = read_regions_remote(w, tv, entries);
  } else {
    version = read_regions_local(tv, entries);
  }
  if (region_table::reader(tv.regions).tag() != version) {
    transport::backend& tp = *w.transport;
    // Region memory is only used directly with the control block and the stripes reachable
    // (find_direct reads the version through tv.ctl; direct accumulates take the stripes).
    const bool reachable = tv.ctl != nullptr && tv.stripes != nullptr;
    std::vector<region_view> next;
    std::vector<transport::pinned> pins;
    next.reserve(entries.size());
    for (const region_entry& e : entries) {
      region_view v{static_cast<std::uintptr_t>(e.base), static_cast<std::size_t>(e.len), nullptr,
                    0, 0};
      // Memory in a segment (oneside's own allocations), and user memory the target's attach
      // moved into shared memory, is load/store reachable: pin it through what made it so.
      if (e.len > 0 && reachable) {
        direct_part d = pin_direct_part(tp, tv.world, e.exposure, v.base, v.len);
        v.direct = d.at_base;
        v.direct_lo = d.lo;
        v.direct_hi = d.hi;
        if (d.pin) pins.push_back(std::move(d.pin));
      }
      next.push_back(v);
    }
    std::sort(next.begin(), next.end(),
              [](const region_view& a, const region_view& b) { return a.base < b.base; });
    tv.regions.assign(next, version);
    // The pins of regions the table no longer names go (their mappings with them once the
    // owner withdrew the memory): a detached region is not accessed any more (WIN-16).
    tv.region_pins = std::move(pins);
  }
  const region_table::reader t(tv.regions);
  if (const std::size_t i = find_region(t, tv.region_hint, lo, hi); i < t.size()) return t[i];
  return std::nullopt;
}

}  // namespace

resolved resolve_target(window_impl& w, std::string_view call, rank_t target, disp_t disp,
                        count_t target_count, const datatype& target_type) {
  epoch_state& e = w.epoch;
  if (!e.any()) [[unlikely]] {
    w.fail(error_class::rma_sync, w.where(call, "SYN-1", target, disp),
           "no access epoch is open on this window (fence, start, lock or lock_all first)");
  }
  if (target == proc_null) return resolved{};
  if (target < 0 || target >= w.size) [[unlikely]] {
    w.fail(error_class::rank, w.where(call, "COM-10", target, disp),
           "rank " + std::to_string(target) + " is not in the window's group [0, " +
               std::to_string(w.size) + ")");
  }
  if (!e.covers(target)) [[unlikely]] {
    if (e.touch_lock(target)) {
      // The first operation under a lock taken through the transport: it is held (lock).
    } else if (e.started &&
               e.access[static_cast<std::size_t>(target)] == epoch_state::awaiting_post) {
      await_post(w, target);  // the target's window is not touched before its post (SYN-8)
    } else if (e.started) {
      w.fail(error_class::rma_sync, w.where(call, "SYN-8", target, disp),
             "target " + std::to_string(target) + " is not in the group given to start");
    } else {
      w.fail(error_class::rma_sync, w.where(call, "SYN-15", target, disp),
             "the access epoch does not cover target " + std::to_string(target) +
                 " (it is not the locked rank)");
    }
  }
  if (target_count < 0) [[unlikely]] {
    w.fail(error_class::count, w.where(call, "COM-10", target, disp),
           "the target count is negative");
  }
  if (e.fence_open && !e.fence_used.load(std::memory_order_relaxed)) {
    e.fence_used.store(true, std::memory_order_relaxed);
  }
  target_view& tv = w.target(target);
  resolved r;
  r.is_null = false;
  r.target = &tv;
  const oneside::detail::footprint fp =
      oneside::detail::memory_footprint(target_type, target_count);
  const std::uint64_t span = static_cast<std::uint64_t>(fp.hi - fp.lo);

  if (w.flavor == rma::flavor::dynamic) {
    // Displacements are absolute addresses in the target (COM-5, WIN-13).
    r.address = static_cast<std::uintptr_t>(disp);
    if (target_count == 0 || span == 0) return r;
    const std::uintptr_t lo = r.address + static_cast<std::uintptr_t>(fp.lo);
    const std::uintptr_t hi = lo + span;
    std::optional<region_view> reg;
    if (const region_table::reader t(tv.regions); is_current(tv, t)) {
      if (const std::size_t i = find_region(t, tv.region_hint, lo, hi); i < t.size()) reg = t[i];
      if (!t.valid()) reg.reset();
    }
    if (!reg) reg = refresh_regions(w, tv, lo, hi);  // maybe stale
    if (!reg) [[unlikely]] {
      w.fail(error_class::rma_range, w.where(call, "WIN-15", target, disp, span),
             "the target memory is not inside one region attached to the target's window");
    }
    if (reg->at(lo - reg->base, span) != nullptr) r.direct = reg->direct + (r.address - reg->base);
    return r;
  }

  if (disp < 0) [[unlikely]] {
    w.fail(error_class::disp, w.where(call, "ERR-7", target, disp), "the displacement is negative");
  }
  const auto udisp = static_cast<std::uint64_t>(disp);
  const auto unit = static_cast<std::uint64_t>(tv.disp_unit);
  if (udisp > std::numeric_limits<std::uint64_t>::max() / unit) [[unlikely]] {
    w.fail(error_class::rma_range, w.where(call, "COM-8", target, disp),
           "the displacement overflows");
  }
  const std::uint64_t offset = udisp * unit;
  if (target_count > 0 && span > 0) {
    // Every byte the target datatype touches lies in [0, size) of the target (COM-8).
    const bool below = fp.lo < 0 && static_cast<std::uint64_t>(-fp.lo) > offset;
    const std::uint64_t end = offset + static_cast<std::uint64_t>(fp.hi);
    if (below || end > tv.size || end < offset) [[unlikely]] {
      w.fail(error_class::rma_range, w.where(call, "COM-8", target, disp, span),
             "the target range [" + std::to_string(static_cast<std::int64_t>(offset) + fp.lo) +
                 ", " + std::to_string(end) + ") lies outside the target's window of " +
                 std::to_string(tv.size) + " bytes");
    }
  }
  r.address = tv.base + offset;
  if (tv.direct_base != nullptr) {
    // Reachable when every byte it touches is in the directly reachable part.
    const std::int64_t lo = static_cast<std::int64_t>(offset) + fp.lo;
    const std::int64_t hi = static_cast<std::int64_t>(offset) + fp.hi;
    const bool inside = target_count == 0 || span == 0 ||
                        (lo >= static_cast<std::int64_t>(tv.direct_lo) &&
                         hi <= static_cast<std::int64_t>(tv.direct_hi));
    if (inside) r.direct = tv.direct_base + offset;
  }
  return r;
}

void require_passive_epoch(window_impl& w, std::string_view call, rank_t target) {
  const epoch_state& e = w.epoch;
  const bool ok = e.lock_all || (target != proc_null && e.has_lock(target)) ||
                  (target == proc_null && e.passive());
  if (!ok) [[unlikely]] {
    w.fail(error_class::rma_sync, w.where(call, "REQ-1", target),
           "request-based operations need a passive-target epoch (lock or lock_all) covering "
           "the target");
  }
}

}  // namespace oneside::rma::detail
