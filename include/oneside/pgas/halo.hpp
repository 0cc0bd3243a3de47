// halo<N>: the ghost cells a dist_array keeps around each rank's block (dist_array.hpp), as
// Chapel's Stencil distribution and DASH's halo wrappers have them: a width per dimension
// (cells on each side) and whether that dimension wraps around (periodic). A rank's block is
// padded by width[d] cells on both sides of dimension d; halo_exchange() fills the padding
// from the neighbours' owned cells (corners included), wrapping around periodic dimensions
// and leaving the padding beyond a non-periodic edge untouched.
#pragma once

#include <array>
#include <cstddef>

namespace oneside {

template <std::size_t N>
struct halo {
  std::array<std::size_t, N> width{};  // cells on each side of dimension d (0: none)
  std::array<bool, N> periodic{};      // dimension d wraps around (the last cell's neighbour is
                                       // the first)

  // No halo.
  constexpr halo() noexcept = default;
  constexpr explicit halo(const std::array<std::size_t, N>& w,
                          const std::array<bool, N>& p = {}) noexcept
      : width(w), periodic(p) {}
  // The same width `w` in every dimension, all periodic or none.
  static constexpr halo uniform(std::size_t w, bool is_periodic = false) noexcept {
    halo h;
    h.width.fill(w);
    h.periodic.fill(is_periodic);
    return h;
  }
  // Whether some dimension has a halo.
  constexpr bool any() const noexcept {
    for (const std::size_t w : width) {
      if (w != 0) return true;
    }
    return false;
  }

  friend constexpr bool operator==(const halo&, const halo&) noexcept = default;
};

}  // namespace oneside
