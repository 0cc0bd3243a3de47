// region<N>: a rectangular box of an N-d index space, as a start index and extents
// (MPI_Type_create_subarray's starts and subsizes): the elements lo[d] ≤ i[d] < lo[d] +
// extents[d]. What dist_array's bulk get/put move, with the caller's buffer holding the box
// densely in row-major order (the last index fastest).
#pragma once

#include <array>
#include <cstddef>

namespace oneside {

template <std::size_t N>
struct region {
  using index_type = std::array<std::size_t, N>;

  index_type lo{};       // first index in each dimension
  index_type extents{};  // elements in each dimension (0: the region is empty)

  // The box [lo, hi) (hi[d] ≥ lo[d]).
  static constexpr region between(const index_type& lo, const index_type& hi) noexcept {
    region r{lo, {}};
    for (std::size_t d = 0; d < N; ++d) r.extents[d] = hi[d] - lo[d];
    return r;
  }
  // Elements in the box.
  constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (std::size_t e : extents) n *= e;
    return n;
  }

  friend constexpr bool operator==(const region&, const region&) noexcept = default;
};

}  // namespace oneside
