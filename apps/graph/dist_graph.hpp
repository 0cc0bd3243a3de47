// The distributed graph of the graph apps: Graph500's kernel 1 (CSR construction) over a team.
//
// Vertices are distributed by blocks exactly as dist_array's dist::block distributes indices
// (vertex v on rank v / ceil(N/P), at local index v mod ceil(N/P)), so a dist_array<T> of N
// elements with dist::block holds one value per vertex beside the rank's rows: per-vertex state
// (parents, levels, distances, ranks, labels) lives in such arrays and remote ranks reach it
// through global pointers, aggregators and rpc.
//
// Kernel 1: each rank generates its share of the edge list (kronecker.hpp; the share does not
// change the edges) or takes it from the list it holds (the overload graph500 times, as
// Graph500's kernel 1 starts from the edge list), drops self-loops, sends arc u → v to the owner of
// u and v → u to the owner of v (one alltoallv of 16-byte arcs), and sorts what it received into
// CSR rows by a counting sort. A row keeps its arcs in the order of their edges in the list, so the
// graph — every row's neighbours and weights — is the same at every rank count, and equals
// serial::build_csr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "kronecker.hpp"

namespace oneside::apps::graph {

// dist::block over `ranks`: blocks of ceil(N/P) vertices, the last ranks' smaller or empty.
class vertex_partition {
 public:
  vertex_partition(vertex_t vertex_count, int ranks)
      : vertex_count_(vertex_count), ranks_(ranks), block_((vertex_count + ranks - 1) / ranks) {}

  vertex_t vertex_count() const noexcept { return vertex_count_; }
  int ranks() const noexcept { return ranks_; }
  vertex_t block() const noexcept { return block_; }
  rank_t owner(vertex_t v) const noexcept { return static_cast<rank_t>(v / block_); }
  vertex_t local(vertex_t v) const noexcept { return v % block_; }
  vertex_t first(rank_t r) const noexcept {
    const vertex_t f = block_ * r;
    return f < vertex_count_ ? f : vertex_count_;
  }
  vertex_t size(rank_t r) const noexcept { return first(r + 1) - first(r); }
  vertex_t global(rank_t r, vertex_t local) const noexcept { return first(r) + local; }

 private:
  vertex_t vertex_count_;
  int ranks_;
  vertex_t block_;
};

// Throws std::invalid_argument when `vertex_count` vertices do not fit target_t.
inline void check_target_range(vertex_t vertex_count) {
  if (vertex_count > max_target_vertices) {
    throw std::invalid_argument(
        "the graph has " + std::to_string(vertex_count) +
        " vertices, more than the CSR's targets hold (2^" + std::to_string(max_scale) +
        "); configure with -DONESIDE_GRAPH_WIDE_TARGETS=ON for 64-bit targets");
  }
}

// This rank's rows of the graph.
struct dist_csr {
  kronecker generator;
  vertex_partition partition;
  rank_t rank = 0;
  vertex_t first = 0;                  // global number of local row 0
  std::vector<std::uint64_t> offsets;  // local rows + 1
  std::vector<target_t> targets;       // global vertex numbers
  std::vector<float> weights;          // beside targets
  std::uint64_t global_arcs = 0;       // arcs of every rank (twice the non-loop edges)

  vertex_t local_rows() const noexcept { return static_cast<vertex_t>(offsets.size()) - 1; }
  std::uint64_t degree(vertex_t local) const noexcept {
    return offsets[static_cast<std::size_t>(local) + 1] - offsets[static_cast<std::size_t>(local)];
  }
  std::span<const target_t> neighbours(vertex_t local) const noexcept {
    return {targets.data() + offsets[static_cast<std::size_t>(local)],
            static_cast<std::size_t>(degree(local))};
  }
  std::span<const float> neighbour_weights(vertex_t local) const noexcept {
    return {weights.data() + offsets[static_cast<std::size_t>(local)],
            static_cast<std::size_t>(degree(local))};
  }
};

namespace detail {

struct arc {
  vertex_t target = 0;
  std::uint32_t source_local = 0;  // row at the receiver (a block holds < 2^32 vertices)
  float weight = 0.0F;
};

// Kernel 1 over this rank's share of the edges, edge_of(e) giving edge e of the list.
template <class EdgeOf>
dist_csr build_dist_csr_from(const kronecker& g, const team& t, EdgeOf edge_of) {
  check_target_range(g.vertex_count());
  const int ranks = t.size();
  const rank_t me = t.rank();
  dist_csr c{g, vertex_partition(g.vertex_count(), ranks), me, 0, {}, {}, {}, 0};
  const vertex_partition& part = c.partition;
  c.first = part.first(me);
  const index_range mine = share_of(g.edge_count(), ranks, me);

  // Count, then place, the arcs for each owner (two passes over the generator keep memory at
  // the arcs themselves).
  std::vector<count_t> send_counts(static_cast<std::size_t>(ranks), 0);
  for (std::uint64_t e = mine.begin; e < mine.end; ++e) {
    const edge x = edge_of(e);
    if (x.u == x.v) continue;
    ++send_counts[static_cast<std::size_t>(part.owner(x.u))];
    ++send_counts[static_cast<std::size_t>(part.owner(x.v))];
  }
  std::vector<count_t> send_displs(static_cast<std::size_t>(ranks), 0);
  std::exclusive_scan(send_counts.begin(), send_counts.end(), send_displs.begin(), count_t{0});
  std::vector<detail::arc> out(static_cast<std::size_t>(send_displs.back() + send_counts.back()));
  std::vector<count_t> next = send_displs;
  for (std::uint64_t e = mine.begin; e < mine.end; ++e) {
    const edge x = edge_of(e);
    if (x.u == x.v) continue;
    const float w = g.weight_at(e);
    const rank_t ou = part.owner(x.u);
    out[static_cast<std::size_t>(next[static_cast<std::size_t>(ou)]++)] = {
        x.v, static_cast<std::uint32_t>(part.local(x.u)), w};
    const rank_t ov = part.owner(x.v);
    out[static_cast<std::size_t>(next[static_cast<std::size_t>(ov)]++)] = {
        x.u, static_cast<std::uint32_t>(part.local(x.v)), w};
  }

  std::vector<count_t> recv_counts(static_cast<std::size_t>(ranks), 0);
  alltoall(t, send_counts, recv_counts);
  std::vector<count_t> recv_displs(static_cast<std::size_t>(ranks), 0);
  std::exclusive_scan(recv_counts.begin(), recv_counts.end(), recv_displs.begin(), count_t{0});
  std::vector<detail::arc> in(static_cast<std::size_t>(recv_displs.back() + recv_counts.back()));
  const datatype arc_type = datatype::contiguous(sizeof(detail::arc), datatype::of<std::byte>());
  alltoallv(t, out.data(), send_counts, send_displs, in.data(), recv_counts, recv_displs, arc_type);
  out = {};

  // Counting sort by row; arcs arrive by source rank, each rank's in edge order, and source
  // ranks hold consecutive edge ranges, so the rows come out in edge order.
  const auto rows = static_cast<std::size_t>(part.size(me));
  c.offsets.assign(rows + 1, 0);
  for (const detail::arc& a : in) ++c.offsets[a.source_local + 1];
  std::partial_sum(c.offsets.begin(), c.offsets.end(), c.offsets.begin());
  c.targets.resize(in.size());
  c.weights.resize(in.size());
  std::vector<std::uint64_t> fill(c.offsets.begin(), c.offsets.end() - 1);
  for (const detail::arc& a : in) {
    const std::uint64_t i = fill[a.source_local]++;
    c.targets[i] = static_cast<target_t>(a.target);
    c.weights[i] = a.weight;
  }
  c.global_arcs = allreduce(t, static_cast<std::uint64_t>(in.size()), op::sum);
  return c;
}

}  // namespace detail

// Kernel 1, collective over `t`: this rank's rows of the graph `g` (its share of the edges
// generated here, twice: once to count, once to place).
inline dist_csr build_dist_csr(const kronecker& g, const team& t) {
  return detail::build_dist_csr_from(g, t, [&g](std::uint64_t e) { return g.edge_at(e); });
}

// Kernel 1 as Graph500 times it, from the edge list: `share` holds edges [begin, end) of g's
// list, this rank's share_of(g.edge_count(), t.size(), t.rank()) (the weights are generated).
// The same rows as build_dist_csr(g, t). Errors: std::invalid_argument (on this rank) when
// `share` has another size.
inline dist_csr build_dist_csr(const kronecker& g, std::span<const edge> share, const team& t) {
  const index_range mine = share_of(g.edge_count(), t.size(), t.rank());
  if (share.size() != mine.end - mine.begin) {
    throw std::invalid_argument("build_dist_csr: rank " + std::to_string(t.rank()) + " got " +
                                std::to_string(share.size()) + " edges, its share is " +
                                std::to_string(mine.end - mine.begin));
  }
  return detail::build_dist_csr_from(
      g, t, [&share, &mine](std::uint64_t e) { return share[e - mine.begin]; });
}

}  // namespace oneside::apps::graph
