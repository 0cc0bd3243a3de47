// graph_serial: the COST baseline of the graph apps (issue 22) — each kernel as one good thread
// runs it, on one core, no MPI, no threads. A distributed code should beat it before it claims
// to scale (McSherry, Isard, Murray: "Scalability! But at what COST?").
//
// The kernels, each the best known single-thread method:
// - BFS: direction-optimizing (Beamer, Asanović, Patterson, SC'12): top-down steps from a
//   vertex queue while the frontier is small, bottom-up steps over a frontier bitmap (each
//   unvisited vertex looks for a parent among its neighbours and stops at the first) while it
//   is large; switching by Beamer's heuristics (alpha = 15, beta = 18).
// - SSSP: delta-stepping as a bucket queue (buckets of width delta, default 2 / average degree;
//   a vertex relaxes all its arcs when its bucket is scanned, is scanned again if improved in
//   the bucket) or Dijkstra with a binary heap of packed (distance, vertex) keys; --sssp picks.
//   On this machine (scale 18) delta-stepping is the faster (bench/RESULTS.md), so it is the
//   default.
// - PageRank: pull, damping 0.85, dangling mass spread uniformly (serial.hpp's formula), each
//   vertex sums its neighbours' rank/degree; the report gives the mean iteration and all K.
// - CC: Afforest (Sutton, Ben-Nun, Barak, IPDPS'18): link each vertex to its first two
//   neighbours, compress, find the largest component by sampling, then link the remaining arcs
//   of the vertices outside it only; union by smaller label, so each label is the smallest
//   vertex of its component (serial.hpp's).
//
//   graph_serial --scale 18 [--verify on] [--json out.json]
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "graph_csr.hpp"
#include "graph_peer.hpp"

namespace {

namespace gp = oneside::bench::graph_peer;
namespace ag = oneside::apps::graph;
using gp::vid;

constexpr int alpha = 15;
constexpr int beta = 18;

gp::csr build(const std::vector<gp::weighted_edge>& edges, vid n) {
  gp::csr c;
  c.vertex_count = n;
  c.offsets.assign(static_cast<std::size_t>(n) + 1, 0);
  for (const gp::weighted_edge& e : edges) {
    if (e.u == e.v) continue;
    ++c.offsets[e.u + 1];
    ++c.offsets[e.v + 1];
  }
  for (std::size_t v = 0; v < n; ++v) c.offsets[v + 1] += c.offsets[v];
  c.targets.resize(c.offsets[n]);
  c.weights.resize(c.offsets[n]);
  std::vector<std::uint64_t> next(c.offsets.begin(), c.offsets.end() - 1);
  for (const gp::weighted_edge& e : edges) {
    if (e.u == e.v) continue;
    const std::uint64_t i = next[e.u]++;
    c.targets[i] = e.v;
    c.weights[i] = e.w;
    const std::uint64_t j = next[e.v]++;
    c.targets[j] = e.u;
    c.weights[j] = e.w;
  }
  return c;
}

class bfs_search {
 public:
  explicit bfs_search(const gp::csr& c)
      : c_(c),
        parent_(c.vertex_count),
        words_((static_cast<std::size_t>(c.vertex_count) + 63) / 64),
        front_(words_),
        next_(words_) {
    queue_.reserve(c.vertex_count);
    out_.reserve(c.vertex_count);
  }

  const std::vector<std::int32_t>& parent() const noexcept { return parent_; }

  void run(vid root) {
    std::fill(parent_.begin(), parent_.end(), gp::unreached);
    parent_[root] = static_cast<std::int32_t>(root);
    queue_.assign(1, root);
    std::uint64_t edges_to_check = c_.arc_count();
    std::uint64_t scout = c_.degree(root);
    while (!queue_.empty()) {
      if (scout > edges_to_check / alpha) {
        std::fill(front_.begin(), front_.end(), 0);
        for (vid v : queue_) front_[v / 64] |= std::uint64_t{1} << (v % 64);
        std::uint64_t awake = queue_.size();
        std::uint64_t old = 0;
        do {
          old = awake;
          awake = bottom_up_step();
          front_.swap(next_);
        } while (awake >= old || awake > c_.vertex_count / beta);
        queue_.clear();
        for (std::size_t w = 0; w < words_; ++w) {
          for (std::uint64_t bits = front_[w]; bits != 0; bits &= bits - 1) {
            queue_.push_back(
                static_cast<vid>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
          }
        }
        scout = 1;
      } else {
        edges_to_check -= std::min(scout, edges_to_check);
        scout = top_down_step();
      }
    }
  }

 private:
  // Claims the unvisited neighbours of the queue; returns the sum of their degrees.
  std::uint64_t top_down_step() {
    out_.clear();
    std::uint64_t scout = 0;
    for (vid u : queue_) {
      for (std::uint64_t i = c_.begin(u); i < c_.end(u); ++i) {
        const vid v = c_.targets[i];
        if (parent_[v] < 0) {
          parent_[v] = static_cast<std::int32_t>(u);
          out_.push_back(v);
          scout += c_.degree(v);
        }
      }
    }
    queue_.swap(out_);
    return scout;
  }

  // Each unvisited vertex takes its first neighbour in the frontier as parent; returns how
  // many did.
  std::uint64_t bottom_up_step() {
    std::fill(next_.begin(), next_.end(), 0);
    std::uint64_t awake = 0;
    for (vid v = 0; v < c_.vertex_count; ++v) {
      if (parent_[v] >= 0) continue;
      for (std::uint64_t i = c_.begin(v); i < c_.end(v); ++i) {
        const vid u = c_.targets[i];
        if ((front_[u / 64] >> (u % 64)) & 1) {
          parent_[v] = static_cast<std::int32_t>(u);
          next_[v / 64] |= std::uint64_t{1} << (v % 64);
          ++awake;
          break;
        }
      }
    }
    return awake;
  }

  const gp::csr& c_;
  std::vector<std::int32_t> parent_;
  std::size_t words_;
  std::vector<std::uint64_t> front_;
  std::vector<std::uint64_t> next_;
  std::vector<vid> queue_;
  std::vector<vid> out_;
};

class sssp_search {
 public:
  sssp_search(const gp::csr& c, float delta, bool dijkstra)
      : c_(c), delta_(delta), dijkstra_(dijkstra), dist_(c.vertex_count), parent_(c.vertex_count) {}

  const std::vector<float>& dist() const noexcept { return dist_; }
  const std::vector<std::int32_t>& parent() const noexcept { return parent_; }
  void unpack(std::vector<float>& dist, std::vector<std::int32_t>& parent) const {
    dist = dist_;
    parent = parent_;
  }

  // The method chosen at construction (--sssp).
  void run(vid root) {
    if (dijkstra_) {
      dijkstra(root);
    } else {
      delta_stepping(root);
    }
  }

  void reset(vid root) {
    std::fill(dist_.begin(), dist_.end(), std::numeric_limits<float>::infinity());
    std::fill(parent_.begin(), parent_.end(), gp::unreached);
    dist_[root] = 0.0F;
    parent_[root] = static_cast<std::int32_t>(root);
  }

  // Delta-stepping as a bucket queue.
  void delta_stepping(vid root) {
    reset(root);
    for (auto& b : buckets_) b.clear();
    push(root, 0.0F);
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      // Relaxing may append to bucket i itself (arcs lighter than delta): scan until it stays
      // empty. A vertex is relaxed once per scan of its bucket in which it is current.
      while (!buckets_[i].empty()) {
        scan_.swap(buckets_[i]);
        buckets_[i].clear();
        for (vid u : scan_) {
          const float du = dist_[u];
          if (bucket_of(du) != i) continue;  // moved to an earlier bucket already
          for (std::uint64_t k = c_.begin(u); k < c_.end(u); ++k) {
            const vid v = c_.targets[k];
            const float nd = du + c_.weights[k];
            if (nd < dist_[v]) {
              dist_[v] = nd;
              parent_[v] = static_cast<std::int32_t>(u);
              push(v, nd);
            }
          }
        }
        scan_.clear();
      }
    }
  }

  // Dijkstra with a binary heap of (distance bits << 32 | vertex): non-negative floats order
  // as their bits do, so one integer compare orders the keys; stale entries are skipped.
  void dijkstra(vid root) {
    reset(root);
    std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> heap;
    heap.push(root);
    while (!heap.empty()) {
      const std::uint64_t top = heap.top();
      heap.pop();
      const auto u = static_cast<vid>(top & 0xffffffffU);
      const float du = std::bit_cast<float>(static_cast<std::uint32_t>(top >> 32));
      if (du > dist_[u]) continue;
      for (std::uint64_t k = c_.begin(u); k < c_.end(u); ++k) {
        const vid v = c_.targets[k];
        const float nd = du + c_.weights[k];
        if (nd < dist_[v]) {
          dist_[v] = nd;
          parent_[v] = static_cast<std::int32_t>(u);
          heap.push((std::uint64_t{std::bit_cast<std::uint32_t>(nd)} << 32) | v);
        }
      }
    }
  }

 private:
  std::size_t bucket_of(float d) const noexcept { return static_cast<std::size_t>(d / delta_); }
  void push(vid v, float d) {
    const std::size_t b = bucket_of(d);
    if (b >= buckets_.size()) buckets_.resize(b + 1);
    buckets_[b].push_back(v);
  }

  const gp::csr& c_;
  float delta_;
  bool dijkstra_;
  std::vector<float> dist_;
  std::vector<std::int32_t> parent_;
  std::vector<std::vector<vid>> buckets_;
  std::vector<vid> scan_;
};

// Pull PageRank; returns each iteration's time.
std::vector<double> pagerank(const gp::csr& c, int iterations, std::vector<double>& rank) {
  constexpr double d = 0.85;
  const vid n = c.vertex_count;
  rank.assign(n, 1.0 / n);
  std::vector<double> contrib(n);
  std::vector<double> times;
  for (int it = 0; it < iterations; ++it) {
    const double t0 = gp::now();
    double dangling = 0.0;
    for (vid u = 0; u < n; ++u) {
      const std::uint64_t deg = c.degree(u);
      if (deg == 0) {
        dangling += rank[u];
        contrib[u] = 0.0;
      } else {
        contrib[u] = rank[u] / static_cast<double>(deg);
      }
    }
    const double base = (1.0 - d) / n + d * dangling / n;
    for (vid v = 0; v < n; ++v) {
      double s = 0.0;
      for (std::uint64_t i = c.begin(v); i < c.end(v); ++i) s += contrib[c.targets[i]];
      rank[v] = base + d * s;
    }
    times.push_back(gp::now() - t0);
  }
  return times;
}

// Afforest, on one thread.
class afforest {
 public:
  explicit afforest(const gp::csr& c) : c_(c), comp_(c.vertex_count) {}

  const std::vector<vid>& labels() const noexcept { return comp_; }

  void run() {
    constexpr std::uint64_t rounds = 2;
    const vid n = c_.vertex_count;
    for (vid v = 0; v < n; ++v) comp_[v] = v;
    for (std::uint64_t r = 0; r < rounds; ++r) {
      for (vid u = 0; u < n; ++u) {
        if (r < c_.degree(u)) link(u, c_.targets[c_.begin(u) + r]);
      }
      compress();
    }
    const vid big = most_frequent();
    for (vid u = 0; u < n; ++u) {
      if (comp_[u] == big) continue;
      for (std::uint64_t i = c_.begin(u) + std::min(rounds, c_.degree(u)); i < c_.end(u); ++i) {
        link(u, c_.targets[i]);
      }
    }
    compress();
  }

 private:
  // Joins u's and v's trees: the larger root points to the smaller label.
  void link(vid u, vid v) {
    vid p1 = comp_[u];
    vid p2 = comp_[v];
    while (p1 != p2) {
      const vid high = std::max(p1, p2);
      const vid low = std::min(p1, p2);
      const vid p_high = comp_[high];
      if (p_high == low) break;
      if (p_high == high) {
        comp_[high] = low;
        break;
      }
      p1 = comp_[comp_[high]];
      p2 = comp_[low];
    }
  }
  void compress() {
    for (vid v = 0; v < c_.vertex_count; ++v) {
      while (comp_[v] != comp_[comp_[v]]) comp_[v] = comp_[comp_[v]];
    }
  }
  vid most_frequent() const { return ag::serial::most_frequent_sample(comp_); }

  const gp::csr& c_;
  std::vector<vid> comp_;
};

// The kernels of this baseline (gp::run_kernels).
struct kernels {
  using bfs = bfs_search;
  using cc = afforest;
  static void generate(const ag::kronecker& g, std::vector<gp::weighted_edge>& edges) {
    for (std::uint64_t e = 0; e < g.edge_count(); ++e) {
      const ag::edge x = g.edge_at(e);
      edges[e] = {static_cast<vid>(x.u), static_cast<vid>(x.v), g.weight_at(e)};
    }
  }
  static gp::csr build(const std::vector<gp::weighted_edge>& edges, vid n) {
    return ::build(edges, n);
  }
  static sssp_search sssp_for(const gp::csr& c, float delta, const gp::options& o) {
    return {c, delta, o.sssp == "dijkstra"};
  }
  static std::vector<double> pagerank(const gp::csr& c, int iterations, std::vector<double>& rank) {
    return ::pagerank(c, iterations, rank);
  }
};

int run(int argc, char** argv) {
  const gp::program_info info{"graph_serial",
                              "single-thread COST baseline",
                              {"bfs", "sssp", "pagerank", "cc"},
                              false,
                              true};
  gp::options o;
  if (const int rc = gp::start(info, argc, argv, true, o); rc >= 0) return rc;
  std::printf("Graph500-style kernels, %s, scale %d, edgefactor %d, seed %llu\n", info.flavour,
              o.scale, o.edgefactor, static_cast<unsigned long long>(o.seed));
  std::fflush(stdout);

  gp::report r;
  r.program = &info;
  r.opts = &o;
  return gp::run_baseline<kernels>(info, o, r);
}

}  // namespace

int main(int argc, char** argv) {
  return run(argc, argv);
}
