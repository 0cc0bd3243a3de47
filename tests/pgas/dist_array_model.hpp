// The index arithmetic the dist_array tests check the arrays against (a serial model of the
// row-major global index space), and their loop over every distribution of every dimension.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

namespace oneside::test {

template <std::size_t N>
using idx = std::array<std::size_t, N>;

// The row-major position of g in extents e.
template <std::size_t N>
std::size_t flat(const idx<N>& g, const idx<N>& e) {
  std::size_t o = 0;
  for (std::size_t d = 0; d < N; ++d) o = o * e[d] + g[d];
  return o;
}

// The index at row-major position o of extents e.
template <std::size_t N>
idx<N> unflatten(std::size_t o, const idx<N>& e) {
  idx<N> g{};
  for (std::size_t d = N; d-- > 0;) {
    g[d] = o % e[d];
    o /= e[d];
  }
  return g;
}

// The global index of the o-th element (row-major) of region r.
template <std::size_t N>
idx<N> in_region(const region<N>& r, std::size_t o) {
  idx<N> g = unflatten(o, r.extents);
  for (std::size_t d = 0; d < N; ++d) g[d] += r.lo[d];
  return g;
}

// "extents 7:1 5:2": each extent and its distribution's kind, for failure messages.
template <std::size_t N>
std::string describe(const idx<N>& e, const std::array<distribution, N>& ds) {
  std::string s = "extents";
  for (std::size_t d = 0; d < N; ++d) {
    s += ' ' + std::to_string(e[d]) + ':' + std::to_string(static_cast<int>(ds[d].how));
  }
  return s;
}

// Calls f(extents, dists) for every `stride`-th combination of `kinds` over N dimensions on
// each shape, skipping those with no grid for this many ranks (every dimension none). A
// stride of 5 over three dimensions of four kinds (13 of the 64) still gives every dimension
// every kind.
template <std::size_t N, class F>
void for_each_config(std::span<const distribution> kinds, const std::vector<idx<N>>& shapes, F f,
                     std::size_t stride = 1) {
  std::size_t combos = 1;
  for (std::size_t d = 0; d < N; ++d) combos *= kinds.size();
  for (const idx<N>& e : shapes) {
    for (std::size_t c = 0; c < combos; c += stride) {
      std::array<distribution, N> ds{};
      std::size_t rest = c;
      for (std::size_t d = 0; d < N; ++d) {
        ds[d] = kinds[rest % kinds.size()];
        rest /= kinds.size();
      }
      if (pattern<N>::square_grid(ds, world().size())[0] == 0) continue;
      f(e, ds);
    }
  }
}

}  // namespace oneside::test
