// Basic vocabulary types shared by every layer: ranks, counts and special rank values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oneside {

// A rank in a team (0 … size-1). Ranks are ints, as in MPI and SHMEM.
using rank_t = int;

// Element counts and byte counts are 64-bit everywhere (COM-20).
using count_t = std::int64_t;

// The "no process" rank of the spec (MPI_PROC_NULL): operations to it do nothing (COM-4).
inline constexpr rank_t proc_null = -2;

// A rank value that names no member (e.g. team::from_world of a non-member).
inline constexpr rank_t no_rank = -1;

}  // namespace oneside
