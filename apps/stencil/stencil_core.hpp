// What the stencil mini-app and its MPI-RMA peer (bench/peers/mpi_stencil.cpp) share: the
// command line, the Parallel Research Kernels' 2-D decomposition, the local block with its
// ghost frame, and the kernel itself (../../shared/reference/prk-stencil.md). Header-only and
// free of oneside and MPI, so both programs compute exactly the same thing and differ only in
// how halos move.
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
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oneside::apps::stencil {

using index_t = std::ptrdiff_t;

// ---- command line ------------------------------------------------------------------------

enum class kernel_kind : std::uint8_t {
  fused,  // phases A/B/C: overlap and one pass over `in`
  prk,    // as PRK's codes: exchange, then out everywhere, then a separate pass in += 1
};
enum class halo_kind : std::uint8_t {
  pack,      // columns packed into a contiguous buffer, put into the neighbour's receive buffer
  datatype,  // columns put with a vector datatype straight into the neighbour's ghost zone
};

struct options {
  index_t n = 1000;
  int radius = 2;
  int iterations = 10;
  std::string variant = "fence";
  kernel_kind kernel = kernel_kind::fused;
  halo_kind halo = halo_kind::pack;
  int tiles_x = 0;  // 0: PRK's factorization of the rank count
  int tiles_y = 0;
  bool inject_error = false;  // testing only: perturb one result so verification must fail
  bool help = false;
};

struct parse_result {
  options opts;
  std::string error;  // empty when the command line is valid
};

template <class T>
bool parse_number(std::string_view s, T& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc{} && p == end;
}

// Parses `--name value` and `--name=value`. `variants` lists the accepted --variant values.
inline parse_result parse_options(int argc, char** argv, const std::vector<std::string>& variants,
                                  std::string_view default_variant, kernel_kind default_kernel) {
  parse_result r;
  r.opts.variant = std::string(default_variant);
  r.opts.kernel = default_kernel;
  auto fail = [&](std::string msg) {
    if (r.error.empty()) r.error = std::move(msg);
  };
  for (int i = 1; i < argc && r.error.empty(); ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool has_value = false;
    if (const auto eq = arg.find('='); eq != std::string_view::npos && arg.starts_with("--")) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto take = [&]() -> std::optional<std::string_view> {
      if (has_value) return value;
      if (i + 1 >= argc) {
        fail("option " + std::string(arg) + " needs a value");
        return std::nullopt;
      }
      return std::string_view(argv[++i]);
    };
    auto number = [&](auto& out, long long lo, long long hi) {
      const auto v = take();
      if (!v) return;
      long long x = 0;
      if (!parse_number(*v, x) || x < lo || x > hi) {
        fail("option " + std::string(arg) + ": '" + std::string(*v) + "' is not an integer in [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return;
      }
      out = static_cast<std::remove_reference_t<decltype(out)>>(x);
    };
    if (arg == "--help" || arg == "-h") {
      r.opts.help = true;
    } else if (arg == "--n" || arg == "-n") {
      number(r.opts.n, 1, 1LL << 20);
    } else if (arg == "--radius" || arg == "-r") {
      number(r.opts.radius, 1, 1 << 10);
    } else if (arg == "--iterations" || arg == "-i") {
      number(r.opts.iterations, 1, 1 << 30);
    } else if (arg == "--variant" || arg == "-v") {
      if (const auto v = take()) {
        if (std::find(variants.begin(), variants.end(), *v) == variants.end()) {
          std::string known;
          for (const auto& k : variants) known += (known.empty() ? "" : ", ") + k;
          fail("unknown variant '" + std::string(*v) + "' (known: " + known + ")");
        }
        r.opts.variant = std::string(*v);
      }
    } else if (arg == "--kernel") {
      if (const auto v = take()) {
        if (*v == "fused") {
          r.opts.kernel = kernel_kind::fused;
        } else if (*v == "prk") {
          r.opts.kernel = kernel_kind::prk;
        } else {
          fail("unknown kernel '" + std::string(*v) + "' (known: fused, prk)");
        }
      }
    } else if (arg == "--halo") {
      if (const auto v = take()) {
        if (*v == "pack") {
          r.opts.halo = halo_kind::pack;
        } else if (*v == "datatype") {
          r.opts.halo = halo_kind::datatype;
        } else {
          fail("unknown halo method '" + std::string(*v) + "' (known: pack, datatype)");
        }
      }
    } else if (arg == "--tiles") {
      if (const auto v = take()) {
        const auto x = v->find('x');
        if (x == std::string_view::npos || !parse_number(v->substr(0, x), r.opts.tiles_x) ||
            !parse_number(v->substr(x + 1), r.opts.tiles_y) || r.opts.tiles_x < 1 ||
            r.opts.tiles_y < 1) {
          fail("option --tiles: '" + std::string(*v) + "' is not of the form PXxPY");
        }
      }
    } else if (arg == "--inject-error") {
      r.opts.inject_error = true;
    } else {
      fail("unknown argument '" + std::string(arg) + "' (see --help)");
    }
  }
  return r;
}

inline void print_usage(std::FILE* f, const char* program, std::string_view variants,
                        const char* default_kernel) {
  std::fprintf(f,
               "usage: %s [--n N] [--radius R] [--iterations I] [--variant V] [options]\n"
               "  The Parallel Research Kernels' Stencil: a star stencil of radius R on an N x N\n"
               "  grid of doubles, distributed over a 2-D grid of ranks, iterated I times (plus a\n"
               "  warm-up iteration), verified and reported in MFlops/s.\n"
               "  --n N            grid size (default 1000)\n"
               "  --radius R       stencil radius, >= 1 (default 2)\n"
               "  --iterations I   timed iterations, >= 1 (default 10)\n"
               "  --variant V      halo synchronization: %.*s (default %s)\n"
               "  --kernel K       fused (overlapped, one pass over `in`) or prk (exchange,\n"
               "                   stencil, then a separate in += 1 pass, as PRK; default %s)\n"
               "  --halo H         columns as pack (packed buffer, default) or datatype\n"
               "                   (vector datatype straight into the ghost zone)\n"
               "  --tiles PXxPY    rank grid (default: as square as possible, as PRK)\n"
               "  --help           this text\n",
               program, static_cast<int>(variants.size()), variants.data(),
               std::string(variants.substr(0, variants.find(','))).c_str(), default_kernel);
}

// ---- decomposition -----------------------------------------------------------------------

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

// The puts of one rank's halo exchange, shared by the app and its MPI peer: ghost rows go to
// the top and bottom neighbours one row per put; columns go to the left and right neighbours
// as one put of a column datatype (halo_kind::datatype) or packed into send_buf[d] first
// (halo_kind::pack). The callbacks issue the puts:
//   row(q, src, count, dst)   `count` contiguous doubles at `src` to element `dst` of rank q
//   columns(d, q, src, dst)   the R columns at `src` as one put of the column types of side d
//   packed(d, q, buffer)      the packed columns, to q's receive area of side opposite(d)
template <class Row, class Columns, class Packed>
void for_each_halo_put(const block& b, const block (&nb)[side_count], halo_kind kind,
                       const double* in, std::vector<double> (&send_buf)[side_count], Row&& row,
                       Columns&& columns, Packed&& packed) {
  const index_t r = b.r;
  for (int d = 0; d < side_count; ++d) {
    const int q = b.neighbour[d];
    if (q == no_neighbour) continue;
    const block& n = nb[d];
    if (d == top || d == bottom) {
      // My first (last) R rows become the top neighbour's bottom (bottom's top) ghost rows.
      const index_t src_y = d == top ? 0 : b.h - r;
      const index_t dst_y = d == top ? n.h : -r;
      for (index_t c = 0; c < r; ++c) row(q, in + b.at(0, src_y + c), b.w, n.at(0, dst_y + c));
      continue;
    }
    // Columns: my first (last) R columns become the left neighbour's right (right's left)
    // ghost columns.
    const index_t src_x = d == left ? 0 : b.w - r;
    if (kind == halo_kind::datatype) {
      columns(d, q, in + b.at(src_x, 0), n.at(d == left ? n.w : -r, 0));
      continue;
    }
    std::vector<double>& buf = send_buf[d];
    for (index_t y = 0; y < b.h; ++y) {
      const double* src = in + b.at(src_x, y);
      for (index_t c = 0; c < r; ++c) buf[static_cast<std::size_t>(y * r + c)] = src[c];
    }
    packed(d, q, buf);
  }
}

// The decomposition for `ranks`, or an error message when n and R do not fit it.
inline std::string check_decomposition(const options& o, int ranks, int& px, int& py) {
  if (o.tiles_x > 0) {
    px = o.tiles_x;
    py = o.tiles_y;
    if (px * py != ranks) {
      return "--tiles " + std::to_string(px) + "x" + std::to_string(py) + " needs " +
             std::to_string(px * py) + " ranks, the job has " + std::to_string(ranks);
    }
  } else {
    factor_ranks(ranks, px, py);
  }
  if (2 * static_cast<index_t>(o.radius) + 1 > o.n) {
    return "grid size n = " + std::to_string(o.n) + " is too small for radius " +
           std::to_string(o.radius) + " (need n >= 2R + 1 = " + std::to_string(2 * o.radius + 1) +
           ")";
  }
  // Halos come from the direct neighbour only: every tile must be at least R cells wide.
  const index_t min_w = o.n / px;
  const index_t min_h = o.n / py;
  if (min_w < o.radius || min_h < o.radius) {
    return "grid size n = " + std::to_string(o.n) + " over " + std::to_string(px) + " x " +
           std::to_string(py) + " tiles gives tiles of " + std::to_string(min_w) + " x " +
           std::to_string(min_h) + " cells, smaller than the radius " + std::to_string(o.radius) +
           " (use a larger n)";
  }
  return {};
}

// ---- the kernel --------------------------------------------------------------------------

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

// ---- results -----------------------------------------------------------------------------

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

struct verdict {
  double norm;
  double reference;
  bool ok;
};
inline verdict verify(double global_norm, const options& o) {
  const double active = static_cast<double>((o.n - 2 * o.radius) * (o.n - 2 * o.radius));
  const double norm = global_norm / active;
  const double reference = (o.iterations + 1) * (1.0 + 1.0);  // (iterations + 1)(COEFX + COEFY)
  return {norm, reference, std::fabs(norm - reference) <= 1e-8};
}

// The perturbation --inject-error adds to one out value: moves the norm by 1e-6.
inline double injected_error(const options& o) {
  return 1e-6 * static_cast<double>((o.n - 2 * o.radius) * (o.n - 2 * o.radius));
}

inline void print_header(const char* flavour, const options& o, int ranks, int px, int py) {
  std::printf("Parallel Research Kernels\n");
  std::printf("%s stencil execution on 2D grid\n", flavour);
  std::printf("Number of ranks        = %d\n", ranks);
  std::printf("Grid size              = %lld\n", static_cast<long long>(o.n));
  std::printf("Radius of stencil      = %d\n", o.radius);
  std::printf("Tiles in x/y-direction = %d/%d\n", px, py);
  std::printf("Type of stencil        = star\n");
  std::printf("Data type              = double precision\n");
  std::printf("Number of iterations   = %d\n", o.iterations);
  std::printf("Variant                = %s\n", o.variant.c_str());
  std::printf("Kernel                 = %s\n", o.kernel == kernel_kind::fused ? "fused" : "prk");
  std::printf("Halo columns           = %s\n", o.halo == halo_kind::pack ? "pack" : "datatype");
  std::fflush(stdout);
}

// What a stencil program is called and offers (the app and its MPI peer).
struct program_info {
  const char* name;                   // in usage and error messages
  const char* flavour;                // in the header: "<flavour> stencil execution on 2D grid"
  std::vector<std::string> variants;  // the first is the default
  kernel_kind default_kernel;
};

// Parses the command line and fits the decomposition to `ranks`; the root prints the usage,
// the error or the header. Returns the exit code to leave with (0 after --help, 2 for bad
// input), or -1 to run with `o`, `px` and `py` set.
inline int start(const program_info& p, int argc, char** argv, int ranks, bool root, options& o,
                 int& px, int& py) {
  const parse_result parsed =
      parse_options(argc, argv, p.variants, p.variants.front(), p.default_kernel);
  if (!parsed.error.empty()) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", p.name, parsed.error.c_str());
    return 2;
  }
  o = parsed.opts;
  if (o.help) {
    std::string list;
    for (const std::string& v : p.variants) list += (list.empty() ? "" : ", ") + v;
    if (root) {
      print_usage(stdout, p.name, list, p.default_kernel == kernel_kind::fused ? "fused" : "prk");
    }
    return 0;
  }
  if (const std::string err = check_decomposition(o, ranks, px, py); !err.empty()) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", p.name, err.c_str());
    return 2;
  }
  if (root) print_header(p.flavour, o, ranks, px, py);
  return -1;
}

// Prints the verdict and rate (rank 0); returns the exit code every rank should use.
inline int report(const verdict& v, double max_seconds, const options& o, bool root) {
  if (!v.ok) {
    if (root) {
      std::fprintf(stderr,
                   "ERROR: solution norm %.15g differs from the reference %.15g by %.3g "
                   "(tolerance 1e-8): the solution does not validate\n",
                   v.norm, v.reference, std::fabs(v.norm - v.reference));
      std::fflush(stderr);
    }
    return 1;
  }
  if (root) {
    const double active = static_cast<double>((o.n - 2 * o.radius) * (o.n - 2 * o.radius));
    const double flops = static_cast<double>(2 * (4 * o.radius + 1) + 1) * active;
    const double avg = max_seconds / o.iterations;
    std::printf("Solution validates\n");
    std::printf("Rate (MFlops/s): %.6f  Avg time (s): %.6f\n", 1e-6 * flops / avg, avg);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace oneside::apps::stencil
