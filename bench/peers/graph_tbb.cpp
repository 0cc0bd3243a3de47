// graph_tbb: the shared-memory baseline of the graph apps (issue 22) — graph_serial's kernels on
// oneTBB threads in one process (parallel_for over vertices or the frontier, atomics for the
// claims), on the same graph, search keys, result lines and --verify checks (graph_peer.hpp).
//
// - CSR: the edges generated in parallel, degrees counted and arcs placed with atomic
//   fetch-adds (a row's order then depends on the schedule; the graph is the same).
// - BFS: direction-optimizing, Beamer's switching (alpha = 15, beta = 18); top-down steps over
//   the queue claim a vertex by compare-and-swap of its parent and collect the next queue in
//   thread-local vectors; bottom-up steps split the vertices by 64-bit words of the frontier
//   bitmap, so each word of the next bitmap has one writer.
// - SSSP: delta-stepping (width 2 / average degree); a vertex's distance and parent live in one
//   64-bit word (the distance's bits above the parent: non-negative floats order as their bits),
//   relaxed by a compare-and-swap minimum; buckets are thread-local and the current one is
//   gathered at each phase.
// - PageRank: pull, as graph_serial's, each loop a parallel_for (the dangling sum a
//   parallel_reduce).
// - CC: Afforest with compare-and-swap links.
//
//   graph_tbb --scale 18 --threads 2 [--verify on] [--json out.json]
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/combinable.h>
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>

#include "graph_csr.hpp"
#include "graph_peer.hpp"

namespace {

namespace gp = oneside::bench::graph_peer;
namespace ag = oneside::apps::graph;
using gp::vid;

constexpr int alpha = 15;
constexpr int beta = 18;
constexpr std::size_t grain = 1024;

template <class T>
std::atomic_ref<T> atomic(T& x) {
  return std::atomic_ref<T>(x);
}

gp::csr build(const std::vector<gp::weighted_edge>& edges, vid n) {
  gp::csr c;
  c.vertex_count = n;
  c.offsets.assign(static_cast<std::size_t>(n) + 1, 0);
  const auto each_edge = [&](auto f) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, edges.size(), 4096),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t i = r.begin(); i < r.end(); ++i) {
                          if (edges[i].u != edges[i].v) f(edges[i]);
                        }
                      });
  };
  each_edge([&](const gp::weighted_edge& e) {
    atomic(c.offsets[e.u + 1]).fetch_add(1, std::memory_order_relaxed);
    atomic(c.offsets[e.v + 1]).fetch_add(1, std::memory_order_relaxed);
  });
  for (std::size_t v = 0; v < n; ++v) c.offsets[v + 1] += c.offsets[v];
  c.targets.resize(c.offsets[n]);
  c.weights.resize(c.offsets[n]);
  std::vector<std::uint64_t> next(c.offsets.begin(), c.offsets.end() - 1);
  each_edge([&](const gp::weighted_edge& e) {
    const std::uint64_t i = atomic(next[e.u]).fetch_add(1, std::memory_order_relaxed);
    c.targets[i] = e.v;
    c.weights[i] = e.w;
    const std::uint64_t j = atomic(next[e.v]).fetch_add(1, std::memory_order_relaxed);
    c.targets[j] = e.u;
    c.weights[j] = e.w;
  });
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
  }

  const std::vector<std::int32_t>& parent() const noexcept { return parent_; }

  void run(vid root) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, parent_.size(), 1 << 14),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        std::fill(parent_.begin() + static_cast<std::ptrdiff_t>(r.begin()),
                                  parent_.begin() + static_cast<std::ptrdiff_t>(r.end()),
                                  gp::unreached);
                      });
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
        bitmap_to_queue();
        scout = 1;
      } else {
        edges_to_check -= std::min(scout, edges_to_check);
        scout = top_down_step();
      }
    }
  }

 private:
  std::uint64_t top_down_step() {
    for (auto& l : local_) l.clear();
    tbb::combinable<std::uint64_t> scout([] { return std::uint64_t{0}; });
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, queue_.size(), 64),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        std::vector<vid>& out = local_.local();
                        std::uint64_t s = 0;
                        for (std::size_t k = r.begin(); k < r.end(); ++k) {
                          const vid u = queue_[k];
                          for (std::uint64_t i = c_.begin(u); i < c_.end(u); ++i) {
                            const vid v = c_.targets[i];
                            std::int32_t expected = gp::unreached;
                            if (atomic(parent_[v]).load(std::memory_order_relaxed) < 0 &&
                                atomic(parent_[v])
                                    .compare_exchange_strong(expected, static_cast<std::int32_t>(u),
                                                             std::memory_order_relaxed)) {
                              out.push_back(v);
                              s += c_.degree(v);
                            }
                          }
                        }
                        scout.local() += s;
                      });
    queue_.clear();
    for (auto& l : local_) queue_.insert(queue_.end(), l.begin(), l.end());
    return scout.combine([](std::uint64_t a, std::uint64_t b) { return a + b; });
  }

  std::uint64_t bottom_up_step() {
    return tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, words_, 16), std::uint64_t{0},
        [&](const tbb::blocked_range<std::size_t>& r, std::uint64_t awake) {
          for (std::size_t w = r.begin(); w < r.end(); ++w) {
            std::uint64_t bits = 0;
            const std::size_t last = std::min<std::size_t>(w * 64 + 64, c_.vertex_count);
            for (std::size_t x = w * 64; x < last; ++x) {
              const auto v = static_cast<vid>(x);
              if (parent_[v] >= 0) continue;
              for (std::uint64_t i = c_.begin(v); i < c_.end(v); ++i) {
                const vid u = c_.targets[i];
                if ((front_[u / 64] >> (u % 64)) & 1) {
                  parent_[v] = static_cast<std::int32_t>(u);
                  bits |= std::uint64_t{1} << (v % 64);
                  ++awake;
                  break;
                }
              }
            }
            next_[w] = bits;
          }
          return awake;
        },
        [](std::uint64_t a, std::uint64_t b) { return a + b; });
  }

  void bitmap_to_queue() {
    for (auto& l : local_) l.clear();
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, words_, 256),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        std::vector<vid>& out = local_.local();
                        for (std::size_t w = r.begin(); w < r.end(); ++w) {
                          for (std::uint64_t bits = front_[w]; bits != 0; bits &= bits - 1) {
                            out.push_back(static_cast<vid>(
                                w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
                          }
                        }
                      });
    queue_.clear();
    for (auto& l : local_) queue_.insert(queue_.end(), l.begin(), l.end());
  }

  const gp::csr& c_;
  std::vector<std::int32_t> parent_;
  std::size_t words_;
  std::vector<std::uint64_t> front_;
  std::vector<std::uint64_t> next_;
  std::vector<vid> queue_;
  tbb::enumerable_thread_specific<std::vector<vid>> local_;
};

// Parallel delta-stepping on packed (distance, parent) words.
class sssp_search {
 public:
  sssp_search(const gp::csr& c, float delta) : c_(c), delta_(delta), state_(c.vertex_count) {}

  static constexpr std::uint64_t pack(float d, vid parent) noexcept {
    return (std::uint64_t{std::bit_cast<std::uint32_t>(d)} << 32) | parent;
  }
  static float distance_of(std::uint64_t s) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(s >> 32));
  }

  void run(vid root) {
    const std::uint64_t none = pack(std::numeric_limits<float>::infinity(), 0xffffffffU);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, state_.size(), 1 << 14),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        for (std::size_t v = r.begin(); v < r.end(); ++v) state_[v] = none;
                      });
    for (auto& l : buckets_) {
      for (auto& b : l) b.clear();
    }
    state_[root] = pack(0.0F, root);
    frontier_.assign(1, root);
    std::size_t i = 0;
    while (true) {
      // Relax the frontier of bucket i; what lands in bucket i again is the next frontier.
      while (!frontier_.empty()) {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, frontier_.size(), 32),
                          [&](const tbb::blocked_range<std::size_t>& r) {
                            auto& mine = buckets_.local();
                            for (std::size_t k = r.begin(); k < r.end(); ++k)
                              relax(frontier_[k], i, mine);
                          });
        gather(i);
      }
      // The next non-empty bucket.
      std::size_t next = std::numeric_limits<std::size_t>::max();
      for (auto& l : buckets_) {
        for (std::size_t b = i + 1; b < l.size() && b < next; ++b) {
          if (!l[b].empty()) next = b;
        }
      }
      if (next == std::numeric_limits<std::size_t>::max()) break;
      i = next;
      gather(i);
    }
  }

  // dist and parent (unreached: infinity and -1), out of the packed words.
  void unpack(std::vector<float>& dist, std::vector<std::int32_t>& parent) const {
    dist.resize(state_.size());
    parent.resize(state_.size());
    for (std::size_t v = 0; v < state_.size(); ++v) {
      dist[v] = distance_of(state_[v]);
      parent[v] =
          std::isinf(dist[v]) ? gp::unreached : static_cast<std::int32_t>(state_[v] & 0xffffffffU);
    }
  }

 private:
  std::size_t bucket_of(float d) const noexcept { return static_cast<std::size_t>(d / delta_); }

  void relax(vid u, std::size_t i, std::vector<std::vector<vid>>& mine) {
    const float du = distance_of(atomic(state_[u]).load(std::memory_order_relaxed));
    if (bucket_of(du) != i) return;  // moved to an earlier bucket already
    for (std::uint64_t k = c_.begin(u); k < c_.end(u); ++k) {
      const vid v = c_.targets[k];
      const float nd = du + c_.weights[k];
      const std::uint64_t want = pack(nd, u);
      std::atomic_ref<std::uint64_t> s(state_[v]);
      std::uint64_t cur = s.load(std::memory_order_relaxed);
      bool won = false;
      while (nd < distance_of(cur)) {
        if (s.compare_exchange_weak(cur, want, std::memory_order_relaxed)) {
          won = true;
          break;
        }
      }
      if (won) {
        const std::size_t b = bucket_of(nd);
        if (b >= mine.size()) mine.resize(b + 1);
        mine[b].push_back(v);
      }
    }
  }

  // Moves every thread's bucket i into the frontier.
  void gather(std::size_t i) {
    frontier_.clear();
    for (auto& l : buckets_) {
      if (i < l.size()) {
        frontier_.insert(frontier_.end(), l[i].begin(), l[i].end());
        l[i].clear();
      }
    }
  }

  const gp::csr& c_;
  float delta_;
  std::vector<std::uint64_t> state_;
  std::vector<vid> frontier_;
  tbb::enumerable_thread_specific<std::vector<std::vector<vid>>> buckets_;
};

std::vector<double> pagerank(const gp::csr& c, int iterations, std::vector<double>& rank) {
  constexpr double d = 0.85;
  const vid n = c.vertex_count;
  rank.assign(n, 1.0 / n);
  std::vector<double> contrib(n);
  std::vector<double> times;
  const tbb::blocked_range<vid> all(0, n, grain);
  for (int it = 0; it < iterations; ++it) {
    const double t0 = gp::now();
    const double dangling = tbb::parallel_reduce(
        all, 0.0,
        [&](const tbb::blocked_range<vid>& r, double sum) {
          for (vid u = r.begin(); u < r.end(); ++u) {
            const std::uint64_t deg = c.degree(u);
            if (deg == 0) {
              sum += rank[u];
              contrib[u] = 0.0;
            } else {
              contrib[u] = rank[u] / static_cast<double>(deg);
            }
          }
          return sum;
        },
        [](double a, double b) { return a + b; });
    const double base = (1.0 - d) / n + d * dangling / n;
    tbb::parallel_for(all, [&](const tbb::blocked_range<vid>& r) {
      for (vid v = r.begin(); v < r.end(); ++v) {
        double s = 0.0;
        for (std::uint64_t i = c.begin(v); i < c.end(v); ++i) s += contrib[c.targets[i]];
        rank[v] = base + d * s;
      }
    });
    times.push_back(gp::now() - t0);
  }
  return times;
}

class afforest {
 public:
  explicit afforest(const gp::csr& c) : c_(c), comp_(c.vertex_count) {}

  const std::vector<vid>& labels() const noexcept { return comp_; }

  void run() {
    constexpr std::uint64_t rounds = 2;
    const tbb::blocked_range<vid> all(0, c_.vertex_count, grain);
    tbb::parallel_for(all, [&](const tbb::blocked_range<vid>& r) {
      for (vid v = r.begin(); v < r.end(); ++v) comp_[v] = v;
    });
    for (std::uint64_t round = 0; round < rounds; ++round) {
      tbb::parallel_for(all, [&](const tbb::blocked_range<vid>& r) {
        for (vid u = r.begin(); u < r.end(); ++u) {
          if (round < c_.degree(u)) link(u, c_.targets[c_.begin(u) + round]);
        }
      });
      compress();
    }
    const vid big = most_frequent();
    tbb::parallel_for(tbb::blocked_range<vid>(0, c_.vertex_count, 256),
                      [&](const tbb::blocked_range<vid>& r) {
                        for (vid u = r.begin(); u < r.end(); ++u) {
                          if (load(u) == big) continue;
                          for (std::uint64_t i = c_.begin(u) + std::min(rounds, c_.degree(u));
                               i < c_.end(u); ++i) {
                            link(u, c_.targets[i]);
                          }
                        }
                      });
    compress();
  }

 private:
  vid load(vid v) { return atomic(comp_[v]).load(std::memory_order_relaxed); }

  void link(vid u, vid v) {
    vid p1 = load(u);
    vid p2 = load(v);
    while (p1 != p2) {
      const vid high = std::max(p1, p2);
      const vid low = std::min(p1, p2);
      vid p_high = load(high);
      if (p_high == low) break;
      if (p_high == high &&
          atomic(comp_[high]).compare_exchange_strong(p_high, low, std::memory_order_relaxed)) {
        break;
      }
      p1 = load(load(high));
      p2 = load(low);
    }
  }

  void compress() {
    tbb::parallel_for(tbb::blocked_range<vid>(0, c_.vertex_count, grain),
                      [&](const tbb::blocked_range<vid>& r) {
                        for (vid v = r.begin(); v < r.end(); ++v) {
                          while (load(v) != load(load(v))) {
                            atomic(comp_[v]).store(load(load(v)), std::memory_order_relaxed);
                          }
                        }
                      });
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
    tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, g.edge_count(), 4096),
                      [&](const tbb::blocked_range<std::uint64_t>& range) {
                        for (std::uint64_t e = range.begin(); e < range.end(); ++e) {
                          const ag::edge x = g.edge_at(e);
                          edges[e] = {static_cast<vid>(x.u), static_cast<vid>(x.v), g.weight_at(e)};
                        }
                      });
  }
  static gp::csr build(const std::vector<gp::weighted_edge>& edges, vid n) {
    return ::build(edges, n);
  }
  static sssp_search sssp_for(const gp::csr& c, float delta, const gp::options&) {
    return {c, delta};
  }
  static std::vector<double> pagerank(const gp::csr& c, int iterations, std::vector<double>& rank) {
    return ::pagerank(c, iterations, rank);
  }
};

int run(int argc, char** argv) {
  const gp::program_info info{
      "graph_tbb", "oneTBB shared-memory baseline", {"bfs", "sssp", "pagerank", "cc"}, true, false};
  gp::options o;
  if (const int rc = gp::start(info, argc, argv, true, o); rc >= 0) return rc;
  std::optional<tbb::global_control> limit;
  if (o.threads > 0) {
    limit.emplace(tbb::global_control::max_allowed_parallelism,
                  static_cast<std::size_t>(o.threads));
  }
  gp::report r;
  r.program = &info;
  r.opts = &o;
  r.threads = o.threads > 0 ? o.threads : tbb::info::default_concurrency();
  std::printf("Graph500-style kernels, %s, %d threads, scale %d, edgefactor %d, seed %llu\n",
              info.flavour, r.threads, o.scale, o.edgefactor,
              static_cast<unsigned long long>(o.seed));
  std::fflush(stdout);

  return gp::run_baseline<kernels>(info, o, r);
}

}  // namespace

int main(int argc, char** argv) {
  return run(argc, argv);
}
