// Validation of an SSSP result (sssp.hpp) by the Graph500 v3 rules, as the reference's
// validate.c states them (read there, not copied), collective over the team:
//   range      every parent is -1 or a vertex; a vertex has a parent exactly when its distance
//              is finite, and a finite distance is ≥ 0
//   root       the root's distance is 0 and its parent is itself
//   tree_edge  every reached vertex but the root has an edge to its parent of weight w with
//              dist[v] == dist[parent] + w (in float arithmetic, exactly: the reference's test)
//   relaxable  no edge can relax further: dist[v] ≤ dist[u] + w for every arc u → v with both
//              ends reached (both directions of every input edge, so |dist[u] - dist[v]| ≤ w)
//   component  no edge joins a reached and an unreached vertex: with the root reached, the
//              reached set is the root's component
// The verdict is the same on every rank: the first failed rule in that order and the smallest
// vertex failing it; plus the number of input edges (self-loops dropped, duplicates counted)
// with both ends reached, the edge count Graph500's TEPS divide by.
//
// Each rank checks its rows' arcs; the distances and parents of the other ranks' vertices its
// arcs name come in one exchange (ghosts.hpp), so the checks are local loops.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "dist_graph.hpp"
#include "ghosts.hpp"
#include "sssp.hpp"

namespace oneside::apps::graph {

enum class sssp_rule : std::uint8_t { none, range, root, tree_edge, relaxable, component };

inline const char* sssp_rule_name(sssp_rule r) noexcept {
  switch (r) {
    case sssp_rule::none:
      return "none";
    case sssp_rule::range:
      return "range";
    case sssp_rule::root:
      return "root";
    case sssp_rule::tree_edge:
      return "tree_edge";
    case sssp_rule::relaxable:
      return "relaxable";
    case sssp_rule::component:
      return "component";
  }
  return "unknown";
}

struct sssp_verdict {
  sssp_rule rule = sssp_rule::none;  // the first rule failed (none: the result validates)
  vertex_t vertex = -1;              // the smallest vertex failing it
  std::uint64_t edges = 0;           // input edges with both ends reached

  bool is_valid() const noexcept { return rule == sssp_rule::none; }
  std::string message() const {
    switch (rule) {
      case sssp_rule::none:
        return "SSSP result validates";
      case sssp_rule::range:
        return "SSSP validation: rule range: vertex " + std::to_string(vertex) +
               " has a parent out of range or inconsistent with its distance";
      case sssp_rule::root:
        return "SSSP validation: rule root: root " + std::to_string(vertex) +
               " does not have distance 0 and itself as parent";
      case sssp_rule::tree_edge:
        return "SSSP validation: rule tree_edge: vertex " + std::to_string(vertex) +
               " has no edge to its parent whose weight gives its distance";
      case sssp_rule::relaxable:
        return "SSSP validation: rule relaxable: vertex " + std::to_string(vertex) +
               " can be reached by a shorter path over an edge";
      case sssp_rule::component:
        return "SSSP validation: rule component: vertex " + std::to_string(vertex) +
               " is unreached but has a reached neighbour";
    }
    return "SSSP validation: unknown rule";
  }
};

// Collective over `t`: the verdict on `r` (this rank's part of a result from `root` on `c`).
// Errors (oneside::error, arg): `r`'s vectors not one element per local row, a root outside
// [0, N).
inline sssp_verdict validate_sssp(const dist_csr& c, vertex_t root, const sssp_result& r,
                                  const team& t = world()) {
  const vertex_t n = c.partition.vertex_count();
  const auto rows = static_cast<std::size_t>(c.local_rows());
  if (r.distance.size() != rows || r.parent.size() != rows) {
    throw error(error_class::arg, "validate_sssp: the result has " +
                                      std::to_string(r.distance.size()) + " distances and " +
                                      std::to_string(r.parent.size()) + " parents for " +
                                      std::to_string(rows) + " local rows");
  }
  if (root < 0 || root >= n) {
    throw error(error_class::arg, "validate_sssp: root " + std::to_string(root) +
                                      " is outside [0, " + std::to_string(n) + ")");
  }
  // The first failure found here, as (rule << 56 | vertex): the smallest wins everywhere.
  constexpr std::uint64_t no_failure = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t failure = no_failure;
  auto fail = [&](sssp_rule rule, vertex_t v) {
    const std::uint64_t f =
        (std::uint64_t{static_cast<std::uint8_t>(rule)} << 56) | static_cast<std::uint64_t>(v);
    if (f < failure) failure = f;
  };

  for (std::size_t l = 0; l < rows; ++l) {
    const vertex_t v = c.first + static_cast<vertex_t>(l);
    const vertex_t p = r.parent[l];
    const float d = r.distance[l];
    const bool ok_parent = p == -1 || (p >= 0 && p < n);
    const bool ok_distance = p == -1 ? std::isinf(d) && d > 0 : std::isfinite(d) && d >= 0.0F;
    if (!ok_parent || !ok_distance) fail(sssp_rule::range, v);
    if (v == root && (p != root || d != 0.0F)) fail(sssp_rule::root, v);
  }
  // Range errors make the other rules meaningless (and parents unusable).
  auto verdict_of = [](std::uint64_t f, std::uint64_t edges) {
    sssp_verdict v;
    v.edges = edges;
    if (f != no_failure) {
      v.rule = static_cast<sssp_rule>(f >> 56);
      v.vertex = static_cast<vertex_t>(f & ((std::uint64_t{1} << 56) - 1));
    }
    return v;
  };
  if (const std::uint64_t f = allreduce(t, failure, op::min); f != no_failure) {
    return verdict_of(f, 0);
  }

  const ghost_set gs(c);
  const std::vector<float> ghost_distance = fetch_ghosts(t, c, gs, r.distance);
  const std::vector<vertex_t> ghost_parent = fetch_ghosts(t, c, gs, r.parent);
  std::uint64_t edges = 0;
  for (std::size_t l = 0; l < rows; ++l) {
    const vertex_t u = c.first + static_cast<vertex_t>(l);
    const float du = r.distance[l];
    const vertex_t pu = r.parent[l];
    const bool u_reached = pu != -1;
    bool confirmed = !u_reached || u == root;
    const auto targets = c.neighbours(static_cast<vertex_t>(l));
    const auto weights = c.neighbour_weights(static_cast<vertex_t>(l));
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const vertex_t v = targets[i];
      const float w = weights[i];
      float dv = 0.0F;
      vertex_t pv = 0;
      if (v >= c.first && v < c.first + c.local_rows()) {
        dv = r.distance[static_cast<std::size_t>(v - c.first)];
        pv = r.parent[static_cast<std::size_t>(v - c.first)];
      } else {
        const std::uint32_t g = gs.index(v);
        dv = ghost_distance[g];
        pv = ghost_parent[g];
      }
      const bool v_reached = pv != -1;
      if (u_reached != v_reached) {
        fail(sssp_rule::component, u_reached ? v : u);
        continue;
      }
      if (!u_reached) continue;
      if (u < v) ++edges;
      if (v == pu && du == dv + w) confirmed = true;
      if (du + w < dv) fail(sssp_rule::relaxable, v);
    }
    if (!confirmed) fail(sssp_rule::tree_edge, u);
  }
  const std::uint64_t first = allreduce(t, failure, op::min);
  return verdict_of(first, allreduce(t, edges, op::sum));
}

}  // namespace oneside::apps::graph
