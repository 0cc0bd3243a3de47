// pattern<N>: where each element of an N-d distributed array lives. Global extents, a
// distribution per dimension (distribution.hpp) and a grid of ranks (P_0 × … × P_{N-1},
// ranks numbered row-major over the grid: the last coordinate varies fastest). Element g
// belongs to the rank whose grid coordinates are the owners of g's indices in each
// dimension; each rank stores its elements as a dense row-major (layout right) block of
// local_extents(rank). owner, local_index, global_index and local_extents are O(N) and
// constexpr; a pattern is a small value (no allocation), the same on every rank.
//
// The grid, unless given, is as square as possible (MPI_Dims_create's rule): the prime
// factors of the rank count go to the distributed dimensions (not dist::none), largest
// factor to the dimension with the smallest product so far, dimensions in non-increasing
// order; a dist::none dimension always has 1.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

#include <oneside/pgas/distribution.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

template <std::size_t N>
requires(N >= 1) class pattern {
 public:
  using index_type = std::array<std::size_t, N>;
  using grid_type = std::array<int, N>;

  // The grid chosen for `ranks` ranks (see above), or all zeros when no grid exists (ranks < 1,
  // or ranks > 1 with every dimension dist::none).
  static constexpr grid_type square_grid(const std::array<distribution, N>& dists, int ranks) {
    grid_type g{};
    std::size_t spread = 0;  // distributed dimensions
    for (std::size_t d = 0; d < N; ++d) {
      g[d] = 1;
      if (dists[d].how != distribution::kind::none) ++spread;
    }
    if (ranks < 1 || (spread == 0 && ranks > 1)) return grid_type{};
    // Prime factors, largest first, each to the distributed dimension with the smallest
    // product (the first such one on ties).
    std::array<int, 32> factors{};  // a rank count below 2^31 has at most 31 prime factors
    std::size_t nf = 0;
    int rest = ranks;
    for (int p = 2; p <= rest / p; ++p) {
      while (rest % p == 0) {
        factors[nf++] = p;
        rest /= p;
      }
    }
    if (rest > 1) factors[nf++] = rest;
    for (std::size_t i = nf; i-- > 0;) {
      std::size_t best = N;
      for (std::size_t d = 0; d < N; ++d) {
        if (dists[d].how == distribution::kind::none) continue;
        if (best == N || g[d] < g[best]) best = d;
      }
      g[best] *= factors[i];
    }
    // Non-increasing over the distributed dimensions (a stable selection sort).
    for (std::size_t d = 0; d < N; ++d) {
      if (dists[d].how == distribution::kind::none) continue;
      for (std::size_t e = d + 1; e < N; ++e) {
        if (dists[e].how != distribution::kind::none && g[e] > g[d]) {
          const int t = g[d];
          g[d] = g[e];
          g[e] = t;
        }
      }
    }
    return g;
  }

  // Empty when (extents, dists, grid) make a valid pattern over `ranks` ranks, else what is
  // wrong (for the caller's error message).
  static std::string check(const index_type& extents, const std::array<distribution, N>& dists,
                           const grid_type& grid, int ranks) {
    if (ranks > 1 && square_grid(dists, ranks)[0] == 0) {
      std::string why = "every dimension is dist::none, so one rank would hold all of it, but ";
      why += "the team has ";
      why += std::to_string(ranks);
      return why + " ranks";
    }
    long long product = 1;
    for (std::size_t d = 0; d < N; ++d) {
      std::string dim = "dimension ";
      dim += std::to_string(d);
      if (extents[d] == 0) return dim + " has extent 0 (every extent must be at least 1)";
      if (grid[d] < 1) return dim + " has " + std::to_string(grid[d]) + " ranks in the grid";
      if (dists[d].how == distribution::kind::none && grid[d] != 1) {
        return dim + " is dist::none but the grid gives it " + std::to_string(grid[d]) + " ranks";
      }
      if (dists[d].how == distribution::kind::block_cyclic && dists[d].block_size == 0) {
        return dim + " is block_cyclic(0) (blocks need at least 1 element)";
      }
      product *= grid[d];
      if (product > ranks) break;
    }
    if (product != ranks) {
      std::string g;
      for (std::size_t d = 0; d < N; ++d) {
        if (d != 0) g += " x ";
        g += std::to_string(grid[d]);
      }
      return "the grid " + g + " does not hold the team's " + std::to_string(ranks) + " ranks";
    }
    return {};
  }

  // The pattern over `ranks` ranks with the grid square_grid chooses. error(arg) naming
  // "pattern" for an invalid one (check()).
  constexpr pattern(const index_type& extents, const std::array<distribution, N>& dists, int ranks)
      : pattern(extents, dists, square_grid(dists, ranks), ranks) {}
  // The same with a given grid (its product must be `ranks`).
  constexpr pattern(const index_type& extents, const std::array<distribution, N>& dists,
                    const grid_type& grid, int ranks)
      : extents_(extents), dists_(dists), grid_(grid), ranks_(ranks) {
    // check() formats strings: at compile time an invalid pattern shows instead as a division
    // by zero where it is used.
    if (std::is_constant_evaluated()) {
    } else if (const std::string why = check(extents, dists, grid, ranks); !why.empty()) {
      detail::raise(error_class::arg, {.call = "pattern"}, why);
    }
    for (std::size_t d = 0; d < N; ++d) {
      maps_[d] = dim_map::make(extents[d], static_cast<std::size_t>(grid[d]), dists[d]);
    }
  }

  constexpr const index_type& extents() const noexcept { return extents_; }
  constexpr const std::array<distribution, N>& distributions() const noexcept { return dists_; }
  constexpr const grid_type& grid() const noexcept { return grid_; }
  constexpr int ranks() const noexcept { return ranks_; }
  constexpr const dim_map& dim(std::size_t d) const noexcept { return maps_[d]; }
  constexpr const std::array<dim_map, N>& dims() const noexcept { return maps_; }
  // Elements in the whole array.
  constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (std::size_t e : extents_) n *= e;
    return n;
  }
  // Whether g lies inside the extents.
  constexpr bool contains(const index_type& g) const noexcept {
    for (std::size_t d = 0; d < N; ++d) {
      if (g[d] >= extents_[d]) return false;
    }
    return true;
  }

  // Grid coordinates of rank r, and the rank at grid coordinates c.
  constexpr index_type coords(rank_t r) const noexcept {
    index_type c{};
    auto rest = static_cast<std::size_t>(r);
    for (std::size_t d = N; d-- > 0;) {
      c[d] = rest % maps_[d].procs;
      rest /= maps_[d].procs;
    }
    return c;
  }
  constexpr rank_t rank_at(const index_type& c) const noexcept {
    std::size_t r = 0;
    for (std::size_t d = 0; d < N; ++d) r = r * maps_[d].procs + c[d];
    return static_cast<rank_t>(r);
  }

  // The rank holding global index g (inside the extents).
  constexpr rank_t owner(const index_type& g) const noexcept {
    std::size_t r = 0;
    for (std::size_t d = 0; d < N; ++d) r = r * maps_[d].procs + maps_[d].owner(g[d]);
    return static_cast<rank_t>(r);
  }
  // g's index in its owner's local block.
  constexpr index_type local_index(const index_type& g) const noexcept {
    index_type l{};
    for (std::size_t d = 0; d < N; ++d) l[d] = maps_[d].local(g[d]);
    return l;
  }
  // The global index of rank r's local index l (inside local_extents(r)).
  constexpr index_type global_index(rank_t r, const index_type& l) const noexcept {
    const index_type c = coords(r);
    index_type g{};
    for (std::size_t d = 0; d < N; ++d) g[d] = maps_[d].global(c[d], l[d]);
    return g;
  }
  // The extents of rank r's local block (some may be 0: the rank holds nothing).
  constexpr index_type local_extents(rank_t r) const noexcept {
    const index_type c = coords(r);
    index_type e{};
    for (std::size_t d = 0; d < N; ++d) e[d] = maps_[d].local_extent(c[d]);
    return e;
  }
  // Elements rank r holds.
  constexpr std::size_t local_size(rank_t r) const noexcept {
    std::size_t n = 1;
    for (std::size_t e : local_extents(r)) n *= e;
    return n;
  }
  // The row-major offset of l in a block of extents e.
  static constexpr std::size_t offset(const index_type& l, const index_type& e) noexcept {
    std::size_t o = 0;
    for (std::size_t d = 0; d < N; ++d) o = o * e[d] + l[d];
    return o;
  }

  friend constexpr bool operator==(const pattern&, const pattern&) noexcept = default;

 private:
  index_type extents_{};
  std::array<distribution, N> dists_{};
  grid_type grid_{};
  int ranks_ = 1;
  std::array<dim_map, N> maps_{};
};

}  // namespace oneside
