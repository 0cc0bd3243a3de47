// The target side of every communication call, checked before any byte moves: the epoch
// covers the target (SYN-1, SYN-15), the rank is in the group, the displacement is valid and
// every byte the target datatype touches lies inside the window (or inside one attached region
// of a dynamic window, refreshing a stale view of the target's regions first: WIN-15, COM-8,
// ERR-12). The result says where the data goes: the target-space address and, when node
// memory makes it reachable, a load/store pointer to it.
#pragma once

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

resolved resolve_target(window_impl& w, std::string_view call, rank_t target, disp_t disp,
                        count_t target_count, const datatype& target_type);

// Epoch check for request-based calls: a passive-target epoch must cover the target (REQ-1).
void require_passive_epoch(window_impl& w, std::string_view call, rank_t target);

}  // namespace oneside::rma::detail
