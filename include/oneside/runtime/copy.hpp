// The byte copy of oneside's data path: every put and get between directly reachable
// memories, the message paths' packing, collectives and datatype packing copy with
// detail::copy_bytes instead of std::memcpy. Layer API, not for applications.
//
// Why not memcpy: from 2 KiB to 1 MiB glibc's memcpy uses `rep movsb` on CPUs that announce
// fast string moves, and on AMD Zen 3/4 that instruction slows to a crawl when the
// destination sits a little ahead of the source modulo 64 bytes (8 bytes ahead: 3.3 GB/s
// instead of ~95 GB/s on this project's machines, a 30x loss; 16 or 24 bytes ahead: half
// speed). A halo of doubles put at an odd element is exactly that case. copy_bytes copies
// sizes in [copy_vector_min, copy_vector_max] with a vector loop (unaligned loads, aligned
// stores) that runs at full speed at every alignment; smaller and larger copies stay with
// memcpy (small ones never use `rep movsb`; large ones keep glibc's non-temporal stores).
#pragma once

#include <cstddef>
#include <cstring>

namespace oneside::detail {

inline constexpr std::size_t copy_vector_min = std::size_t{2} << 10;
inline constexpr std::size_t copy_vector_max = std::size_t{4} << 20;

// Copies n bytes in [copy_vector_min, copy_vector_max] (AVX2 where the CPU has it, else
// memcpy). Defined in runtime/transport/copy.cpp.
void copy_vector(void* dst, const void* src, std::size_t n) noexcept;

// std::memcpy's contract (the ranges must not overlap; n may be 0), at full speed for any
// relative alignment of dst and src.
inline void copy_bytes(void* dst, const void* src, std::size_t n) noexcept {
  if (n >= copy_vector_min && n <= copy_vector_max) {
    copy_vector(dst, src, n);
  } else if (n != 0) {
    std::memcpy(dst, src, n);
  }
}

}  // namespace oneside::detail
