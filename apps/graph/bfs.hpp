// Graph500 kernel 2: breadth-first search from a root over the distributed CSR (dist_graph.hpp),
// writing each reached vertex's parent (a global vertex number; the root's parent is itself,
// unreached vertices -1) into a dist_array<vertex_t, 1> laid out with dist::block beside the
// rows. Two variants, level-synchronous, chosen by bfs_kind:
//
//   topdown  each rank expands its part of the frontier: for each arc u → v of a frontier vertex
//            u, v's parent word is claimed with u — by a CPU compare-exchange when v is local
//            (the winner joins the next frontier at once), by a batch appended to the owner's
//            inbox when the owner is a node peer whose memory this process maps
//            (bfs_claims::direct), else through an aggregator (one message per few hundred
//            claims), as an atomic_min on the word or an rpc_ff whose body claims it at the
//            owner (bfs_claims). During the search a claimed
//            word holds (level << 40) | parent, so the minimum keeps the first level's claim: a
//            claim of a later level on a vertex reached before changes nothing, and among claims of
//            one level the smallest parent wins. A rank claims each remote vertex at most once per
//            search (a bitmap of the vertices it claimed): once claimed, a vertex is reached at
//            that level or before, so a second claim could not win; the messages are bounded by
//            the vertices rather than the arcs. After the level: flush() (quiet() for rpc
//            claims), a barrier, and the remotely claimed vertices join the next frontier (found
//            by a scan of the unvisited words, or listed by the rpc bodies).
//   diropt   Beamer's direction-optimizing BFS: top-down levels as above while the frontier is
//            small; bottom-up levels when the frontier's arcs m_f exceed the unexplored
//            vertices' arcs m_u / alpha, until the frontier shrinks below n / beta. Bottom-up,
//            each rank gathers the frontier bitmap of every rank (one allgather of n bits),
//            then each of its unvisited vertices looks for a parent among its neighbours in
//            that bitmap, stopping at the first: no remote writes at all.
//
// Unreached parents hold INT64_MAX during the search (so that atomic_min claims); at its end
// every word becomes the parent alone, or -1. Frontier sizes and arc counts travel by one allreduce
// per level.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "dist_graph.hpp"

namespace oneside::apps::graph {

enum class bfs_kind : std::uint8_t { topdown, diropt };

inline const char* name_of(bfs_kind k) noexcept {
  return k == bfs_kind::topdown ? "topdown" : "diropt";
}

// Beamer's switching thresholds (Beamer, Asanović, Patterson, SC'12: alpha 14, beta 24).
// How top-down levels claim remote vertices:
//   direct  when the owner's memory is mapped here (global_ptr::is_local(): node peers on the
//           shared-memory transport), the claims (row, parent) are collected per owner and
//           appended to its inbox after the level (one fetch_add and one copy of the batch:
//           sequential stores, where a compare-exchange on the owner's random words costs a
//           cross-core miss each); the owner claims them after the barrier; other owners get
//           atomic claims; a batch that does not fit the inbox is claimed by compare-exchange
//           and the owner told to scan
//   atomic  an aggregated atomic_min on the vertex's parent word; after the level the owner
//           scans its unvisited words for the claims that landed (blocks of 64 unclaimed
//           words skipped at once)
//   rpc     an aggregated rpc_ff whose body, at the owner, claims the word by compare-exchange
//           and lists the vertex in the owner's inbox (a dist_object): the next frontier
//           without a scan; quiet() instead of flush() ends the level
enum class bfs_claims : std::uint8_t { direct, atomic, rpc };

struct bfs_tuning {
  double alpha = 14.0;
  double beta = 24.0;
  bfs_claims claims = bfs_claims::direct;
};

// Per-search statistics of this rank's searches (the same at every rank after a search).
struct bfs_stats {
  int levels = 0;
  int bottom_up_levels = 0;
};

class bfs_solver {
 public:
  static constexpr vertex_t unreached = -1;

  // Collective over the csr's team `t`, which must be the world (the rpc claims' inbox is a
  // dist_object): the parent array and this rank's buffers.
  bfs_solver(const dist_csr& c, const team& t, bfs_tuning tuning = {})
      : c_(c),
        t_(t),
        tuning_(tuning),
        parent_(t, {static_cast<std::size_t>(c.partition.vertex_count())}, {dist::block},
                "parents"),
        inbox_words_(t, {inbox_size(c, tuning.claims == bfs_claims::rpc)}, {dist::block},
                     "bfs inbox"),
        inbox_counts_(t, {2 * static_cast<std::size_t>(c.partition.ranks())}, {dist::block},
                      "bfs inbox counts"),
        bulk_inbox_(t, {inbox_size(c, tuning.claims == bfs_claims::direct)}, {dist::block},
                    "bfs claims inbox"),
        rows_(c.local_rows()),
        words_per_rank_((static_cast<std::size_t>(c.partition.block()) + 63) / 64),
        aligned_(c.partition.block() % 64 == 0),
        block_shift_(std::has_single_bit(static_cast<std::uint64_t>(c.partition.block()))
                         ? std::countr_zero(static_cast<std::uint64_t>(c.partition.block()))
                         : -1) {
    const vertex_partition& p = c.partition;
    for (rank_t r = 0; r < p.ranks(); ++r) {
      blocks_.push_back(p.size(r) > 0 ? parent_.ptr({static_cast<std::size_t>(p.first(r))})
                                      : global_ptr<vertex_t>());
      const global_ptr<vertex_t>& b = blocks_.back();
      const bool direct = tuning.claims == bfs_claims::direct && !b.is_null() && b.is_local();
      mapped_.push_back(direct ? b.local() : nullptr);
      mapped_inbox_.push_back(
          direct
              ? bulk_inbox_.ptr({static_cast<std::size_t>(p.block()) * static_cast<std::size_t>(r)})
                    .local()
              : nullptr);
      mapped_count_.push_back(direct ? inbox_counts_.ptr({2 * static_cast<std::size_t>(r)}).local()
                                     : nullptr);
      if (r != c.rank && p.size(r) > 0 && !direct && tuning.claims != bfs_claims::rpc) {
        scan_ = true;
      }
    }
    outbox_.resize(static_cast<std::size_t>(p.ranks()));
    // Vertices without arcs (and the padding past the last row) are never claimed: marked
    // visited from the start, no level looks at them.
    never_.assign(words_per_rank_, 0);
    for (std::size_t l = 0; l < words_per_rank_ * 64; ++l) {
      if (static_cast<vertex_t>(l) >= rows_ || c.degree(static_cast<vertex_t>(l)) == 0) {
        never_[l / 64] |= std::uint64_t{1} << (l % 64);
      }
    }
    visited_ = never_;
    claimed_.assign((static_cast<std::size_t>(p.vertex_count()) + 63) / 64, 0);
    frontier_bits_.assign(words_per_rank_, 0);
    all_frontier_bits_.assign(words_per_rank_ * static_cast<std::size_t>(p.ranks()), 0);
    queue_.reserve(static_cast<std::size_t>(rows_));
    next_.reserve(static_cast<std::size_t>(rows_));
    inbox_list_ = inbox_words_.local().data();
    inbox_count_ = inbox_counts_.local().data();
    inbox_count_[0] = inbox_count_[1] = 0;
    bulk_list_ = bulk_inbox_.local().data();
    inbox_.emplace(claim_inbox{nullptr, inbox_list_, inbox_count_, 0});
    barrier(t);  // every inbox count zero before any rank appends
  }

  // The parents of the last search (dist::block over the vertices).
  dist_array<vertex_t, 1>& parents() noexcept { return parent_; }
  const dist_array<vertex_t, 1>& parents() const noexcept { return parent_; }
  const bfs_stats& stats() const noexcept { return stats_; }

  // Collective: one search from `root` (the same at every rank); parents() holds the tree.
  void run(vertex_t root, bfs_kind kind) {
    vertex_t* const parent = parent_.local().data();
    for (vertex_t l = 0; l < rows_; ++l) parent[l] = in_search;
    std::copy(never_.begin(), never_.end(), visited_.begin());
    std::fill(claimed_.begin(), claimed_.end(), 0);
    (*inbox_)->parent = parent;
    queue_.clear();
    stats_ = {};
    const vertex_partition& p = c_.partition;
    std::uint64_t unexplored_arcs = c_.targets.size();  // this rank's, m_u's share
    if (p.owner(root) == c_.rank) {
      const vertex_t l = root - c_.first;
      parent[l] = root;  // level 0
      visited_[static_cast<std::size_t>(l) / 64] &= ~(std::uint64_t{1} << (l % 64));
      mark_visited(l);
      queue_.push_back(static_cast<std::uint32_t>(l));
      unexplored_arcs -= c_.degree(l);
    }
    barrier(t_);  // every rank's parents reset before any claim arrives

    const double n = static_cast<double>(p.vertex_count());
    bool bottom_up = false;
    std::uint64_t previous_frontier = 1;
    for (;;) {
      // Global frontier size, its arcs (m_f) and the unexplored arcs (m_u).
      std::array<std::uint64_t, 3> mine{queue_.size(), 0, unexplored_arcs};
      if (kind == bfs_kind::diropt) {
        for (std::uint32_t l : queue_) mine[1] += c_.degree(l);
      }
      std::array<std::uint64_t, 3> sums{};
      allreduce(t_, mine, sums, op::sum);
      const std::uint64_t frontier = sums[0];
      if (frontier == 0) break;
      if (kind == bfs_kind::diropt) {
        if (!bottom_up) {
          bottom_up = static_cast<double>(sums[1]) > static_cast<double>(sums[2]) / tuning_.alpha;
        } else {
          // Back to top-down once the frontier is small and shrinking (Beamer), unless the
          // unexplored vertices have fewer arcs than the frontier: a bottom-up level then
          // checks fewer arcs than a top-down one would.
          bottom_up = !(static_cast<double>(frontier) < n / tuning_.beta &&
                        frontier < previous_frontier && sums[1] < sums[2]);
        }
      }
      previous_frontier = frontier;
      next_.clear();
      claim_level_ = static_cast<vertex_t>(stats_.levels + 1) << level_shift;
      (*inbox_)->claim_level = claim_level_;
      if (bottom_up) {
        bottom_up_level(parent);
        ++stats_.bottom_up_levels;
      } else {
        top_down_level(parent);
      }
      for (std::uint32_t l : next_) unexplored_arcs -= c_.degree(l);
      queue_.swap(next_);
      ++stats_.levels;
    }
    for (vertex_t l = 0; l < rows_; ++l) {
      parent[l] = parent[l] == in_search ? unreached : parent[l] & parent_mask;
    }
    barrier(t_);  // every rank's parents final
  }

  // Collective: the edges of the last search's component, as Graph500 counts them for TEPS
  // (each input edge between reached vertices once; self-loops, which kernel 1 drops, not).
  // A reached vertex's neighbours are all reached, so each such edge puts one arc in the row
  // of each end: half the reached rows' degrees.
  std::uint64_t traversed_edges() const {
    const vertex_t* const parent = parent_.local().data();
    std::uint64_t arcs = 0;
    for (vertex_t l = 0; l < rows_; ++l) {
      if (parent[l] != unreached) arcs += c_.degree(l);
    }
    return allreduce(t_, arcs, op::sum) / 2;
  }

  // Bytes this rank holds for the searches (parents, bitmaps, frontier queues, rpc inbox).
  std::uint64_t state_bytes() const noexcept {
    return static_cast<std::uint64_t>(rows_) * sizeof(vertex_t) +
           (never_.size() + visited_.size() + claimed_.size() + frontier_bits_.size() +
            all_frontier_bits_.size()) *
               sizeof(std::uint64_t) +
           (queue_.capacity() + next_.capacity() + inbox_words_.local().size()) *
               sizeof(std::uint32_t) +
           bulk_inbox_.local().size() * sizeof(bulk_claim);
  }

 private:
  static constexpr vertex_t in_search = std::numeric_limits<vertex_t>::max();
  // A claimed word during the search: the claim's level above the parent (scale ≤ 40).
  static constexpr int level_shift = 40;
  static constexpr vertex_t parent_mask = (vertex_t{1} << level_shift) - 1;

  // Claims `word` (unclaimed: in_search) with `value`; true when this call claimed it.
  static bool claim(vertex_t& word, vertex_t value) noexcept {
    std::atomic_ref<vertex_t> w(word);
    vertex_t expected = in_search;
    return w.load(std::memory_order_relaxed) == in_search &&
           w.compare_exchange_strong(expected, value, std::memory_order_relaxed);
  }

  // An inbox's elements: a block per rank when the claims mode uses it, else one per rank.
  static std::size_t inbox_size(const dist_csr& c, bool used) noexcept {
    const auto ranks = static_cast<std::size_t>(c.partition.ranks());
    return used ? static_cast<std::size_t>(c.partition.block()) * ranks : ranks;
  }

  // A direct claim in an owner's inbox: its row there and the claiming parent.
  struct bulk_claim {
    std::uint32_t row;
    target_t parent;
  };

  // Where remote claims (bfs_claims::rpc) land at their owner; rpc bodies run as tasks of the
  // owner's arena, concurrently with each other and with the owner's own claims.
  struct claim_inbox {
    vertex_t* parent;      // the owner's parent words
    std::uint32_t* list;   // the vertices won by remote claims this level
    std::uint64_t* count;  // entries of list (atomic_ref)
    vertex_t claim_level;  // this level's claims' level, shifted
  };
  static void claim_at_owner(dist_object<claim_inbox>& box, std::uint32_t l, vertex_t u) {
    const claim_inbox& in = *box;
    if (claim(in.parent[l], in.claim_level | u)) {
      in.list[std::atomic_ref<std::uint64_t>(*in.count).fetch_add(1, std::memory_order_relaxed)] =
          l;
    }
  }

  rank_t owner_of(vertex_t v) const noexcept {
    return block_shift_ >= 0 ? static_cast<rank_t>(v >> block_shift_) : c_.partition.owner(v);
  }
  void mark_visited(vertex_t l) noexcept {
    visited_[static_cast<std::size_t>(l) / 64] |= std::uint64_t{1} << (l % 64);
  }
  bool is_visited(vertex_t l) const noexcept {
    return ((visited_[static_cast<std::size_t>(l) / 64] >> (l % 64)) & 1U) != 0;
  }
  // v's bit in the gathered frontier bitmap (rank r's words at r · words_per_rank_).
  bool in_frontier(vertex_t v) const noexcept {
    std::uint64_t bit = static_cast<std::uint64_t>(v);
    if (!aligned_) {
      const rank_t r = owner_of(v);
      bit = static_cast<std::uint64_t>(r) * words_per_rank_ * 64 +
            static_cast<std::uint64_t>(v - c_.partition.first(r));
    }
    return ((all_frontier_bits_[bit / 64] >> (bit % 64)) & 1U) != 0;
  }

  // Claims of the frontier's arcs; local ones by compare-exchange (aggregated claims of other
  // ranks may be applied to the same words meanwhile), remote ones aggregated.
  void top_down_level(vertex_t* parent) {
    const rank_t me = c_.rank;
    const vertex_t first = c_.first;
    const std::uint64_t* const offsets = c_.offsets.data();
    const target_t* const targets = c_.targets.data();
    for (std::uint32_t l : queue_) {
      const vertex_t u = claim_level_ | (first + l);
      for (std::uint64_t i = offsets[l]; i < offsets[l + 1]; ++i) {
        const vertex_t v = targets[i];
        const rank_t o = owner_of(v);
        if (o == me) {
          // The visited bitmap (n/64 words, cached) spares most arcs the parent word (a cache
          // miss); a vertex claimed remotely in this level shows in the word only. The first
          // claim of the word wins and lists the vertex (an aggregated atomic_min of the same
          // level may still lower its parent).
          const vertex_t l_v = v - first;
          if (is_visited(l_v)) continue;
          if (claim(parent[l_v], u)) {
            mark_visited(l_v);
            next_.push_back(static_cast<std::uint32_t>(l_v));
          }
          continue;
        }
        std::uint64_t& word = claimed_[static_cast<std::size_t>(v) / 64];
        const std::uint64_t bit = std::uint64_t{1} << (v % 64);
        if ((word & bit) != 0) continue;
        word |= bit;
        const auto l_v = static_cast<std::uint32_t>(v - c_.partition.first(o));
        if (mapped_[static_cast<std::size_t>(o)] != nullptr) {
          outbox_[static_cast<std::size_t>(o)].push_back({l_v, static_cast<target_t>(first + l)});
        } else if (tuning_.claims == bfs_claims::rpc) {
          agg_.rpc_ff(o, &claim_at_owner, *inbox_, l_v, first + l);
        } else {
          agg_.atomic_min(blocks_[static_cast<std::size_t>(o)] + l_v, u);
        }
      }
    }
    // Direct claims: each owner's batch appended to its inbox; what does not fit is claimed
    // here by compare-exchange, and the owner told to scan.
    const auto capacity = static_cast<std::uint64_t>(c_.partition.block());
    for (std::size_t o = 0; o < outbox_.size(); ++o) {
      std::vector<bulk_claim>& w = outbox_[o];
      if (w.empty()) continue;
      const std::uint64_t at = std::atomic_ref<std::uint64_t>(mapped_count_[o][0])
                                   .fetch_add(w.size(), std::memory_order_relaxed);
      const std::uint64_t fit =
          at < capacity ? std::min<std::uint64_t>(w.size(), capacity - at) : 0;
      std::copy_n(w.begin(), fit, mapped_inbox_[o] + at);
      if (fit < w.size()) {
        for (std::size_t i = fit; i < w.size(); ++i) {
          claim(mapped_[o][w[i].row], claim_level_ | static_cast<vertex_t>(w[i].parent));
        }
        std::atomic_ref<std::uint64_t>(mapped_count_[o][1]).store(1, std::memory_order_relaxed);
      }
      w.clear();
    }
    if (tuning_.claims == bfs_claims::rpc) {
      quiet();  // every claim this rank sent ran at its owner
    } else {
      agg_.flush();
    }
    barrier(t_);  // every rank's claims applied: no word changes until the next level
    std::atomic_ref<std::uint64_t> count(inbox_count_[0]);
    const std::uint64_t n = count.load(std::memory_order_acquire);
    if (tuning_.claims == bfs_claims::rpc) {
      for (std::uint64_t i = 0; i < n; ++i) {
        mark_visited(inbox_list_[i]);
        next_.push_back(inbox_list_[i]);
      }
    } else {
      // The peers' batches, claimed here (a word claimed in this level already keeps its
      // first claim).
      for (std::uint64_t i = 0; i < std::min(n, capacity); ++i) {
        const bulk_claim& x = bulk_list_[i];
        if (claim(parent[x.row], claim_level_ | static_cast<vertex_t>(x.parent))) {
          mark_visited(x.row);
          next_.push_back(x.row);
        }
      }
    }
    count.store(0, std::memory_order_relaxed);  // no append before the next level's allreduce
    std::atomic_ref<std::uint64_t> overflow(inbox_count_[1]);
    const bool overflowed = overflow.load(std::memory_order_relaxed) != 0;
    overflow.store(0, std::memory_order_relaxed);
    if (!scan_ && !overflowed) return;  // every claim from elsewhere listed
    // The vertices claimed in this level: claimed words not yet visited. A block of 64 words
    // all unclaimed ANDs to in_search (all ones), skipped without looking at its bits.
    for (std::size_t w = 0; w < visited_.size(); ++w) {
      std::uint64_t todo = ~visited_[w];
      if (todo == 0) continue;
      const vertex_t base = static_cast<vertex_t>(w) * 64;
      const vertex_t end = std::min<vertex_t>(rows_, base + 64);
      vertex_t all = in_search;
      for (vertex_t l = base; l < end; ++l) all &= parent[l];
      if (all == in_search) continue;
      while (todo != 0) {
        const auto l = static_cast<std::uint32_t>(static_cast<std::size_t>(base) +
                                                  static_cast<std::size_t>(std::countr_zero(todo)));
        todo &= todo - 1;
        if (parent[l] != in_search) {
          mark_visited(l);
          next_.push_back(l);
        }
      }
    }
  }

  // Every unvisited local vertex looks for a neighbour in the gathered frontier.
  void bottom_up_level(vertex_t* parent) {
    std::fill(frontier_bits_.begin(), frontier_bits_.end(), 0);
    for (std::uint32_t l : queue_) frontier_bits_[l / 64] |= std::uint64_t{1} << (l % 64);
    allgather(t_, frontier_bits_, all_frontier_bits_);
    const std::uint64_t* const offsets = c_.offsets.data();
    const target_t* const targets = c_.targets.data();
    for (std::size_t w = 0; w < visited_.size(); ++w) {
      std::uint64_t todo = ~visited_[w];  // padding past the rows is marked visited
      while (todo != 0) {
        const auto l =
            static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(todo)));
        todo &= todo - 1;
        for (std::uint64_t i = offsets[l]; i < offsets[l + 1]; ++i) {
          if (in_frontier(targets[i])) {
            parent[l] = claim_level_ | targets[i];
            next_.push_back(l);
            break;
          }
        }
      }
    }
    // Marked after the sweep: a vertex found in this level is not a parent for this level.
    for (std::uint32_t l : next_) mark_visited(l);
  }

  const dist_csr& c_;
  const team& t_;
  bfs_tuning tuning_;
  dist_array<vertex_t, 1> parent_;
  dist_array<std::uint32_t, 1> inbox_words_;   // per rank: vertices won there by others
  dist_array<std::uint64_t, 1> inbox_counts_;  // per rank: entries of its inbox, overflow
  dist_array<bulk_claim, 1> bulk_inbox_;       // per rank: direct claims of the others
  vertex_t rows_;
  std::size_t words_per_rank_;
  bool aligned_;
  int block_shift_;
  std::vector<global_ptr<vertex_t>> blocks_;     // each rank's first parent word
  std::vector<vertex_t*> mapped_;                // blocks_ mapped here (direct claims), or null
  std::vector<bulk_claim*> mapped_inbox_;        // each rank's claims inbox mapped here, or null
  std::vector<std::uint64_t*> mapped_count_;     // each rank's [count, overflow] mapped here
  std::vector<std::vector<bulk_claim>> outbox_;  // direct claims of this level, per owner
  bulk_claim* bulk_list_ = nullptr;              // bulk_inbox_ here
  bool scan_ = false;  // some peer claims by atomic_min: its claims are found by a scan
  std::vector<std::uint64_t> never_;          // this rank's vertices without arcs, padding
  std::vector<std::uint64_t> visited_;        // this rank's vertices reached so far (and never_)
  std::vector<std::uint64_t> claimed_;        // remote vertices this rank claimed (all N)
  std::vector<std::uint64_t> frontier_bits_;  // this rank's frontier (bottom-up levels)
  std::vector<std::uint64_t> all_frontier_bits_;
  std::vector<std::uint32_t> queue_;  // this level's frontier, local indices
  std::vector<std::uint32_t> next_;
  bfs_stats stats_;
  vertex_t claim_level_ = 0;             // this level's claims' level, shifted
  std::uint32_t* inbox_list_ = nullptr;  // inbox_words_ here
  std::uint64_t* inbox_count_ = nullptr;
  std::optional<dist_object<claim_inbox>> inbox_;
  aggregator agg_;
};

}  // namespace oneside::apps::graph
