// Validation of a BFS tree by the Graph500 (version 3) rules, distributed over the team, and the
// choice of the search keys.
//
// The rules, each failure naming the rule and a vertex (bfs_rule, in the order of priority: when
// several rules fail, the first rule's smallest vertex is reported):
//   root         the root's parent is the root itself
//   parent_range every parent is -1 (unreached) or a vertex
//   parent_chain following parents from any reached vertex leads to the root (no cycle, no
//                unreached parent); the levels are counted along these chains, so each tree edge
//                joins levels differing by exactly one by construction
//   tree_edge    each tree edge (v, parent(v)) is an edge of the input
//   edge_levels  every input edge joins vertices whose levels differ by at most one
//   component    no input edge joins a reached vertex and an unreached one: the tree spans the
//                root's component
//
// Distribution: each rank checks its own vertices' parents (range, tree edges against its CSR
// rows, which hold exactly the input's edges at those vertices) and its share of the input edge
// list (streamed from the generator once, edge_share()). Levels are computed in rounds: each
// round every rank reads the whole level array with one dist_array region get (4 bytes per
// vertex) and gives each unresolved vertex whose parent's level is known that level plus one,
// until a round resolves nothing; the last copy then serves the edge checks. One region get per
// round moves the levels in bulk (no per-edge round trip) at the price of 4 bytes per vertex on
// every rank during validation.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "dist_graph.hpp"
#include "kronecker.hpp"

namespace oneside::apps::graph {

enum class bfs_rule : std::uint8_t {
  none,
  root,
  parent_range,
  parent_chain,
  tree_edge,
  edge_levels,
  component,
};

inline const char* name_of(bfs_rule r) noexcept {
  switch (r) {
    case bfs_rule::none:
      return "none";
    case bfs_rule::root:
      return "root";
    case bfs_rule::parent_range:
      return "parent_range";
    case bfs_rule::parent_chain:
      return "parent_chain";
    case bfs_rule::tree_edge:
      return "tree_edge";
    case bfs_rule::edge_levels:
      return "edge_levels";
    case bfs_rule::component:
      return "component";
  }
  return "?";
}

// The outcome of a validation, the same at every rank.
struct bfs_verdict {
  bfs_rule rule = bfs_rule::none;
  vertex_t vertex = 0;

  bool is_valid() const noexcept { return rule == bfs_rule::none; }
  std::string message() const {
    const std::string v = "vertex " + std::to_string(vertex);
    switch (rule) {
      case bfs_rule::none:
        return "valid";
      case bfs_rule::root:
        return "root: the root's parent is not the root itself (" + v + ")";
      case bfs_rule::parent_range:
        return "parent_range: " + v + " has a parent out of range";
      case bfs_rule::parent_chain:
        return "parent_chain: the parents of " + v +
               " do not lead to the root (a cycle, or an unreached parent)";
      case bfs_rule::tree_edge:
        return "tree_edge: " + v + " and its parent are not joined by an input edge";
      case bfs_rule::edge_levels:
        return "edge_levels: an input edge joins " + v +
               " to a vertex whose level differs by more than one";
      case bfs_rule::component:
        return "component: " + v +
               " is unreached but an input edge joins it to a reached vertex (the tree does not "
               "span the root's component)";
    }
    return "?";
  }
};

// This rank's share of the input edge list (share_of over the team), as kernel 1 splits it.
inline std::vector<edge> edge_share(const kronecker& g, const team& t) {
  const index_range mine = share_of(g.edge_count(), t.size(), t.rank());
  std::vector<edge> out;
  out.reserve(static_cast<std::size_t>(mine.end - mine.begin));
  for (std::uint64_t e = mine.begin; e < mine.end; ++e) out.push_back(g.edge_at(e));
  return out;
}

// Collective: the vertices with at least one edge other than a self-loop.
inline std::uint64_t searchable_vertices(const dist_csr& c, const team& t) {
  std::uint64_t n = 0;
  for (vertex_t l = 0; l < c.local_rows(); ++l) n += c.degree(l) > 0 ? 1U : 0U;
  return allreduce(t, n, op::sum);
}

// Collective: the search keys — the first `count` distinct candidates of the generator
// (kronecker::root_candidate) with degree ≥ 1 not counting self-loops, the same at every rank
// count. Needs count ≤ searchable_vertices(c, t).
inline std::vector<vertex_t> select_roots(const dist_csr& c, int count, const team& t) {
  std::vector<vertex_t> roots;
  const std::size_t batch = static_cast<std::size_t>(count) * 4;
  std::vector<std::uint8_t> mine(batch);
  std::vector<std::uint8_t> has_edges(batch);
  for (std::uint64_t next = 0; roots.size() < static_cast<std::size_t>(count); next += batch) {
    for (std::size_t i = 0; i < batch; ++i) {
      const vertex_t v = c.generator.root_candidate(next + i);
      mine[i] = c.partition.owner(v) == c.rank && c.degree(v - c.first) > 0 ? 1 : 0;
    }
    allreduce(t, mine, has_edges, op::max);
    for (std::size_t i = 0; i < batch && roots.size() < static_cast<std::size_t>(count); ++i) {
      const vertex_t v = c.generator.root_candidate(next + i);
      if (has_edges[i] != 0 && std::find(roots.begin(), roots.end(), v) == roots.end()) {
        roots.push_back(v);
      }
    }
  }
  return roots;
}

class bfs_validator {
 public:
  // Collective over the csr's team `t`. `edges`: this rank's share of the input edge list
  // (edge_share), kept by the caller while the validator lives.
  bfs_validator(const dist_csr& c, std::span<const edge> edges, const team& t)
      : c_(c),
        edges_(edges),
        t_(t),
        level_(t, {static_cast<std::size_t>(c.partition.vertex_count())}, {dist::block}, "levels"),
        all_levels_(static_cast<std::size_t>(c.partition.vertex_count())) {}

  // Collective: validates the tree `parents` (dist::block over the vertices) of a search from
  // `root`.
  bfs_verdict validate(const dist_array<vertex_t, 1>& parents, vertex_t root) {
    const vertex_t n = c_.partition.vertex_count();
    const vertex_t rows = c_.local_rows();
    const vertex_t* const parent = parents.local().data();
    std::int32_t* const level = level_.local().data();
    failure_ = no_failure;

    auto valid_parent = [&](vertex_t p) { return p >= 0 && p < n; };
    for (vertex_t l = 0; l < rows; ++l) {
      const vertex_t v = c_.first + l;
      const vertex_t p = parent[l];
      level[l] = -1;
      if (v == root) {
        if (p == root) {
          level[l] = 0;
        } else {
          note(bfs_rule::root, v);
        }
      } else if (p != -1 && !valid_parent(p)) {
        note(bfs_rule::parent_range, v);
      }
    }

    // Levels along the parents, one round per level.
    const region<1> everything{{0}, {static_cast<std::size_t>(n)}};
    for (;;) {
      barrier(t_);  // every rank's levels of the last round written
      level_.get(everything, std::span<std::int32_t>(all_levels_));
      barrier(t_);  // every rank read them before any is changed
      std::uint64_t resolved = 0;
      for (vertex_t l = 0; l < rows; ++l) {
        const vertex_t p = parent[l];
        if (level[l] >= 0 || !valid_parent(p)) continue;
        const std::int32_t lp = all_levels_[static_cast<std::size_t>(p)];
        if (lp >= 0) {
          level[l] = lp + 1;
          ++resolved;
        }
      }
      if (allreduce(t_, resolved, op::sum) == 0) break;
    }
    // all_levels_ now holds every rank's final levels.

    for (vertex_t l = 0; l < rows; ++l) {
      const vertex_t v = c_.first + l;
      const vertex_t p = parent[l];
      if (v == root || !valid_parent(p)) continue;
      if (level[l] < 0) {
        note(bfs_rule::parent_chain, v);
        continue;
      }
      const auto nb = c_.neighbours(l);
      if (std::find(nb.begin(), nb.end(), p) == nb.end()) note(bfs_rule::tree_edge, v);
    }

    for (const edge& e : edges_) {
      if (e.u == e.v) continue;  // a self-loop joins a level to itself
      const std::int32_t lu = all_levels_[static_cast<std::size_t>(e.u)];
      const std::int32_t lv = all_levels_[static_cast<std::size_t>(e.v)];
      if ((lu < 0) != (lv < 0)) {
        note(bfs_rule::component, lu < 0 ? e.u : e.v);
      } else if (lu >= 0 && (lu - lv > 1 || lv - lu > 1)) {
        note(bfs_rule::edge_levels, lu > lv ? e.u : e.v);
      }
    }

    const std::int64_t first = allreduce(t_, failure_, op::min);
    if (first == no_failure) return {};
    return {static_cast<bfs_rule>(first >> vertex_bits),
            first & ((std::int64_t{1} << vertex_bits) - 1)};
  }

 private:
  // A failure as one integer, smallest first: the rule above the vertex.
  static constexpr int vertex_bits = 48;
  static constexpr std::int64_t no_failure = std::numeric_limits<std::int64_t>::max();

  void note(bfs_rule r, vertex_t v) noexcept {
    failure_ = std::min(failure_, (static_cast<std::int64_t>(r) << vertex_bits) | v);
  }

  const dist_csr& c_;
  std::span<const edge> edges_;
  const team& t_;
  dist_array<std::int32_t, 1> level_;
  std::vector<std::int32_t> all_levels_;
  std::int64_t failure_ = no_failure;
};

}  // namespace oneside::apps::graph
