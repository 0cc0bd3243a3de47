// PageRank on the distributed CSR (dist_graph.hpp), serial::pagerank's formula exactly:
//   r'(v) = (1 - d)/N + d·(Σ_{u → v} r(u)/deg(u) + Σ_{deg(w) = 0} r(w)/N)
// from r = 1/N, for a fixed number of iterations or until the L1 change Σ|r' - r| falls below a
// tolerance (then at most `iterations`).
//
//   pagerank_solver solver(c, world());  // collective: ghosts and the inbox array, once
//   const pagerank_result r = solver.run(0.85, 20, 0.0);  // rank[l] is vertex c.first + l's
//
// Push with local combining: each rank sums its rows' contributions r(u)/deg(u) per
// destination in a plain vector over [local rows | ghosts] (ghosts.hpp: every arc's slot
// precomputed), so one update per ghost leaves the rank per iteration, an aggregator
// atomic_add (oneside/pgas/aggregator.hpp) into the owner's inbox word, a dist_array of 64-bit
// integers beside the rows. Aggregated atomics are on integers, so the sums travel in fixed
// point (2^-62 units: a vertex's inbox never exceeds the total rank 1, and integer sums are
// exact whatever their order); the local sums stay doubles. The graph is undirected (both arcs
// of each edge), so pushing along out-arcs is pulling along in-arcs: the same traffic as a
// pull's one value per ghost. The dangling mass (vertices without arcs) and the L1 change
// travel in one allreduce per iteration.
#pragma once

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "dist_graph.hpp"
#include "ghosts.hpp"

namespace oneside::apps::graph {

struct pagerank_result {
  std::vector<double> rank;  // per local row
  int iterations = 0;        // run
  double change = 0.0;       // the last iteration's L1 change Σ|r' - r| (every rank's)
  double seconds = 0.0;      // this rank's time in the iterations
};

class pagerank_solver {
 public:
  // Collective over `t` (the team `c` was built over).
  pagerank_solver(const dist_csr& c, const team& t)
      : c_(c),
        t_(t),
        ghosts_(c),
        slots_(ghosts_.slots(c)),
        inbox_(t, {static_cast<std::size_t>(c.partition.vertex_count())}, {dist::block},
               "pagerank.inbox"),
        ghost_ptrs_(ghost_pointers(t, c, ghosts_, inbox_)) {}

  // Collective. damping in [0, 1], iterations ≥ 1, tolerance ≥ 0 (0: run every iteration).
  // Errors (oneside::error, arg, on every rank): arguments outside those ranges.
  pagerank_result run(double damping, int iterations, double tolerance) {
    if (!(damping >= 0.0 && damping <= 1.0) || iterations < 1 || !(tolerance >= 0.0)) {
      throw error(error_class::arg, "pagerank: damping " + std::to_string(damping) +
                                        " (want [0, 1]), iterations " + std::to_string(iterations) +
                                        " (want >= 1), tolerance " + std::to_string(tolerance) +
                                        " (want >= 0)");
    }
    const auto rows = static_cast<std::size_t>(c_.local_rows());
    const auto n = static_cast<double>(c_.partition.vertex_count());
    constexpr double unit = 0x1p62;  // fixed-point units per 1.0 of rank
    pagerank_result r;
    r.rank.assign(rows, 1.0 / n);
    std::vector<double> acc(rows + ghosts_.size());
    std::int64_t* const inbox = inbox_.local().data();
    for (std::size_t l = 0; l < rows; ++l) inbox[l] = 0;
    double dangling = 0.0;
    for (std::size_t l = 0; l < rows; ++l) {
      if (c_.offsets[l + 1] == c_.offsets[l]) dangling += r.rank[l];
    }
    dangling = allreduce(t_, dangling, op::sum);  // also: every inbox is zero
    aggregator agg(options());
    const std::uint32_t* const slots = slots_.data();
    const auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; ++it) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (std::size_t l = 0; l < rows; ++l) {
        const std::uint64_t begin = c_.offsets[l];
        const std::uint64_t end = c_.offsets[l + 1];
        if (begin == end) continue;
        const double share = r.rank[l] / static_cast<double>(end - begin);
        for (std::uint64_t i = begin; i < end; ++i) acc[slots[i]] += share;
      }
      for (std::size_t g = 0; g < ghosts_.size(); ++g) {
        const double x = acc[rows + g];
        if (x != 0.0) agg.atomic_add(ghost_ptrs_[g], static_cast<std::int64_t>(x * unit + 0.5));
      }
      agg.flush();
      barrier(t_);  // every contribution is in its inbox
      const double base = (1.0 - damping) / n + damping * dangling / n;
      double sums[2] = {0.0, 0.0};  // L1 change, next dangling mass
      for (std::size_t l = 0; l < rows; ++l) {
        const double in = acc[l] + static_cast<double>(inbox[l]) / unit;
        inbox[l] = 0;
        const double next = base + damping * in;
        sums[0] += std::abs(next - r.rank[l]);
        if (c_.offsets[l + 1] == c_.offsets[l]) sums[1] += next;
        r.rank[l] = next;
      }
      double totals[2] = {0.0, 0.0};
      allreduce(t_, sums, totals, op::sum);  // also: nobody adds to an inbox before it is zero
      dangling = totals[1];
      r.change = totals[0];
      r.iterations = it + 1;
      if (tolerance > 0.0 && r.change < tolerance) break;
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }

  const ghost_set& ghosts() const noexcept { return ghosts_; }

 private:
  static aggregator_options options() {
    aggregator_options o;
    o.apply_at_origin = true;
    return o;
  }

  const dist_csr& c_;
  const team& t_;
  ghost_set ghosts_;
  std::vector<std::uint32_t> slots_;
  dist_array<std::int64_t, 1> inbox_;
  std::vector<global_ptr<std::int64_t>> ghost_ptrs_;
};

}  // namespace oneside::apps::graph
