// The tuned CSR of the shared-memory graph baselines (graph_serial, graph_tbb): the graph of
// serial::build_csr (both directions, self-loops dropped, duplicates kept) with 32-bit vertex
// numbers and the weights beside the targets.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
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

// The kernel runs of the shared-memory baselines (graph_serial, graph_tbb), timed as the
// reference times them (a warm-up search first), edges counted for TEPS, each result checked
// when `check` is given. K names the kernels:
//   typename K::bfs(c): run(root), parent();
//   K::sssp_for(c, delta, o): an object with run(root), unpack(dist, parent);
//   K::pagerank(c, iterations, rank): each iteration's time;
//   typename K::cc(c): run(), labels().
// Returns whether every check passed (true without checks).
template <class K>
bool run_kernels(const program_info& info, const options& o, const csr& c,
                 const std::vector<vid>& keys, std::optional<verifier>& check, report& r) {
  bool ok = true;
  auto reached = [](const std::vector<std::int32_t>& parent) {
    return [&parent](vid v) { return parent[v] >= 0; };
  };
  if (o.runs("bfs")) {
    typename K::bfs s(c);
    s.run(keys[0]);  // warm-up, as the reference
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const double t0 = now();
      s.run(keys[k]);
      r.bfs.times.push_back(now() - t0);
      r.bfs.edges.push_back(traversed_edges(c, reached(s.parent())));
      if (check)
        ok = graph_peer::check(info.name, "bfs", check->bfs_tree(keys[k], s.parent())) && ok;
    }
  }
  if (o.runs("sssp")) {
    const double avg = static_cast<double>(c.arc_count()) / static_cast<double>(c.vertex_count);
    const auto delta =
        static_cast<float>(o.delta > 0 ? o.delta : info.delta_times_degree / std::max(1.0, avg));
    auto s = K::sssp_for(c, delta, o);
    std::vector<float> dist;
    std::vector<std::int32_t> parent;
    s.run(keys[0]);  // warm-up
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const double t0 = now();
      s.run(keys[k]);
      r.sssp.times.push_back(now() - t0);
      s.unpack(dist, parent);
      r.sssp.edges.push_back(traversed_edges(c, reached(parent)));
      if (check)
        ok = graph_peer::check(info.name, "sssp", check->sssp(keys[k], dist, parent)) && ok;
    }
  }
  if (o.runs("pagerank")) {
    std::vector<double> rank;
    r.pagerank_iteration_times = K::pagerank(c, o.pagerank_iterations, rank);
    if (check) {
      ok = graph_peer::check(info.name, "pagerank", check->pagerank(rank, o.pagerank_iterations)) &&
           ok;
    }
  }
  if (o.runs("cc")) {
    typename K::cc a(c);
    for (int i = 0; i < o.cc_runs; ++i) {
      const double t0 = now();
      a.run();
      r.cc_times.push_back(now() - t0);
    }
    r.cc_components = 0;
    for (vid v = 0; v < c.vertex_count; ++v) r.cc_components += a.labels()[v] == v ? 1U : 0U;
    if (check) ok = graph_peer::check(info.name, "cc", check->components(a.labels())) && ok;
  }
  return ok;
}

// The end of a baseline's run: the report, the verdict of --verify, the JSON record; main()'s
// status.
inline int finish(report& r, const options& o, bool ok) {
  print_report(r);
  if (o.verify) {
    r.validated = ok;
    std::printf(ok ? "Solution validates\n" : "Solution fails validation\n");
  }
  write_json(r);
  return ok ? 0 : 1;
}

// A shared-memory baseline's whole run after its options: the graph generated (K::generate
// fills the edge list), kernel 1 (K::build), the search keys, every kernel (run_kernels), the
// report; main()'s status.
template <class K>
int run_baseline(const program_info& info, const options& o, report& r) {
  const apps::graph::kronecker g(o.scale, o.edgefactor, o.seed);
  const auto n = static_cast<vid>(g.vertex_count());
  double t0 = now();
  std::vector<weighted_edge> edges(g.edge_count());
  K::generate(g, edges);
  r.generation_time = now() - t0;
  t0 = now();
  const csr c = K::build(edges, n);
  r.construction_time = now() - t0;
  std::vector<weighted_edge>().swap(edges);

  const std::vector<vid> keys = search_keys(
      g, o.roots, [&](apps::graph::vertex_t v) { return c.degree(static_cast<vid>(v)); });
  if (!has_keys(info.name, keys, o)) return 1;
  std::optional<verifier> check;
  if (o.verify) check.emplace(g, o.corrupt);
  return finish(r, o, run_kernels<K>(info, o, c, keys, check, r));
}

}  // namespace oneside::bench::graph_peer
