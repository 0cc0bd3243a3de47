// The Parallel Research Kernels' Transpose, the parts the transpose app and its MPI1 peer
// share: the column blocks (dist::block's rule), the matrices' values, and the tiled local
// transposes. Both programs store a rank's column block of an order x order matrix row-major
// (row i, its local columns): the rows [c0, c0 + w) of one rank's block are contiguous, so the
// block that rank c0's owner needs from it is one run.
//
// Values as PRK: A(i, j) = order·j + i at the start; each iteration B += A^T, then A += 1, so
// after iteration `it` (counted from 0) B(i, j) = (order·i + j)(it + 1) + it(it + 1)/2.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace oneside::apps::transpose {

// The columns [start, start + width) rank r owns out of `order` over `ranks`: blocks of
// ceil(order / ranks) (dist::block's rule), so the last ranks may own fewer or none.
struct column_block {
  std::size_t start = 0;
  std::size_t width = 0;
};
inline column_block columns_of(std::size_t order, int ranks, int r) {
  const std::size_t per =
      (order + static_cast<std::size_t>(ranks) - 1) / static_cast<std::size_t>(ranks);
  const std::size_t start = std::min(per * static_cast<std::size_t>(r), order);
  return {start, std::min(per, order - start)};
}

// A(i, j) before the first iteration.
inline double initial_a(std::size_t order, std::size_t i, std::size_t j) {
  return static_cast<double>(order * j + i);
}
// B(i, j) after `iterations` + 1 iterations (PRK's reference for its verification).
inline double expected_b(std::size_t order, std::size_t i, std::size_t j, int iterations) {
  const double it = iterations;
  return static_cast<double>(order * i + j) * (it + 1.0) + it * (it + 1.0) / 2.0;
}

// How the local transposes walk a block: tiles of `side` (the whole block when untiled),
// through a buffer (buffered, the default) or as PRK's loop nest (prk).
enum class kernel_kind { buffered, prk };
struct tiling {
  std::size_t side = 32;
  kernel_kind kernel = kernel_kind::buffered;
};
// The tiling for PRK's tile option (<= 0 or >= order: untiled).
inline tiling tiling_of(int tile, std::size_t order, kernel_kind kernel) {
  const std::size_t side = tile > 0 && static_cast<std::size_t>(tile) < order
                               ? static_cast<std::size_t>(tile)
                               : std::max<std::size_t>(order, 1);
  return {side, kernel};
}

// The local transposes: dst is rows x cols with row stride ds, src cols x rows with row stride
// ss (elements), visited tile by tile (tile x tile). Each tile of src is first copied, row by
// row, into a small dense buffer, and dst's tile is then updated row by row from it: the rows
// of both blocks are a power of two apart at the bench's orders (16 KiB at order 4096 on two
// ranks), so walking a column of either straight would keep every cache line of the tile in
// one cache set and miss on nearly every element (PRK's loop does: measured 3x slower). Untiled
// (tile >= rows and cols), tiles too large for a buffer, or kernel_kind::prk: PRK's loop nest.
// `Src` gets each src element as it is copied (to increment it), `Dst` does the element's work:
// dst_op(dst element, src value).
template <class Src, class Dst>
inline void for_each_transposed(double* dst, std::size_t ds, double* src, std::size_t ss,
                                std::size_t rows, std::size_t cols, tiling how, Src src_op,
                                Dst dst_op) {
  constexpr std::size_t max_buffered = 256;
  const std::size_t tile = how.side;
  if (how.kernel == kernel_kind::prk || (tile >= rows && tile >= cols) || tile > max_buffered) {
    for (std::size_t i0 = 0; i0 < rows; i0 += tile) {
      const std::size_t i1 = std::min(rows, i0 + tile);
      for (std::size_t j0 = 0; j0 < cols; j0 += tile) {
        const std::size_t j1 = std::min(cols, j0 + tile);
        for (std::size_t i = i0; i < i1; ++i) {
          for (std::size_t j = j0; j < j1; ++j) {
            const double v = src[j * ss + i];
            src_op(src[j * ss + i]);
            dst_op(dst[i * ds + j], v);
          }
        }
      }
    }
    return;
  }
  std::vector<double> buffer(tile * tile);  // buffer[j - j0][i - i0] = src[j][i]
  double* const t = buffer.data();
  for (std::size_t i0 = 0; i0 < rows; i0 += tile) {
    const std::size_t ni = std::min(rows, i0 + tile) - i0;
    for (std::size_t j0 = 0; j0 < cols; j0 += tile) {
      const std::size_t nj = std::min(cols, j0 + tile) - j0;
      // The next tile's rows of src (each in its own pages) are fetched while this one is
      // copied: 10% off the kernel at order 4096.
      std::size_t pj = j0 + tile;
      std::size_t pi = i0;
      if (pj >= cols) {
        pj = 0;
        pi = i0 + tile;
      }
      const std::size_t prefetch_rows = pi < rows ? std::min(cols, pj + tile) - pj : 0;
      const std::size_t prefetch_len = pi < rows ? std::min(rows, pi + tile) - pi : 0;
      for (std::size_t j = 0; j < nj; ++j) {
        if (j < prefetch_rows) {
          const double* p = src + (pj + j) * ss + pi;
          for (std::size_t k = 0; k < prefetch_len; k += 8) __builtin_prefetch(p + k, 1);
        }
        double* s = src + (j0 + j) * ss + i0;
        double* b = t + j * tile;
        for (std::size_t i = 0; i < ni; ++i) {
          b[i] = s[i];
          src_op(s[i]);
        }
      }
      for (std::size_t i = 0; i < ni; ++i) {
        double* d = dst + (i0 + i) * ds + j0;
        const double* b = t + i;
        for (std::size_t j = 0; j < nj; ++j) dst_op(d[j], b[j * tile]);
      }
    }
  }
}

// dst += src^T.
inline void add_transposed(double* dst, std::size_t ds, const double* src, std::size_t ss,
                           std::size_t rows, std::size_t cols, tiling tile) {
  // (src is only read: the cast lets one loop nest serve the three kernels.)
  for_each_transposed(
      dst, ds, const_cast<double*>(src), ss, rows, cols, tile, [](double&) {},
      [](double& d, double s) { d += s; });
}
// dst += src^T, then src += 1 (a block only this rank reads: the diagonal one).
inline void add_transposed_increment(double* dst, std::size_t ds, double* src, std::size_t ss,
                                     std::size_t rows, std::size_t cols, tiling tile) {
  for_each_transposed(
      dst, ds, src, ss, rows, cols, tile, [](double& s) { s += 1.0; },
      [](double& d, double s) { d += s; });
}
// dst = src^T, then src += 1 (the MPI peer packing the block it sends).
inline void copy_transposed_increment(double* dst, std::size_t ds, double* src, std::size_t ss,
                                      std::size_t rows, std::size_t cols, tiling tile) {
  for_each_transposed(
      dst, ds, src, ss, rows, cols, tile, [](double& s) { s += 1.0; },
      [](double& d, double s) { d = s; });
}
// dst += src, both rows x cols, dst with row stride ds, src dense.
inline void add_block(double* dst, std::size_t ds, const double* src, std::size_t rows,
                      std::size_t cols) {
  for (std::size_t i = 0; i < rows; ++i) {
    double* d = dst + i * ds;
    const double* s = src + i * cols;
    for (std::size_t j = 0; j < cols; ++j) d[j] += s[j];
  }
}
// x += 1 over n elements.
inline void increment(double* x, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) x[k] += 1.0;
}

}  // namespace oneside::apps::transpose
