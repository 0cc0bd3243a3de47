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
// atomic for this rank's vertices; for node peers whose memory is mapped here
// (sssp_updates::direct, through global_ptr::local()) an update batched into the owner's inbox
// once per phase and applied there as a CPU atomic; an aggregator atomic_min
// (oneside/pgas/aggregator.hpp) for the others', which travel batched and are applied at the
// owner (or, on shared memory with apply_at_origin, by the sender through the mapped heap).
// Each rank also keeps a float per row, never below its word's distance (known_: half the
// bytes, so the longer paths most relaxations find are dropped from cache), and sends a ghost
// only a distance shorter than the last it sent it.
//
// Buckets of width delta: bucket b holds the vertices whose distance is in [b·delta,
// (b+1)·delta). A vertex is active while its word is below the word its light edges were last
// relaxed with. Each phase: every rank relaxes the light edges (w < delta) of its active
// vertices of the current bucket, flushes its aggregator (its updates are then applied), and
// joins one allreduce min of the smallest bucket it may have made active: its own active
// vertices at its last scan, and the buckets of the improvements it made since, local CAS or
// sent update. The allreduce is also the phase's barrier: after it every update is applied,
// and each rank collects its active vertices of the bucket it names. It knows them from a
// bitmap of the rows lowered since their last expansion: its own improvements set bits as they
// happen, and when every peer's memory is mapped (sssp_updates::direct on one node), each peer
// appends its updates (word, row) to the owner's inbox once per phase (one fetch_add and one
// copy; two inboxes by phase parity), and the owner sets the bits of the rows they lowered.
// Otherwise, or when an inbox overflows (its updates are then applied by compare-exchange),
// the owner scans all its words, as the Graph500 reference scans its distances per bucket.
// That bucket is b again (another light phase), or, after b's heavy edges (w ≥ delta,
// once per vertex settled in b), the next one, or none (the end): one collective per phase. A
// vertex improved again after its edges were relaxed becomes active again, so the result is
// the fixpoint whatever the rounding of bucket numbers: for every arc u → v, dist[v] ≤
// dist[u] + w in float arithmetic, the distances Dijkstra computes.
//
// The solver's construction prepares the graph for every run (rows sorted by weight, each
// arc's destination resolved to a local row or a ghost, ghosts.hpp): preprocessing a driver
// times with kernel 1 (construction), not with each search. Memory: 8 bytes per arc, about 28
// per ghost and 62 per row (the two 16-byte inbox entries included), beside the dist_csr.
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

// How relaxations of other ranks' vertices travel:
//   direct      when the owner's memory is mapped here (global_ptr::is_local(): node peers on
//               the shared-memory transport), batched into its inbox once per phase (when every
//               peer is mapped) or a compare-exchange on its word; else as aggregated; no
//               message, no per-update call (the default)
//   aggregated  an aggregator atomic_min for every remote vertex
enum class sssp_updates : std::uint8_t { direct, aggregated };

class delta_stepping {
 public:
  // Collective over `t` (the team `c` was built over); keeps references to both, which must
  // outlive the solver. aggregator_options: the remote relaxations' aggregator (default:
  // apply_at_origin: ahead of the owner applying them in 2 of 2 launches at scale 18 on 2
  // loaded cores).
  delta_stepping(const dist_csr& c, const team& t, aggregator_options options = default_options(),
                 sssp_updates updates = sssp_updates::direct)
      : c_(c),
        t_(t),
        options_(options),
        updates_(updates),
        words_(t, {static_cast<std::size_t>(check_size(c))}, {dist::block}, "sssp.words"),
        bases_(allgather(t, base_of(words_, c))),
        expanded_(static_cast<std::size_t>(c.local_rows())),
        listed_(static_cast<std::size_t>(c.local_rows())),
        known_(static_cast<std::size_t>(c.local_rows())),
        split_(static_cast<std::size_t>(c.local_rows())),
        active_((static_cast<std::size_t>(c.local_rows()) + 63) / 64),
        inbox_words_(t,
                     {2 * static_cast<std::size_t>(c.partition.block()) *
                      static_cast<std::size_t>(c.partition.ranks())},
                     {dist::block}, "sssp.inbox"),
        inbox_counts_(t, {2 * static_cast<std::size_t>(c.partition.ranks())}, {dist::block},
                      "sssp.inbox_counts") {
    arcs_of(c);
    const vertex_partition& p = c.partition;
    const auto ranks = static_cast<std::size_t>(p.ranks());
    bool mapped = updates_ == sssp_updates::direct;
    for (rank_t r = 0; r < p.ranks(); ++r) {
      const global_ptr<sssp_update> in =
          inbox_words_.ptr({2 * static_cast<std::size_t>(r) * static_cast<std::size_t>(p.block())});
      const global_ptr<std::uint64_t> count = inbox_counts_.ptr({2 * static_cast<std::size_t>(r)});
      const bool local = in.is_local() && count.is_local();
      peer_inbox_.push_back(local ? in.local() : nullptr);
      peer_count_.push_back(local ? count.local() : nullptr);
      const global_ptr<std::uint64_t> first(
          r, static_cast<std::uintptr_t>(bases_[static_cast<std::size_t>(r)]));
      const bool words_local = p.size(r) > 0 && first.is_local();
      direct_words_.push_back(updates_ == sssp_updates::direct && words_local ? first.local()
                                                                              : nullptr);
      if (r != c.rank && p.size(r) > 0 && !(local && words_local)) mapped = false;
    }
    lists_ = allreduce(t, std::uint64_t{mapped ? 1U : 0U}, op::min) == 1;
    outbox_.resize(ranks);
    std::uint64_t* const counts = inbox_counts_.local().data();
    counts[0] = counts[1] = 0;
    barrier(t);  // every inbox empty before any rank appends
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
    for (ghost_state& g : ghosts_) g.sent = std::numeric_limits<float>::infinity();
    std::fill(known_.begin(), known_.end(), std::numeric_limits<float>::infinity());
    std::fill(active_.begin(), active_.end(), 0);
    split_at(delta);
    if (c_.partition.owner(root) == c_.rank) {
      const auto l = static_cast<std::size_t>(root - c_.first);
      words[l] = detail::sssp_word(0.0F, root);
      known_[l] = 0.0F;
      active_[l / 64] |= std::uint64_t{1} << (l % 64);
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
    // shortest distance of an improvement it made since, a local CAS or an update it sent:
    // its bucket is the smallest such bucket).
    std::uint64_t frontier_bucket = none;
    std::uint64_t pending = none;
    float reported = std::numeric_limits<float>::infinity();
    // Collects the active vertices of bucket b into `frontier`, the others' smallest bucket
    // into `pending`: those marked in active_ (lists_), else those a scan of every word finds.
    auto look_at = [&](std::size_t l, std::uint64_t b) {
      const std::uint64_t w =
          std::atomic_ref<std::uint64_t>(words[l]).load(std::memory_order_relaxed);
      if (w >= expanded_[l]) return false;
      known_[l] = detail::sssp_distance(w);  // lowered by another rank, perhaps
      const std::uint64_t k = bucket_of(w);
      if (k == b) {
        frontier.push_back(static_cast<std::uint32_t>(l));
      } else if (k < pending) {
        pending = k;
      }
      return true;
    };
    auto collect = [&](std::uint64_t b, bool scan) {
      frontier.clear();
      pending = none;
      if (scan) {
        for (std::size_t l = 0; l < rows; ++l) {
          const std::uint64_t bit = std::uint64_t{1} << (l % 64);
          active_[l / 64] = look_at(l, b) ? active_[l / 64] | bit : active_[l / 64] & ~bit;
        }
      } else {
        for (std::size_t i = 0; i < active_.size(); ++i) {
          for (std::uint64_t bits = active_[i]; bits != 0; bits &= bits - 1) {
            const std::size_t l = i * 64 + static_cast<std::size_t>(std::countr_zero(bits));
            if (!look_at(l, b)) active_[i] &= ~(std::uint64_t{1} << (l % 64));
          }
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
      const std::size_t parity = stats_.phases % 2;
      if (lists_) deliver(parity);
      const auto t1 = clock::now();
      const std::uint64_t mine =
          std::min({frontier_bucket, pending,
                    std::isinf(reported) ? none : bucket_of(detail::sssp_word(reported, 0))});
      reported = std::numeric_limits<float>::infinity();
      const std::uint64_t next = allreduce(t_, mine, op::min);
      const auto t2 = clock::now();
      ++stats_.phases;
      // Every rank's updates of this phase are in the words, its lists in the inboxes.
      const bool scan = !lists_ || !receive(parity, words, [&](std::uint32_t l, std::uint64_t w) {
        known_[l] = std::min(known_[l], detail::sssp_distance(w));
        active_[l / 64] |= std::uint64_t{1} << (l % 64);
      });
      if (next != none) collect(next, scan);
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
      float* const known = known_.data();
      std::uint64_t i = light ? c_.offsets[l] : split_[l];
      const std::uint64_t end = light ? split_[l] : c_.offsets[l + 1];
      stats_.relaxations += end - i;
      for (; i < end; ++i) {
        const float nd = d + weights[i];
        const std::uint64_t dest = dests[i];
        if (dest < local_limit) {
          // known_ (4 bytes a row, cache-resident where the words are not) is never below the
          // word's distance: a longer path is dropped without touching the word.
          if (nd > known[dest]) continue;
          const std::uint64_t nw = (std::uint64_t{std::bit_cast<std::uint32_t>(nd)} << 32) | u;
          if (atomic_lower(words[dest], nw)) {
            known[dest] = nd;
            active_[dest / 64] |= std::uint64_t{1} << (dest % 64);
            reported = std::min(reported, nd);
          }
        } else {
          // A ghost: sent only a shorter distance than this rank sent it before (the owner's
          // word is at most that already; of equal distances the first sent stays).
          const std::size_t g = dest - local_limit;
          ghost_state& ghost = ghosts_[g];
          if (nd >= ghost.sent) continue;
          ghost.sent = nd;
          const std::uint64_t nw = (std::uint64_t{std::bit_cast<std::uint32_t>(nd)} << 32) | u;
          ++stats_.remote_updates;
          const std::size_t o = owner_of_ghost(g);
          if (lists_) {
            // Batched: the owner applies it after the phase (deliver, receive).
            reported = std::min(reported, nd);
            outbox_[o].push_back({nw, ghost.row});
            continue;
          }
          if (std::uint64_t* const words_there = direct_words_[o]; words_there != nullptr) {
            // The owner learns of the lowered word from its scan.
            if (atomic_lower(words_there[ghost.row], nw)) reported = std::min(reported, nd);
            continue;
          }
          reported = std::min(reported, nd);
          agg.atomic_min(ghost_ptrs_[dest - local_limit], nw);
        }
      }
    };

    const bool mine = c_.partition.owner(root) == c_.rank;
    std::uint64_t b = allreduce(t_, mine ? std::uint64_t{0} : none, op::min);  // 0
    collect(b, !lists_);
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

  // The owner of ghost g (ghosts are numbered by owner).
  std::size_t owner_of_ghost(std::size_t g) const noexcept {
    return static_cast<std::size_t>(
        std::upper_bound(ghost_begin_.begin(), ghost_begin_.end(), static_cast<std::uint32_t>(g)) -
        ghost_begin_.begin() - 1);
  }
  // Appends this phase's updates to their owners' inboxes of `parity`; what does not fit is
  // applied here by compare-exchange, and the count past the end tells the owner to scan.
  void deliver(std::size_t parity) {
    const auto capacity = static_cast<std::uint64_t>(c_.partition.block());
    for (std::size_t o = 0; o < outbox_.size(); ++o) {
      std::vector<sssp_update>& w = outbox_[o];
      if (w.empty()) continue;
      const std::uint64_t at = std::atomic_ref<std::uint64_t>(peer_count_[o][parity])
                                   .fetch_add(w.size(), std::memory_order_relaxed);
      const std::uint64_t fit =
          at < capacity ? std::min<std::uint64_t>(w.size(), capacity - at) : 0;
      if (fit > 0) std::copy_n(w.begin(), fit, peer_inbox_[o] + parity * capacity + at);
      for (std::size_t i = fit; i < w.size(); ++i) {
        atomic_lower(direct_words_[o][w[i].row], w[i].word);
      }
      w.clear();
    }
  }
  // Applies the updates the peers put in this rank's inbox of `parity` (calling
  // lowered(row, word) for each that lowered a word) and empties it; false when it overflowed
  // (the caller scans).
  template <class Lowered>
  bool receive(std::size_t parity, std::uint64_t* words, Lowered lowered) {
    const auto capacity = static_cast<std::uint64_t>(c_.partition.block());
    std::atomic_ref<std::uint64_t> count(peer_count_[static_cast<std::size_t>(c_.rank)][parity]);
    const std::uint64_t n = count.load(std::memory_order_acquire);
    count.store(0, std::memory_order_relaxed);  // no peer appends to it before the next phase
    const sssp_update* const in =
        peer_inbox_[static_cast<std::size_t>(c_.rank)] + parity * capacity;
    for (std::uint64_t i = 0; i < std::min(n, capacity); ++i) {
      if (atomic_lower(words[in[i].row], in[i].word)) lowered(in[i].row, in[i].word);
    }
    return n <= capacity;
  }
  // word = min(word, w); whether it lowered it.
  static bool atomic_lower(std::uint64_t& word, std::uint64_t w) noexcept {
    std::atomic_ref<std::uint64_t> target(word);
    std::uint64_t old = target.load(std::memory_order_relaxed);
    while (w < old) {
      if (target.compare_exchange_weak(old, w, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  // Each row's first heavy arc (weight >= delta) into split_, unless known from the last run.
  void split_at(float delta) {
    if (delta == split_delta_) return;
    for (std::size_t l = 0; l < split_.size(); ++l) {
      const auto begin = weights_.begin() + static_cast<std::ptrdiff_t>(c_.offsets[l]);
      const auto end = weights_.begin() + static_cast<std::ptrdiff_t>(c_.offsets[l + 1]);
      split_[l] =
          c_.offsets[l] +
          static_cast<std::uint64_t>(
              std::partition_point(begin, end, [delta](float w) { return w < delta; }) - begin);
    }
    split_delta_ = delta;
  }

  // The rows' arcs sorted by weight (light ones first, whatever delta), each destination
  // resolved once: dests_ holds a local row l, or rows + g for ghost g (ghosts.hpp), whose
  // word ghost_ptrs_[g] points to.
  void arcs_of(const dist_csr& c) {
    const auto rows = static_cast<std::size_t>(c.local_rows());
    const ghost_set gs(c);
    const std::vector<std::uint32_t> slots = gs.slots(c);
    ghost_ptrs_.reserve(gs.size());
    ghost_begin_.assign(static_cast<std::size_t>(c.partition.ranks()) + 1, 0);
    for (const vertex_t v : gs.vertices()) {
      const rank_t o = c.partition.owner(v);
      ++ghost_begin_[static_cast<std::size_t>(o) + 1];  // counts, summed below
      ghost_ptrs_.emplace_back(
          o, static_cast<std::uintptr_t>(bases_[static_cast<std::size_t>(o)] +
                                         static_cast<std::uint64_t>(c.partition.local(v)) * 8));
      ghosts_.push_back({0.0F, static_cast<std::uint32_t>(c.partition.local(v))});
    }
    std::partial_sum(ghost_begin_.begin(), ghost_begin_.end(), ghost_begin_.begin());
    ghost_begin_.pop_back();  // per rank: its first ghost
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
  struct ghost_state {
    float sent;         // the shortest distance sent to it in this run
    std::uint32_t row;  // its row at its owner
  };
  std::vector<ghost_state> ghosts_;  // one cache line holds both for the relaxations
  aggregator_options options_;
  sssp_updates updates_;
  dist_array<std::uint64_t, 1> words_;
  std::vector<std::uint64_t> bases_;
  std::vector<std::uint64_t> expanded_;  // the word each row's light edges were relaxed with
  std::vector<std::uint8_t> listed_;     // in `settled` (the current bucket's heavy list)
  std::vector<float> known_;             // per row: its word's distance as this rank saw it last
  std::vector<std::uint64_t> split_;     // per row: its first arc of weight >= split_delta_
  float split_delta_ = -1.0F;
  std::vector<std::uint64_t> active_;  // per row: lowered since its light arcs were relaxed
  // Lists instead of scans (every peer's memory mapped): a peer's updates of this rank's words
  // in a phase reach it through an inbox (two, by phase parity, so a peer's next batch never
  // meets this one unread): a fetch_add and a copy per peer and phase.
  bool lists_ = false;
  struct sssp_update {
    std::uint64_t word;  // the new word
    std::uint32_t row;   // at the owner
  };
  dist_array<sssp_update, 1> inbox_words_;     // per rank: 2 x block entries
  dist_array<std::uint64_t, 1> inbox_counts_;  // per rank: 2 counts
  std::vector<sssp_update*> peer_inbox_;       // each rank's inboxes mapped here
  std::vector<std::uint64_t*> peer_count_;
  std::vector<std::uint64_t*> direct_words_;      // each rank's first word mapped here (direct)
  std::vector<std::uint32_t> ghost_begin_;        // per rank: its first ghost (ghosts by owner)
  std::vector<std::vector<sssp_update>> outbox_;  // per rank: this phase's updates for it
  sssp_stats stats_;
};

// Collective over `t`: shortest paths from `root` (see delta_stepping).
inline sssp_result sssp(const dist_csr& c, vertex_t root, float delta, const team& t = world()) {
  delta_stepping solver(c, t);
  return solver.run(root, delta);
}

}  // namespace oneside::apps::graph
