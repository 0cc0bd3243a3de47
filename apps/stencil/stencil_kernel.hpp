// The stencil kernel of the Parallel Research Kernels (../../shared/reference/prk-stencil.md)
// on one rank's block: the star stencil's sweep, the increment of `in`, the initial values
// and the norm the verification sums (stencil_verify.hpp).
//
// The kernel runs in phases so that halo exchange overlaps computation and `in` is touched
// once per iteration:
//   A (no ghost needed): out over the block's interior, rows in order; right after out row y
//     the increment of in row y - R (its last reader is done) runs while the row is in cache;
//   B (ghosts arrived):  out over the rest of the block (a frame R wide);
//   C:                   the increments phase A could not do (a frame 2R wide).
// Halo data (cells within R of an edge) and what phase B reads (within 2R) are incremented
// only in phase C, after the exchange has completed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "stencil_decomposition.hpp"

namespace oneside::apps::stencil {

enum class kernel_kind : std::uint8_t {
  fused,  // phases A/B/C: overlap and one pass over `in`
  prk,    // as PRK's codes: exchange, then out everywhere, then a separate pass in += 1
};

// out(x, y) += sum of w * in over the star, for x in [x0, x1) of one row; `in` points at the
// row's cell x = 0, s is its row stride. Terms in PRK's order (y from -R to R, then x), the
// centre's zero weight left out. R known at compile time, so the compiler unrolls the terms
// and vectorizes over x.
template <int R>
[[gnu::always_inline]] inline void stencil_row_body(const double* __restrict in, index_t s,
                                                    double* __restrict out, index_t x0,
                                                    index_t x1) {
  constexpr double r2 = 2.0 * R;
  for (index_t x = x0; x < x1; ++x) {
    double acc = out[x];
    for (int k = R; k >= 1; --k) acc += -1.0 / (r2 * k) * in[x - k * s];
    for (int k = 1; k <= R; ++k) acc += 1.0 / (r2 * k) * in[x + k * s];
    for (int k = R; k >= 1; --k) acc += -1.0 / (r2 * k) * in[x - k];
    for (int k = 1; k <= R; ++k) acc += 1.0 / (r2 * k) * in[x + k];
    out[x] = acc;
  }
}

// Any radius: one pass over the row per term (same order of additions per point).
inline void stencil_row_any(int radius, const double* __restrict in, index_t s,
                            double* __restrict out, index_t x0, index_t x1) {
  const double r2 = 2.0 * radius;
  auto pass = [&](double weight, index_t offset) {
    for (index_t x = x0; x < x1; ++x) out[x] += weight * in[x + offset];
  };
  for (int k = radius; k >= 1; --k) pass(-1.0 / (r2 * k), -k * s);
  for (int k = 1; k <= radius; ++k) pass(1.0 / (r2 * k), k * s);
  for (int k = radius; k >= 1; --k) pass(-1.0 / (r2 * k), -k);
  for (int k = 1; k <= radius; ++k) pass(1.0 / (r2 * k), k);
}

[[gnu::always_inline]] inline void increment_row(double* __restrict row, index_t x0, index_t x1) {
  for (index_t x = x0; x < x1; ++x) row[x] += 1.0;
}

// The arrays of one block: `in` with its ghost frame (in_elements() doubles) and `out`
// (w x h, row stride w).
struct grid {
  const block* b;
  double* in;
  double* out;
};

// out over `area`, rows in order; after out row y, in row y - R is incremented over the
// columns of `inc` when that row lies in `inc`.
template <int R>
[[gnu::always_inline]] inline void sweep_body(const grid& g, const rect& area, const rect& inc) {
  const block& b = *g.b;
  const index_t s = b.stride();
  const bool fuse = !inc.empty();
  for (index_t y = area.y0; y < area.y1; ++y) {
    stencil_row_body<R>(g.in + b.at(0, y), s, g.out + y * b.w, area.x0, area.x1);
    const index_t done = y - R;
    if (fuse && done >= inc.y0 && done < inc.y1) {
      increment_row(g.in + b.at(0, done), inc.x0, inc.x1);
    }
  }
}

using sweep_fn = void (*)(const grid&, const rect&, const rect&);

template <int R>
void sweep_baseline(const grid& g, const rect& area, const rect& inc) {
  sweep_body<R>(g, area, inc);
}

#if defined(__x86_64__)
// The same sweep compiled for AVX2 and FMA (4 doubles a vector instead of SSE2's 2), chosen
// at run time: the kernel is not purely memory-bound (about 1.2x faster than the baseline
// build at n = 4000 on one rank), and the build targets baseline x86-64. Contracted
// multiply-adds round differently in the last bit; the verification tolerance (1e-8 on a
// norm of about 2 * iterations) is far above that.
template <int R>
[[gnu::target("avx2,fma")]] void sweep_avx2(const grid& g, const rect& area, const rect& inc) {
  sweep_body<R>(g, area, inc);
}
#endif

// The sweep of radius R for this CPU.
template <int R>
sweep_fn sweep_for_cpu() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &sweep_avx2<R>;
#endif
  return &sweep_baseline<R>;
}

// The compiled sweep for `radius` (1 … 8), null for other radii.
inline sweep_fn sweep_kernel(int radius) {
  switch (radius) {
    case 1:
      return sweep_for_cpu<1>();
    case 2:
      return sweep_for_cpu<2>();
    case 3:
      return sweep_for_cpu<3>();
    case 4:
      return sweep_for_cpu<4>();
    case 5:
      return sweep_for_cpu<5>();
    case 6:
      return sweep_for_cpu<6>();
    case 7:
      return sweep_for_cpu<7>();
    case 8:
      return sweep_for_cpu<8>();
    default:
      return nullptr;
  }
}

// out over `area`; with `inc` not empty, fused increments as sweep_body.
inline void sweep(const grid& g, const rect& area, const rect& inc) {
  if (area.empty()) return;
  const int radius = static_cast<int>(g.b->r);
  if (const sweep_fn fn = sweep_kernel(radius)) {
    fn(g, area, inc);
    return;
  }
  const block& b = *g.b;
  for (index_t y = area.y0; y < area.y1; ++y) {
    stencil_row_any(radius, g.in + b.at(0, y), b.stride(), g.out + y * b.w, area.x0, area.x1);
    const index_t done = y - b.r;
    if (!inc.empty() && done >= inc.y0 && done < inc.y1) {
      increment_row(g.in + b.at(0, done), inc.x0, inc.x1);
    }
  }
}

inline void increment(const grid& g, const rect& area) {
  for (index_t y = area.y0; y < area.y1; ++y) increment_row(g.in + g.b->at(0, y), area.x0, area.x1);
}

// The three phases' areas for one block (see the file comment).
struct phases {
  rect interior;           // A: out needing no ghost cell
  rect fused;              // A: increments done during the interior sweep
  std::vector<rect> edge;  // B: the rest of the active area
  std::vector<rect> rest;  // C: increments not done in A
};

// The rectangles of `outer` outside `inner` (inner clamped into outer): up to four.
inline std::vector<rect> frame(const rect& outer, rect inner) {
  std::vector<rect> out;
  if (outer.empty()) return out;
  inner.x0 = std::clamp(inner.x0, outer.x0, outer.x1);
  inner.x1 = std::clamp(inner.x1, inner.x0, outer.x1);
  inner.y0 = std::clamp(inner.y0, outer.y0, outer.y1);
  inner.y1 = std::clamp(inner.y1, inner.y0, outer.y1);
  if (inner.empty()) {
    out.push_back(outer);
    return out;
  }
  auto add = [&](rect q) {
    if (!q.empty()) out.push_back(q);
  };
  add({outer.x0, outer.x1, outer.y0, inner.y0});
  add({outer.x0, inner.x0, inner.y0, inner.y1});
  add({inner.x1, outer.x1, inner.y0, inner.y1});
  add({outer.x0, outer.x1, inner.y1, outer.y1});
  return out;
}

inline phases plan(const block& b, kernel_kind kind) {
  phases p;
  const rect act = b.active();
  const rect owned{0, b.w, 0, b.h};
  if (kind == kernel_kind::prk) {
    if (!act.empty()) p.edge.push_back(act);
    p.rest.push_back(owned);
    return p;
  }
  const index_t r = b.r;
  // Interior: out(x, y) reads only owned cells. active() starts at 0 or R and ends at w or
  // w - R on each axis, so this lies inside it.
  rect in{r, b.w - r, r, b.h - r};
  if (in.empty()) in = {};
  p.interior = in;
  // Cells whose every reader is in the interior: 2R from each edge.
  const index_t fx0 = std::min(2 * r, b.w);
  const index_t fy0 = std::min(2 * r, b.h);
  rect fused{fx0, std::max(fx0, b.w - 2 * r), fy0, std::max(fy0, b.h - 2 * r)};
  if (fused.empty() || in.empty()) fused = {};
  p.fused = fused;
  p.edge = frame(act, in);
  p.rest = fused.empty() ? std::vector<rect>{owned} : frame(owned, fused);
  return p;
}

// Sum of |out| over the active cells of this block.
inline double local_norm(const grid& g) {
  const rect a = g.b->active();
  double norm = 0.0;
  for (index_t y = a.y0; y < a.y1; ++y) {
    const double* row = g.out + y * g.b->w;
    for (index_t x = a.x0; x < a.x1; ++x) norm += std::fabs(row[x]);
  }
  return norm;
}

// in(i, j) = i + j (COEFX = COEFY = 1) on owned cells, ghosts 0; out = 0.
inline void initialize(const grid& g) {
  const block& b = *g.b;
  std::fill(g.in, g.in + b.in_elements(), 0.0);
  for (index_t y = 0; y < b.h; ++y) {
    double* row = g.in + b.at(0, y);
    for (index_t x = 0; x < b.w; ++x) row[x] = static_cast<double>(b.gx + x + b.gy + y);
  }
  std::fill(g.out, g.out + b.w * b.h, 0.0);
}

}  // namespace oneside::apps::stencil
