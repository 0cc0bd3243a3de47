// The Parallel Research Kernels' 2-D decomposition of the stencil's n x n grid, shared by the
// stencil app and its MPI-RMA peer (bench/peers/mpi_stencil.cpp): the rank grid, each rank's
// block of cells with its ghost frame, and its neighbours. Header-only and free of oneside and
// MPI, as are the other stencil_*.hpp headers, so both programs compute exactly the same
// thing and differ only in how halos move.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace oneside::apps::stencil {

using index_t = std::ptrdiff_t;

// PRK's factorization: px is the largest divisor of `ranks` not above sqrt(ranks + 1).
inline void factor_ranks(int ranks, int& px, int& py) {
  for (px = static_cast<int>(std::sqrt(static_cast<double>(ranks) + 1.0)); px > 0; --px) {
    if (ranks % px == 0) break;
  }
  py = ranks / px;
}

// PRK's split of n cells over `parts`: the first n % parts parts get one cell more.
struct span1d {
  index_t start;
  index_t size;
};
inline span1d split(index_t n, int parts, int index) {
  const index_t base = n / parts;
  const index_t extra = n % parts;
  const index_t i = index;
  const index_t start = i * base + std::min(i, extra);
  return {start, base + (i < extra ? 1 : 0)};
}

enum side : int { left = 0, right = 1, top = 2, bottom = 3 };
inline constexpr int side_count = 4;
constexpr int opposite(int s) noexcept {
  return s ^ 1;
}

inline constexpr int no_neighbour = -1;

// A rectangle of local cells [x0, x1) x [y0, y1); empty when x1 <= x0 or y1 <= y0.
struct rect {
  index_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool empty() const noexcept { return x1 <= x0 || y1 <= y0; }
};

// One rank's block of the n x n grid: w x h owned cells at global (gx, gy), stored with a
// ghost frame R deep, row-major with row stride w + 2R. Neighbours are ranks in the tile grid
// (x fastest, as PRK: rank = ty * px + tx).
struct block {
  index_t n = 0;
  index_t r = 0;
  int px = 1, py = 1, tx = 0, ty = 0;
  index_t gx = 0, gy = 0, w = 0, h = 0;
  int neighbour[side_count] = {no_neighbour, no_neighbour, no_neighbour, no_neighbour};

  index_t stride() const noexcept { return w + 2 * r; }
  // Elements of the `in` array, ghosts included.
  index_t in_elements() const noexcept { return (h + 2 * r) * stride(); }
  // Index in the `in` array of local cell (x, y); x, y may be in [-R, w + R).
  index_t at(index_t x, index_t y) const noexcept { return (y + r) * stride() + (x + r); }
  // Cells whose out values PRK computes (the global interior), in local coordinates.
  rect active() const noexcept {
    return {std::max<index_t>(0, r - gx), std::min(w, n - r - gx), std::max<index_t>(0, r - gy),
            std::min(h, n - r - gy)};
  }
};

inline block make_block(index_t n, index_t r, int px, int py, int rank) {
  block b;
  b.n = n;
  b.r = r;
  b.px = px;
  b.py = py;
  b.tx = rank % px;
  b.ty = rank / px;
  const span1d sx = split(n, px, b.tx);
  const span1d sy = split(n, py, b.ty);
  b.gx = sx.start;
  b.w = sx.size;
  b.gy = sy.start;
  b.h = sy.size;
  if (b.tx > 0) b.neighbour[left] = rank - 1;
  if (b.tx < px - 1) b.neighbour[right] = rank + 1;
  if (b.ty > 0) b.neighbour[top] = rank - px;
  if (b.ty < py - 1) b.neighbour[bottom] = rank + px;
  return b;
}

}  // namespace oneside::apps::stencil
