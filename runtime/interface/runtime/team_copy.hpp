// Private copies of teams for the layers above: objects that run collectives of their own.
#pragma once

#include <cstddef>

#include <oneside/runtime/team.hpp>

namespace oneside::detail {

// A private copy of `parent` (same members, same order) with its own small collective area:
// for objects that need collectives of their own, like windows (their fence and free must not
// interleave with the application's collectives on the parent). Collective over `parent`.
team duplicate_team(const team& parent, std::size_t slot_bytes, std::size_t slots);

}  // namespace oneside::detail
