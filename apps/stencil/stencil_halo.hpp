// How the stencil's halos move, shared by the app and its MPI-RMA peer: the puts of one rank's
// exchange (rows straight into the neighbours' ghost rows; columns packed into a buffer or
// described by a datatype), where packed columns arrive, and their unpacking into the ghost
// columns. The programs only issue the puts and synchronize, each its own way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stencil_decomposition.hpp"

namespace oneside::apps::stencil {

enum class halo_kind : std::uint8_t {
  pack,      // columns packed into a contiguous buffer, put into the neighbour's receive buffer
  datatype,  // columns put with a vector datatype straight into the neighbour's ghost zone
};

// Where a rank's packed columns arrive, in doubles from the start of its `in` array: right
// after `in` (ghost frame included), R x h doubles (row-major) with the columns of the left
// neighbour, then as many with those of the right neighbour; `end` is one past them.
struct receive_areas {
  index_t recv[2];  // by side: left, right
  index_t end;
};
inline receive_areas receive_areas_of(const block& b) {
  receive_areas a{};
  a.recv[left] = b.in_elements();
  a.recv[right] = a.recv[left] + b.r * b.h;
  a.end = a.recv[right] + b.r * b.h;
  return a;
}

// The puts of one rank's halo exchange, shared by the app and its MPI peer: ghost rows go to
// the top and bottom neighbours one row per put; columns go to the left and right neighbours
// as one put of a column datatype (halo_kind::datatype) or packed into send_buf[d] first
// (halo_kind::pack). The callbacks issue the puts:
//   row(d, c, q, src, count, dst)   row c (0 <= c < R) of side d: `count` contiguous doubles at
//                             `src` to element `dst` of rank q
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
      for (index_t c = 0; c < r; ++c)
        row(d, c, q, in + b.at(0, src_y + c), b.w, n.at(0, dst_y + c));
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

// After the exchange (halo_kind::pack): copies the packed columns from the receive areas into
// the ghost columns of `in`.
inline void unpack_columns(const block& b, double* in, const receive_areas& areas) {
  const index_t r = b.r;
  for (int d : {left, right}) {
    if (b.neighbour[d] == no_neighbour) continue;
    const double* buf = in + areas.recv[d];
    const index_t dst_x = d == left ? -r : b.w;
    for (index_t y = 0; y < b.h; ++y) {
      double* row = in + b.at(dst_x, y);
      for (index_t c = 0; c < r; ++c) row[c] = buf[y * r + c];
    }
  }
}

}  // namespace oneside::apps::stencil
