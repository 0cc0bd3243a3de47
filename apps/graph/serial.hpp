// Serial reference versions of the graph kernels, on one thread and in plain C++: what the tests
// compare the distributed apps with, and the simplest statement of what each kernel computes.
// (The tuned single-thread COST baselines live in bench/peers; these favour obviousness.)
//
// The graph: Kronecker edges (kronecker.hpp) made undirected — edge (u, v) is stored as u → v and
// v → u, with its weight — self-loops dropped, duplicates kept (they are harmless to every kernel
// and PageRank counts them as the edge list does).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <numeric>
#include <queue>
#include <utility>
#include <vector>

#include "kronecker.hpp"

namespace oneside::apps::graph::serial {

struct csr {
  vertex_t vertex_count = 0;
  std::vector<std::uint64_t> offsets;  // vertex_count + 1
  std::vector<vertex_t> targets;
  std::vector<float> weights;  // beside targets

  std::uint64_t degree(vertex_t v) const noexcept {
    return offsets[static_cast<std::size_t>(v) + 1] - offsets[static_cast<std::size_t>(v)];
  }
};

// Every edge of `g`, both directions, self-loops dropped; each vertex's neighbours in edge order.
inline csr build_csr(const kronecker& g) {
  csr c;
  c.vertex_count = g.vertex_count();
  const auto n = static_cast<std::size_t>(c.vertex_count);
  c.offsets.assign(n + 1, 0);
  for (std::uint64_t e = 0; e < g.edge_count(); ++e) {
    const edge x = g.edge_at(e);
    if (x.u == x.v) continue;
    ++c.offsets[static_cast<std::size_t>(x.u) + 1];
    ++c.offsets[static_cast<std::size_t>(x.v) + 1];
  }
  std::partial_sum(c.offsets.begin(), c.offsets.end(), c.offsets.begin());
  c.targets.resize(c.offsets[n]);
  c.weights.resize(c.offsets[n]);
  std::vector<std::uint64_t> next(c.offsets.begin(), c.offsets.end() - 1);
  for (std::uint64_t e = 0; e < g.edge_count(); ++e) {
    const edge x = g.edge_at(e);
    if (x.u == x.v) continue;
    const float w = g.weight_at(e);
    const std::uint64_t i = next[static_cast<std::size_t>(x.u)]++;
    c.targets[i] = x.v;
    c.weights[i] = w;
    const std::uint64_t j = next[static_cast<std::size_t>(x.v)]++;
    c.targets[j] = x.u;
    c.weights[j] = w;
  }
  return c;
}

// BFS levels from `root`: -1 for vertices it does not reach.
inline std::vector<std::int64_t> bfs_levels(const csr& c, vertex_t root) {
  std::vector<std::int64_t> level(static_cast<std::size_t>(c.vertex_count), -1);
  std::deque<vertex_t> queue{root};
  level[static_cast<std::size_t>(root)] = 0;
  while (!queue.empty()) {
    const vertex_t u = queue.front();
    queue.pop_front();
    for (std::uint64_t i = c.offsets[static_cast<std::size_t>(u)];
         i < c.offsets[static_cast<std::size_t>(u) + 1]; ++i) {
      const vertex_t v = c.targets[i];
      if (level[static_cast<std::size_t>(v)] < 0) {
        level[static_cast<std::size_t>(v)] = level[static_cast<std::size_t>(u)] + 1;
        queue.push_back(v);
      }
    }
  }
  return level;
}

// Shortest-path distances from `root` (Dijkstra): +infinity for vertices it does not reach.
inline std::vector<float> sssp_distances(const csr& c, vertex_t root) {
  std::vector<float> dist(static_cast<std::size_t>(c.vertex_count),
                          std::numeric_limits<float>::infinity());
  using item = std::pair<float, vertex_t>;
  std::priority_queue<item, std::vector<item>, std::greater<>> heap;
  dist[static_cast<std::size_t>(root)] = 0.0F;
  heap.emplace(0.0F, root);
  while (!heap.empty()) {
    const auto [d, u] = heap.top();
    heap.pop();
    if (d > dist[static_cast<std::size_t>(u)]) continue;
    for (std::uint64_t i = c.offsets[static_cast<std::size_t>(u)];
         i < c.offsets[static_cast<std::size_t>(u) + 1]; ++i) {
      const float nd = d + c.weights[i];
      if (nd < dist[static_cast<std::size_t>(c.targets[i])]) {
        dist[static_cast<std::size_t>(c.targets[i])] = nd;
        heap.emplace(nd, c.targets[i]);
      }
    }
  }
  return dist;
}

// PageRank with damping d after `iterations` synchronous steps from 1/N everywhere:
//   r'(v) = (1 - d)/N + d·(Σ_{u → v} r(u)/deg(u) + Σ_{deg(w) = 0} r(w)/N)
// (a vertex without edges spreads its rank over every vertex, so the ranks keep summing to 1).
inline std::vector<double> pagerank(const csr& c, double d, int iterations) {
  const auto n = static_cast<std::size_t>(c.vertex_count);
  std::vector<double> rank(n, 1.0 / static_cast<double>(n));
  std::vector<double> next(n);
  for (int it = 0; it < iterations; ++it) {
    double dangling = 0.0;
    std::fill(next.begin(), next.end(), 0.0);
    for (std::size_t u = 0; u < n; ++u) {
      const std::uint64_t deg = c.offsets[u + 1] - c.offsets[u];
      if (deg == 0) {
        dangling += rank[u];
        continue;
      }
      const double share = rank[u] / static_cast<double>(deg);
      for (std::uint64_t i = c.offsets[u]; i < c.offsets[u + 1]; ++i) {
        next[static_cast<std::size_t>(c.targets[i])] += share;
      }
    }
    const double base = (1.0 - d) / static_cast<double>(n) + d * dangling / static_cast<double>(n);
    for (std::size_t v = 0; v < n; ++v) next[v] = base + d * next[v];
    rank.swap(next);
  }
  return rank;
}

// Connected components: each vertex labelled with the smallest vertex of its component
// (union-find with path halving and union by smaller label).
inline std::vector<vertex_t> components(const csr& c) {
  const auto n = static_cast<std::size_t>(c.vertex_count);
  std::vector<vertex_t> parent(n);
  std::iota(parent.begin(), parent.end(), vertex_t{0});
  auto find = [&](vertex_t x) {
    while (parent[static_cast<std::size_t>(x)] != x) {
      parent[static_cast<std::size_t>(x)] =
          parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
      x = parent[static_cast<std::size_t>(x)];
    }
    return x;
  };
  for (std::size_t u = 0; u < n; ++u) {
    for (std::uint64_t i = c.offsets[u]; i < c.offsets[u + 1]; ++i) {
      const vertex_t a = find(static_cast<vertex_t>(u));
      const vertex_t b = find(c.targets[i]);
      if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
    }
  }
  std::vector<vertex_t> label(n);
  for (std::size_t v = 0; v < n; ++v) label[v] = find(static_cast<vertex_t>(v));
  return label;
}

// Afforest's sampling: the most frequent of `labels` at 1024 positions picked by a fixed hash
// (the giant component's label, with high probability). `labels` must not be empty.
template <class Label>
Label most_frequent_sample(const std::vector<Label>& labels) {
  std::vector<Label> sample(1024);
  for (std::uint64_t i = 0; i < sample.size(); ++i) {
    sample[i] = labels[detail::mix64(i + 0x9e3779b97f4a7c15ULL) % labels.size()];
  }
  std::sort(sample.begin(), sample.end());
  Label best = sample[0];
  std::size_t best_run = 0;
  for (std::size_t i = 0; i < sample.size();) {
    std::size_t j = i;
    while (j < sample.size() && sample[j] == sample[i]) ++j;
    if (j - i > best_run) {
      best_run = j - i;
      best = sample[i];
    }
    i = j;
  }
  return best;
}

}  // namespace oneside::apps::graph::serial
