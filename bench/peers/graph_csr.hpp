// The tuned CSR of the shared-memory graph baselines (graph_serial, graph_tbb): the graph of
// serial::build_csr (both directions, self-loops dropped, duplicates kept) with 32-bit vertex
// numbers and the weights beside the targets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph_peer.hpp"

namespace oneside::bench::graph_peer {

// One generated edge with its weight.
struct weighted_edge {
  vid u = 0;
  vid v = 0;
  float w = 0.0F;
};

struct csr {
  vid vertex_count = 0;
  std::vector<std::uint64_t> offsets;  // vertex_count + 1
  std::vector<vid> targets;
  std::vector<float> weights;

  std::uint64_t arc_count() const noexcept { return targets.size(); }
  std::uint64_t begin(vid v) const noexcept { return offsets[v]; }
  std::uint64_t end(vid v) const noexcept { return offsets[v + 1]; }
  std::uint64_t degree(vid v) const noexcept { return offsets[v + 1] - offsets[v]; }
};

// A search's edge count for TEPS (graph_peer.hpp): the reached vertices' degrees over 2.
template <class Reached>
double traversed_edges(const csr& c, Reached reached) {
  std::uint64_t sum = 0;
  for (vid v = 0; v < c.vertex_count; ++v) {
    if (reached(v)) sum += c.degree(v);
  }
  return static_cast<double>(sum / 2);
}

}  // namespace oneside::bench::graph_peer
