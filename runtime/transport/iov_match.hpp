// The byte streams of the iovec transfers (putv/getv), shared by the transports: a local and
// a remote list of pieces of the same total length, walked together.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/transport.hpp"

namespace oneside::transport::detail {

// The bytes of a list of pieces.
template <class Iov>
std::size_t stream_bytes(std::span<const Iov> v) noexcept {
  std::size_t n = 0;
  for (const auto& p : v) n += p.len;
  return n;
}

// Calls fn(local, remote, n) for matched pieces of two byte streams of equal total length:
// each stretch that is contiguous on both sides, in order.
template <class Iov, class Fn>
void match_streams(std::span<const Iov> local, std::span<const remote_iov> remote, Fn&& fn) {
  std::size_t li = 0, ri = 0, lo = 0, ro = 0;
  while (li < local.size() && ri < remote.size()) {
    const std::size_t n = std::min(local[li].len - lo, remote[ri].len - ro);
    if (n > 0) fn(local[li].base + lo, remote[ri].addr + ro, n);
    lo += n;
    ro += n;
    if (lo == local[li].len) {
      ++li;
      lo = 0;
    }
    if (ro == remote[ri].len) {
      ++ri;
      ro = 0;
    }
  }
}

}  // namespace oneside::transport::detail
