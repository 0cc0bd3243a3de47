// The target side of every communication call, checked before any byte moves: the epoch
// covers the target (SYN-1, SYN-15), the rank is in the group, the displacement is valid and
// every byte the target datatype touches lies inside the window (or inside one attached region
// of a dynamic window, refreshing a stale view of the target's regions first: WIN-15, COM-8,
// ERR-12). The result says where the data goes: the target-space address and, when node
// memory makes it reachable, a load/store pointer to it. A target whose control block is not
// reachable has its region table read through the transport when the version it last stored
// into this member's control block (before its attach or detach returned) says it changed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <oneside/rma/window.hpp>

#include "window/window_impl.hpp"

namespace oneside::rma::detail {

struct resolved {
  bool is_null = true;  // proc_null: nothing to do (COM-4)
  target_view* target = nullptr;
  std::uintptr_t address = 0;   // start of the target buffer in the target's address space
  std::byte* direct = nullptr;  // load/store pointer to it, or null
};

// The load/store pointer to `bytes` bytes at `disp` of `tv` and their address in the target's
// space (the stripe key), when all of them lie in memory this process reaches directly and the
// view of the target is current; null otherwise (the caller then takes the checked path,
// which refreshes a stale region view and raises the errors). The fast paths' one lookup:
// an offset check for windows with a base, a search of the current region snapshot for
// dynamic windows (displacements are addresses there).
struct direct_span {
  std::byte* pointer = nullptr;
  std::uintptr_t address = 0;
};
// The index in `t` of the region holding all of [lo, hi) (not spread over two adjacent ones),
// or t.size() when none does; good once t.valid() says so. The region `hint` names (the one
// found last) is tried first, then a binary search on the regions' bases; only the words it
// needs are read (region_word).
[[gnu::always_inline]] inline std::size_t find_region(const region_table::reader& t,
                                                      std::atomic<std::uint32_t>& hint,
                                                      std::uintptr_t lo,
                                                      std::uintptr_t hi) noexcept {
  const std::size_t n = t.size();
  if (const std::size_t h = hint.load(std::memory_order_relaxed); h < n) {
    const std::uintptr_t base = t.word(h, region_word::base);
    if (lo >= base && hi <= base + t.word(h, region_word::len)) return h;
  }
  // The first region whose base lies beyond lo; the one before it is the candidate.
  std::size_t first = 0;
  std::size_t count = n;
  while (count > 0) {
    const std::size_t half = count / 2;
    if (t.word(first + half, region_word::base) <= lo) {
      first += half + 1;
      count -= half + 1;
    } else {
      count = half;
    }
  }
  if (first == 0) return n;
  // The whole range must lie inside this one region (not across two adjacent ones).
  const std::uintptr_t base = t.word(first - 1, region_word::base);
  if (lo < base || hi > base + t.word(first - 1, region_word::len)) return n;
  hint.store(static_cast<std::uint32_t>(first - 1), std::memory_order_relaxed);
  return first - 1;
}

inline direct_span find_direct(const window_impl& w, target_view& tv, disp_t disp,
                               std::uint64_t bytes) noexcept {
  if (disp < 0) return {};
  if (w.flavor == rma::flavor::dynamic) {
    const auto lo = static_cast<std::uintptr_t>(disp);
    const region_table::reader t(tv.regions);
    if (lo + bytes < lo || t.tag() != tv.regions_version->load(std::memory_order_acquire)) {
      return {};
    }
    const std::size_t i = find_region(t, tv.region_hint, lo, lo + bytes);
    if (i == t.size()) return {};
    const std::uintptr_t offset = lo - t.word(i, region_word::base);
    auto* direct = reinterpret_cast<std::byte*>(t.word(i, region_word::direct));
    const std::uint64_t reach_lo = t.word(i, region_word::direct_lo);
    const std::uint64_t reach_hi = t.word(i, region_word::direct_hi);
    if (direct == nullptr || offset < reach_lo || offset > reach_hi || bytes > reach_hi - offset ||
        !t.valid()) {
      return {};
    }
    return {direct + offset, lo};
  }
  std::uint64_t offset = 0;
  if (tv.direct_base == nullptr ||
      __builtin_mul_overflow(static_cast<std::uint64_t>(disp),
                             static_cast<std::uint64_t>(tv.disp_unit), &offset) ||
      offset < tv.direct_lo || offset > tv.direct_hi || bytes > tv.direct_hi - offset) {
    return {};
  }
  return {tv.direct_base + offset, tv.base + offset};
}

resolved resolve_target(window_impl& w, std::string_view call, rank_t target, disp_t disp,
                        count_t target_count, const datatype& target_type);

// Epoch check for request-based calls: a passive-target epoch must cover the target (REQ-1).
void require_passive_epoch(window_impl& w, std::string_view call, rank_t target);

}  // namespace oneside::rma::detail
