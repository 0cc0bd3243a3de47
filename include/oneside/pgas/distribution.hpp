// How one dimension of a distributed array is spread over the ranks of its grid dimension:
// dist::block, dist::cyclic, dist::block_cyclic(b) or dist::none, and dim_map, the O(1)
// index arithmetic of one dimension that pattern<N> (pattern.hpp) combines.
//
// Every distribution is block-cyclic with some block size b over P ranks: global index g
// belongs to rank (g / b) mod P, which stores its blocks one after the other (local index
// (g / (b·P))·b + g mod b). block is b = ceil(n / P) (UPC's and DASH's blocked: the last
// ranks may hold less or nothing), cyclic is b = 1, none is one rank holding all n (P must
// be 1 for that dimension). Everything here is constexpr and allocation-free.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oneside {

// The distribution of one dimension.
struct distribution {
  enum class kind : std::uint8_t { none, block, cyclic, block_cyclic };
  kind how = kind::block;
  std::size_t block_size = 0;  // block_cyclic only: elements per block (at least 1)

  friend constexpr bool operator==(const distribution&, const distribution&) noexcept = default;
};

namespace dist {
// Not distributed: one rank of this grid dimension holds the whole extent.
inline constexpr distribution none{distribution::kind::none, 0};
// Contiguous blocks of ceil(n / P) elements, one per rank.
inline constexpr distribution block{distribution::kind::block, 0};
// Element g on rank g mod P.
inline constexpr distribution cyclic{distribution::kind::cyclic, 0};
// Blocks of b elements dealt round-robin (UPC's shared [b]).
constexpr distribution block_cyclic(std::size_t b) noexcept {
  return {distribution::kind::block_cyclic, b};
}
}  // namespace dist

// The index arithmetic of one dimension of extent n spread over P ranks (grid coordinates
// 0 … P-1). Build with make(); the members assume a valid (n ≥ 1, P ≥ 1, b ≥ 1) map.
struct dim_map {
  std::size_t extent = 1;  // n
  std::size_t procs = 1;   // P
  std::size_t block = 1;   // b

  // The map of `d` over `procs` ranks, or a map with block 0 when d is block_cyclic(0) or
  // extent or procs is 0 (pattern::check names the problem).
  static constexpr dim_map make(std::size_t extent, std::size_t procs, distribution d) noexcept {
    if (extent == 0 || procs == 0) return {extent, procs, 0};
    switch (d.how) {
      case distribution::kind::none:
        return {extent, procs, extent};
      case distribution::kind::block:
        return {extent, procs, (extent + procs - 1) / procs};
      case distribution::kind::cyclic:
        return {extent, procs, 1};
      case distribution::kind::block_cyclic:
        break;
    }
    return {extent, procs, d.block_size};
  }

  // The coordinate owning global index g.
  constexpr std::size_t owner(std::size_t g) const noexcept { return (g / block) % procs; }
  // g's index in its owner's storage.
  constexpr std::size_t local(std::size_t g) const noexcept {
    return g / (block * procs) * block + g % block;
  }
  // The global index of coordinate c's local index l.
  constexpr std::size_t global(std::size_t c, std::size_t l) const noexcept {
    return (l / block * procs + c) * block + l % block;
  }
  // Elements coordinate c holds.
  constexpr std::size_t local_extent(std::size_t c) const noexcept {
    const std::size_t full = extent / block;  // whole blocks
    const std::size_t rest = extent % block;  // the elements of the last, partial block
    return block * (full / procs + (c < full % procs ? 1 : 0)) + (c == full % procs ? rest : 0);
  }
  // Elements of coordinate c with a global index below g (g ≤ extent): the local index the
  // first of c's elements at or after g has.
  constexpr std::size_t count_below(std::size_t c, std::size_t g) const noexcept {
    const std::size_t cycle = block * procs;
    const std::size_t into = g % cycle;  // how far into its cycle g is
    const std::size_t start = c * block;
    const std::size_t partial = into <= start ? 0 : (into - start < block ? into - start : block);
    return g / cycle * block + partial;
  }
};

}  // namespace oneside
