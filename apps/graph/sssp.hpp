// Graph500 kernel 3: single-source shortest paths by delta-stepping (Meyer & Sanders), on the
// distributed CSR of dist_graph.hpp, with the spec's edge weights (uniform in [0, 1)).
//
//   const dist_csr c = build_dist_csr(kronecker(18, 16, seed), world());
//   delta_stepping solver(c, world());           // allocates its state once (collective)
//   const sssp_result r = solver.run(root, 0.1F);  // collective; or sssp(c, root, 0.1F)
//   const sssp_verdict v = validate_sssp(c, root, r);  // sssp_validate.hpp
//
// The result is this rank's part, aligned with its rows: distance[l] and parent[l] are those of
// vertex c.first + l (+infinity and -1 for vertices the root does not reach; the root's parent
// is itself).
//
// The state of each vertex is one 64-bit word of a dist_array<std::uint64_t, 1> (dist::block,
// so beside the rows): its tentative distance's float bits above its parent's number (below
// 2^32). Non-negative floats order as their bits do, so the smaller word is the shorter
// distance (ties to the smaller parent), and a relaxation is an atomic min on the word: a CPU
// atomic for this rank's vertices, an aggregator atomic_min (oneside/pgas/aggregator.hpp) for
// the others', which travel batched and are applied at the owner (or, on shared memory with
// apply_at_origin, by the sender through the mapped heap).
//
// Buckets of width delta: bucket b holds the vertices whose distance is in [b·delta,
// (b+1)·delta). A vertex is active while its word is below the word its light edges were last
// relaxed with. Each phase: every rank relaxes the light edges (w < delta) of its active
// vertices of the current bucket, flushes its aggregator (its updates are then applied), and
// joins one allreduce min of the smallest bucket it may have made active: its own active
// vertices at its last scan, and the buckets of the improvements it made since, local CAS or
// sent update. The allreduce is also the phase's barrier: after it every update is applied,
// and each rank scans its words for the active vertices of the bucket it names (owners learn
// of remote improvements by looking, as the Graph500 reference scans its distances per
// bucket). That bucket is b again (another light phase), or, after b's heavy edges (w ≥ delta,
// once per vertex settled in b), the next one, or none (the end): one collective per phase. A
// vertex improved again after its edges were relaxed becomes active again, so the result is
// the fixpoint whatever the rounding of bucket numbers: for every arc u → v, dist[v] ≤
// dist[u] + w in float arithmetic, the distances Dijkstra computes.
//
// The solver's construction prepares the graph for every run (rows sorted by weight, each
// arc's destination resolved to a local row or a ghost, ghosts.hpp): preprocessing a driver
// times with kernel 1 (construction), not with each search. Memory: 8 bytes per arc, about 24
// per ghost and 17 per row, beside the dist_csr.
//
// Errors (oneside::error, arg, on every rank): a root outside [0, N), a delta that is not a
// positive finite number, a graph of 2^32 vertices or more.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "dist_graph.hpp"
#include "ghosts.hpp"

namespace oneside::apps::graph {

struct sssp_result {
  std::vector<float> distance;   // per local row; +infinity: unreached
  std::vector<vertex_t> parent;  // per local row; -1: unreached; the root's is the root
};

// Counters of one run (this rank's share, and the run's phase counts).
struct sssp_stats {
  std::uint64_t buckets = 0;         // buckets processed (a bucket revisited counts again)
  std::uint64_t phases = 0;          // light and heavy phases (each one flush + 1 allreduce)
  std::uint64_t relaxations = 0;     // arcs relaxed by this rank
  std::uint64_t remote_updates = 0;  // of them, sent to another rank through the aggregator
  double flush_seconds = 0;          // in the aggregator's flush
  double sync_seconds = 0;           // in the phases' allreduce
  double scan_seconds = 0;           // scanning the words for active vertices
};

namespace detail {

inline std::uint64_t sssp_word(float distance, vertex_t parent) noexcept {
  return (std::uint64_t{std::bit_cast<std::uint32_t>(distance)} << 32) |
         static_cast<std::uint32_t>(parent);
}
inline float sssp_distance(std::uint64_t word) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(word >> 32));
}
inline constexpr std::uint64_t sssp_unreached = ~std::uint64_t{0};

}  // namespace detail

class delta_stepping {
 public:
  // Collective over `t` (the team `c` was built over); keeps references to both, which must
  // outlive the solver. aggregator_options: the remote relaxations' aggregator (default:
  // apply_at_origin: ahead of the owner applying them in 2 of 2 launches at scale 18 on 2
  // loaded cores).
  delta_stepping(const dist_csr& c, const team& t, aggregator_options options = default_options())
      : c_(c),
        t_(t),
        options_(options),
        words_(t, {static_cast<std::size_t>(check_size(c))}, {dist::block}, "sssp.words"),
        bases_(allgather(t, base_of(words_, c))),
        expanded_(static_cast<std::size_t>(c.local_rows())),
        listed_(static_cast<std::size_t>(c.local_rows())) {
    arcs_of(c);
  }

  // Collective: shortest paths from `root` with buckets of width `delta`.
  sssp_result run(vertex_t root, float delta) {
    const vertex_t n = c_.partition.vertex_count();
    if (root < 0 || root >= n) {
      throw error(error_class::arg, "sssp: root " + std::to_string(root) + " is outside [0, " +
                                        std::to_string(n) + ")");
    }
    if (!(delta > 0.0F) || !std::isfinite(delta)) {
      throw error(error_class::arg,
                  "sssp: delta " + std::to_string(delta) + " is not a positive finite number");
    }
    stats_ = {};
    const auto rows = static_cast<std::size_t>(c_.local_rows());
    std::uint64_t* const words = words_.local().data();
    for (std::size_t l = 0; l < rows; ++l) words[l] = detail::sssp_unreached;
    std::fill(expanded_.begin(), expanded_.end(), detail::sssp_unreached);
    std::fill(listed_.begin(), listed_.end(), std::uint8_t{0});
    std::fill(sent_.begin(), sent_.end(), detail::sssp_unreached);
    if (c_.partition.owner(root) == c_.rank) {
      words[static_cast<std::size_t>(root - c_.first)] = detail::sssp_word(0.0F, root);
    }
    barrier(t_);  // every rank's words are reset before anyone relaxes

    aggregator agg(options_);
    // dests_ below this: a local row; from it on: a ghost.
    const auto local_limit = static_cast<std::uint64_t>(rows);
    std::vector<std::uint32_t> frontier;
    std::vector<std::uint32_t> settled;
    constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
    const double inv_delta = 1.0 / static_cast<double>(delta);
    auto bucket_of = [inv_delta](std::uint64_t word) {
      return static_cast<std::uint64_t>(static_cast<double>(detail::sssp_distance(word)) *
                                        inv_delta);
    };
    // What this rank knows of the buckets its vertices or its updates made active: `frontier`
    // (its active vertices of bucket frontier_bucket, none once expanded), `pending` (the
    // smallest bucket of its other active vertices at the last scan) and `reported` (the
    // smallest bucket of an improvement it made since: a local CAS, or an update it sent).
    std::uint64_t frontier_bucket = none;
    std::uint64_t pending = none;
    std::uint64_t reported = none;
    // Collects the active vertices of bucket b into `frontier`, the others' smallest bucket
    // into `pending`.
    auto collect = [&](std::uint64_t b) {
      frontier.clear();
      pending = none;
      for (std::size_t l = 0; l < rows; ++l) {
        const std::uint64_t w =
            std::atomic_ref<std::uint64_t>(words[l]).load(std::memory_order_relaxed);
        if (w >= expanded_[l]) continue;
        const std::uint64_t k = bucket_of(w);
        if (k == b) {
          frontier.push_back(static_cast<std::uint32_t>(l));
        } else if (k < pending) {
          pending = k;
        }
      }
      frontier_bucket = frontier.empty() ? none : b;
    };
    using clock = std::chrono::steady_clock;
    auto seconds = [](clock::time_point a, clock::time_point b) {
      return std::chrono::duration<double>(b - a).count();
    };
    // Ends a phase: once every rank's updates are applied (each flushes before the allreduce,
    // which therefore also serves as the barrier), the smallest bucket any rank may hold an
    // active vertex of, whose active vertices this rank then collects.
    auto end_phase = [&] {
      const auto t0 = clock::now();
      agg.flush();
      const auto t1 = clock::now();
      const std::uint64_t mine = std::min({frontier_bucket, pending, reported});
      reported = none;
      const std::uint64_t next = allreduce(t_, mine, op::min);
      const auto t2 = clock::now();
      ++stats_.phases;
      if (next != none) collect(next);
      const auto t3 = clock::now();
      stats_.flush_seconds += seconds(t0, t1);
      stats_.sync_seconds += seconds(t1, t2);
      stats_.scan_seconds += seconds(t2, t3);
      return next;
    };
    // Relaxes the light arcs (w < delta: a prefix of the row) or the heavy ones of local row
    // l from its word `w`.
    auto relax = [&](std::size_t l, std::uint64_t w, bool light) {
      const float d = detail::sssp_distance(w);
      const auto u = static_cast<std::uint32_t>(c_.first + static_cast<vertex_t>(l));
      const float* const weights = weights_.data();
      const std::uint32_t* const dests = dests_.data();
      std::uint64_t i = c_.offsets[l];
      std::uint64_t end = c_.offsets[l + 1];
      std::uint64_t split = i;
      while (split < end && weights[split] < delta) ++split;
      if (light) {
        end = split;
      } else {
        i = split;
      }
      stats_.relaxations += end - i;
      for (; i < end; ++i) {
        const std::uint64_t nw =
            (std::uint64_t{std::bit_cast<std::uint32_t>(d + weights[i])} << 32) | u;
        const std::uint64_t dest = dests[i];
        if (dest < local_limit) {
          std::atomic_ref<std::uint64_t> target(words[dest]);
          std::uint64_t old = target.load(std::memory_order_relaxed);
          while (nw < old) {
            if (target.compare_exchange_weak(old, nw, std::memory_order_relaxed)) {
              reported = std::min(reported, bucket_of(nw));
              break;
            }
          }
        } else {
          // A ghost: sent only when it beats what this rank sent it before (the owner's word
          // is at most that already).
          std::uint64_t& sent = sent_[dest - local_limit];
          if (nw >= sent) continue;
          sent = nw;
          reported = std::min(reported, bucket_of(nw));
          ++stats_.remote_updates;
          agg.atomic_min(ghost_ptrs_[dest - local_limit], nw);
        }
      }
    };

    const bool mine = c_.partition.owner(root) == c_.rank;
    std::uint64_t b = allreduce(t_, mine ? std::uint64_t{0} : none, op::min);  // 0
    collect(b);
    while (b != none) {
      ++stats_.buckets;
      // Light phases until bucket b has no active vertex anywhere.
      std::uint64_t next = b;
      while (next == b) {
        if (frontier_bucket == b) {
          for (const std::uint32_t l : frontier) {
            const std::uint64_t w =
                std::atomic_ref<std::uint64_t>(words[l]).load(std::memory_order_relaxed);
            expanded_[l] = w;
            if (listed_[l] == 0) {
              listed_[l] = 1;
              settled.push_back(l);
            }
            relax(l, w, true);
          }
          frontier_bucket = none;
        }
        next = end_phase();
      }
      // Heavy phase: the edges of w ≥ delta of every vertex settled in b, once.
      for (const std::uint32_t l : settled) {
        listed_[l] = 0;
        relax(l, std::atomic_ref<std::uint64_t>(words[l]).load(std::memory_order_relaxed), false);
      }
      settled.clear();
      b = end_phase();
    }

    sssp_result r;
    r.distance.resize(rows);
    r.parent.resize(rows);
    for (std::size_t l = 0; l < rows; ++l) {
      const std::uint64_t w = words[l];
      if (w == detail::sssp_unreached) {
        r.distance[l] = std::numeric_limits<float>::infinity();
        r.parent[l] = -1;
      } else {
        r.distance[l] = detail::sssp_distance(w);
        r.parent[l] = static_cast<vertex_t>(w & 0xffffffffU);
      }
    }
    return r;
  }

  // Counters of the last run.
  const sssp_stats& stats() const noexcept { return stats_; }

  static aggregator_options default_options() {
    aggregator_options o;
    o.apply_at_origin = true;
    return o;
  }

 private:
  static vertex_t check_size(const dist_csr& c) {
    if (c.partition.vertex_count() >= (vertex_t{1} << 32)) {
      throw error(error_class::arg, "sssp: " + std::to_string(c.partition.vertex_count()) +
                                        " vertices: a word's parent holds fewer than 2^32");
    }
    return c.partition.vertex_count();
  }
  // The global address of this rank's block (0 when it owns no vertex).
  static std::uint64_t base_of(dist_array<std::uint64_t, 1>& a, const dist_csr& c) {
    if (c.local_rows() == 0) return 0;
    return a.ptr({static_cast<std::size_t>(c.first)}).address();
  }

  // The rows' arcs sorted by weight (light ones first, whatever delta), each destination
  // resolved once: dests_ holds a local row l, or rows + g for ghost g (ghosts.hpp), whose
  // word ghost_ptrs_[g] points to.
  void arcs_of(const dist_csr& c) {
    const auto rows = static_cast<std::size_t>(c.local_rows());
    const ghost_set gs(c);
    const std::vector<std::uint32_t> slots = gs.slots(c);
    ghost_ptrs_.reserve(gs.size());
    for (const vertex_t v : gs.vertices()) {
      const rank_t o = c.partition.owner(v);
      ghost_ptrs_.emplace_back(
          o, static_cast<std::uintptr_t>(bases_[static_cast<std::size_t>(o)] +
                                         static_cast<std::uint64_t>(c.partition.local(v)) * 8));
    }
    sent_.resize(gs.size());
    dests_.resize(c.targets.size());
    weights_.resize(c.targets.size());
    std::vector<std::uint32_t> order;
    for (std::size_t l = 0; l < rows; ++l) {
      const std::uint64_t begin = c.offsets[l];
      const auto degree = static_cast<std::size_t>(c.offsets[l + 1] - begin);
      order.resize(degree);
      std::iota(order.begin(), order.end(), std::uint32_t{0});
      std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return c.weights[begin + a] < c.weights[begin + b];
      });
      for (std::size_t k = 0; k < degree; ++k) {
        const std::uint64_t from = begin + order[k];
        dests_[begin + k] = slots[from];
        weights_[begin + k] = c.weights[from];
      }
    }
  }

  const dist_csr& c_;
  const team& t_;
  std::vector<std::uint32_t> dests_;
  std::vector<float> weights_;
  std::vector<global_ptr<std::uint64_t>> ghost_ptrs_;
  std::vector<std::uint64_t> sent_;  // per ghost: the smallest word sent to it in this run
  aggregator_options options_;
  dist_array<std::uint64_t, 1> words_;
  std::vector<std::uint64_t> bases_;
  std::vector<std::uint64_t> expanded_;  // the word each row's light edges were relaxed with
  std::vector<std::uint8_t> listed_;     // in `settled` (the current bucket's heavy list)
  sssp_stats stats_;
};

// Collective over `t`: shortest paths from `root` (see delta_stepping).
inline sssp_result sssp(const dist_csr& c, vertex_t root, float delta, const team& t = world()) {
  delta_stepping solver(c, t);
  return solver.run(root, delta);
}

}  // namespace oneside::apps::graph
