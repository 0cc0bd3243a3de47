// Connected components on the distributed CSR (dist_graph.hpp): each vertex labelled with the
// smallest vertex of its component, as serial::components labels them.
//
//   cc_solver solver(c, world());         // collective: ghosts and the label array, once
//   const cc_result r = solver.run();     // label[l] is vertex c.first + l's
//
// Local union-find, then label propagation between the ranks' pieces. Each rank first joins
// its rows along the arcs between its own vertices (union-find, union by the smaller vertex,
// path halving) the way Afforest does (Sutton, Ben-Nun, Barak, IPDPS'18): each row is linked
// to its first two local neighbours, the most frequent root among 1024 sampled rows is taken
// as the rank's large piece, and only rows outside it link along their other local arcs (an
// arc between the large piece and another row is linked from the other row's side, as the
// local arcs are kept in both directions). So each piece of a component inside one rank has
// one label, its smallest vertex, and most local arcs are never looked at. A round then sends each
// ghost the smallest label of the pieces with an arc to it, all of an owner's ghosts in one rput (a
// ghost_exchange push, ghosts.hpp: a remote min, combined before it travels); each owner lowers a
// piece's label to the smallest its vertices received, and an allreduce ends the run when no label
// dropped. Labels only decrease, towards the smallest vertex of the component; Kronecker graphs
// have a small diameter, so there are few rounds (4 at scale 18 on 2 ranks).
//
// Why not Shiloach–Vishkin or Afforest across ranks: their pointer jumping reads remote parent
// chains a hop at a time (a round trip per hop, or a collective per jump round), while
// propagation only pushes minima, which combine; inside a rank union-find is what those
// algorithms approximate. (Measured at scale 18 on 2 ranks: the first cross-rank version sent
// one aggregator atomic_min per changed (ghost, piece) pair, 150 000 a rank, which took longer
// than the union-find and the pairs together; the bulk push is a copy per round.)
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <oneside/oneside.hpp>

#include "dist_graph.hpp"
#include "ghosts.hpp"
#include "serial.hpp"

namespace oneside::apps::graph {

struct cc_result {
  std::vector<vertex_t> label;    // per local row: the smallest vertex of its component
  int rounds = 0;                 // flush/barrier/allreduce rounds
  std::uint64_t values_sent = 0;  // labels this rank sent to ghosts' owners
  double seconds = 0.0;           // this rank's time
  double local_seconds = 0.0;     // of it, in the local union-find and the leaving pairs
};

class cc_solver {
 public:
  // Collective over `t` (the team `c` was built over). Splits the rows' arcs once into those
  // to other local rows and those to ghosts (ghosts.hpp), the two lists the runs walk, without
  // duplicate edges: graph preprocessing, 4 bytes per arc.
  cc_solver(const dist_csr& c, const team& t) : c_(c), t_(t), ghosts_(c), exchange_(t, c, ghosts_) {
    const auto rows = static_cast<std::size_t>(c.local_rows());
    const std::vector<std::uint32_t> slots = ghosts_.slots(c);
    local_offsets_.assign(rows + 1, 0);
    cross_offsets_.assign(rows + 1, 0);
    for (std::size_t l = 0; l < rows; ++l) {
      for (std::uint64_t i = c.offsets[l]; i < c.offsets[l + 1]; ++i) {
        const std::uint32_t s = slots[i];
        if (s >= rows) {
          cross_targets_.push_back(static_cast<std::uint32_t>(s - rows));
        } else if (s != l) {
          local_targets_.push_back(s);
        }
      }
      // Duplicate edges (the Kronecker list keeps them) add nothing to either walk.
      auto unique_since = [](std::vector<std::uint32_t>& v, std::size_t from) {
        const auto begin = v.begin() + static_cast<std::ptrdiff_t>(from);
        std::sort(begin, v.end());
        v.erase(std::unique(begin, v.end()), v.end());
      };
      unique_since(local_targets_, local_offsets_[l]);
      unique_since(cross_targets_, cross_offsets_[l]);
      local_offsets_[l + 1] = local_targets_.size();
      cross_offsets_[l + 1] = cross_targets_.size();
    }
  }

  // Collective.
  cc_result run() {
    const auto rows = static_cast<std::size_t>(c_.local_rows());
    cc_result r;
    const auto start = std::chrono::steady_clock::now();
    // Union-find over the local arcs: piece[l] becomes the smallest local row of l's piece.
    std::vector<std::uint32_t>& piece = piece_;
    piece.resize(rows);
    for (std::size_t l = 0; l < rows; ++l) piece[l] = static_cast<std::uint32_t>(l);
    auto find = [&](std::uint32_t x) {
      while (piece[x] != x) {
        piece[x] = piece[piece[x]];
        x = piece[x];
      }
      return x;
    };
    auto link = [&](std::uint32_t x, std::uint32_t y) {
      const std::uint32_t a = find(x);
      const std::uint32_t b = find(y);
      if (a != b) piece[std::max(a, b)] = std::min(a, b);
    };
    // A parent is smaller than its child, so in row order the parent's entry is final first.
    auto compress = [&] {
      for (std::size_t l = 0; l < rows; ++l) piece[l] = piece[piece[l]];
    };
    constexpr std::uint64_t sampled = 2;  // neighbours linked before the large piece is chosen
    for (std::uint64_t k = 0; k < sampled; ++k) {
      for (std::size_t l = 0; l < rows; ++l) {
        const std::uint64_t i = local_offsets_[l] + k;
        if (i < local_offsets_[l + 1]) link(static_cast<std::uint32_t>(l), local_targets_[i]);
      }
    }
    compress();
    // The most frequent root of a sample: the large piece's, with high probability (any
    // answer is correct, a wrong one only slower).
    const std::uint32_t large = piece.empty() ? 0 : serial::most_frequent_sample(piece);
    for (std::size_t l = 0; l < rows; ++l) {
      if (piece[l] == large) continue;
      for (std::uint64_t i = local_offsets_[l] + sampled; i < local_offsets_[l + 1]; ++i) {
        link(static_cast<std::uint32_t>(l), local_targets_[i]);
      }
    }
    // piece[l]: its root, the piece's smallest row.
    compress();
    // The (root, ghost) pairs of the arcs leaving the rank, without repeating the pair of the
    // ghost's previous arc: mostly one pair per ghost and piece, so a piece's label reaches a
    // ghost about once.
    // The large piece's ghosts are marked in a bitmap (cache-resident) and paired once each.
    std::vector<std::uint32_t> previous(ghosts_.size(), std::numeric_limits<std::uint32_t>::max());
    std::vector<std::uint64_t> near_large((ghosts_.size() + 63) / 64, 0);
    pair_ghost_.clear();
    pair_root_.clear();
    for (std::size_t l = 0; l < rows; ++l) {
      const std::uint32_t root = piece[l];
      if (root == large) {
        for (std::uint64_t i = cross_offsets_[l]; i < cross_offsets_[l + 1]; ++i) {
          const std::uint32_t g = cross_targets_[i];
          near_large[g / 64] |= std::uint64_t{1} << (g % 64);
        }
        continue;
      }
      for (std::uint64_t i = cross_offsets_[l]; i < cross_offsets_[l + 1]; ++i) {
        const std::uint32_t g = cross_targets_[i];
        if (previous[g] == root) continue;
        previous[g] = root;
        pair_ghost_.push_back(g);
        pair_root_.push_back(root);
      }
    }
    for (std::size_t w = 0; w < near_large.size(); ++w) {
      for (std::uint64_t bits = near_large[w]; bits != 0; bits &= bits - 1) {
        pair_ghost_.push_back(static_cast<std::uint32_t>(w * 64) +
                              static_cast<std::uint32_t>(std::countr_zero(bits)));
        pair_root_.push_back(large);
      }
    }
    // Each piece's label, at its root.
    std::vector<std::int64_t> label(rows);
    for (std::size_t l = 0; l < rows; ++l) label[l] = c_.first + static_cast<vertex_t>(piece[l]);
    r.local_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<std::int64_t> ghost_min(ghosts_.size());
    for (;;) {
      std::fill(ghost_min.begin(), ghost_min.end(), std::numeric_limits<std::int64_t>::max());
      for (std::size_t k = 0; k < pair_ghost_.size(); ++k) {
        std::int64_t& m = ghost_min[pair_ghost_[k]];
        m = std::min(m, label[pair_root_[k]]);
      }
      std::uint64_t dropped = 0;
      exchange_.push(ghost_min.data(), [&](std::uint32_t row, std::int64_t v) {
        std::int64_t& mine = label[piece[row]];
        if (v < mine) {
          mine = v;
          ++dropped;
        }
      });
      r.values_sent += ghost_min.size();
      ++r.rounds;
      if (allreduce(t_, dropped, op::sum) == 0) break;
    }
    r.label.resize(rows);
    for (std::size_t l = 0; l < rows; ++l) r.label[l] = label[piece[l]];
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }

 private:
  const dist_csr& c_;
  const team& t_;
  ghost_set ghosts_;
  ghost_exchange<std::int64_t> exchange_;
  std::vector<std::uint64_t> local_offsets_;  // per row: its arcs to later local rows
  std::vector<std::uint32_t> local_targets_;
  std::vector<std::uint64_t> cross_offsets_;  // per row: its arcs to ghosts
  std::vector<std::uint32_t> cross_targets_;
  std::vector<std::uint32_t> piece_;       // per row: its piece's root
  std::vector<std::uint32_t> pair_ghost_;  // the arcs leaving the rank as (ghost, source's
  std::vector<std::uint32_t> pair_root_;   // root) pairs, repeats mostly dropped
};

}  // namespace oneside::apps::graph
