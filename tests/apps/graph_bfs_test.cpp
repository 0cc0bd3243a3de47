// Graph500 kernel 2 (apps/graph/bfs.hpp) and its validation (apps/graph/bfs_validate.hpp) at
// every rank count: both BFS variants, with either way of claiming remote vertices, give trees
// whose levels equal the serial BFS's from several roots, on graphs whose blocks are and are not
// multiples of 64 vertices and with ranks that own no vertex; the validator accepts them (and
// another valid choice of parents), and rejects deliberately corrupted trees naming the rule and
// the vertex; the search keys and the TEPS edge counts do not depend on the rank count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "graph/bfs.hpp"
#include "graph/bfs_validate.hpp"
#include "graph/dist_graph.hpp"
#include "graph/graph500_output.hpp"
#include "graph/serial.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

namespace gr = apps::graph;
using gr::vertex_t;

class GraphBfs : public RankTest {};

// Every rank's copy of the whole parent array.
std::vector<vertex_t> all_parents(const dist_array<vertex_t, 1>& a) {
  std::vector<vertex_t> out(a.size());
  a.get(region<1>{{0}, {a.size()}}, std::span<vertex_t>(out));
  return out;
}

// Levels along the parents (-1 unreached; -2 when a chain does not reach the root).
std::vector<std::int64_t> levels_of(const std::vector<vertex_t>& parent, vertex_t root) {
  const std::size_t n = parent.size();
  std::vector<std::int64_t> level(n, -1);
  for (std::size_t v = 0; v < n; ++v) {
    if (parent[v] == -1) continue;
    std::int64_t depth = 0;
    auto x = static_cast<vertex_t>(v);
    while (x != root && depth <= static_cast<std::int64_t>(n)) {
      if (parent[static_cast<std::size_t>(x)] < 0) break;
      x = parent[static_cast<std::size_t>(x)];
      ++depth;
    }
    level[v] = x == root ? depth : -2;
  }
  return level;
}

// The TEPS edge count the serial way: non-loop input edges inside the root's component.
std::uint64_t component_edges(const gr::kronecker& g, const std::vector<std::int64_t>& level) {
  std::uint64_t n = 0;
  for (std::uint64_t e = 0; e < g.edge_count(); ++e) {
    const gr::edge x = g.edge_at(e);
    if (x.u != x.v && level[static_cast<std::size_t>(x.u)] >= 0) ++n;
  }
  return n;
}

void expect_searches_match_serial(int scale, int edgefactor, std::uint64_t seed, int keys) {
  const gr::kronecker g(scale, edgefactor, seed);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  const gr::serial::csr s = gr::serial::build_csr(g);
  const std::vector<gr::edge> edges = gr::edge_share(g, world());
  gr::bfs_validator validator(c, edges, world());
  const std::vector<vertex_t> roots = gr::select_roots(c, keys, world());
  for (const gr::bfs_claims claims :
       {gr::bfs_claims::direct, gr::bfs_claims::atomic, gr::bfs_claims::rpc}) {
    gr::bfs_tuning tuning;
    tuning.claims = claims;
    gr::bfs_solver solver(c, world(), tuning);
    for (const gr::bfs_kind kind : {gr::bfs_kind::topdown, gr::bfs_kind::diropt}) {
      for (const vertex_t root : roots) {
        solver.run(root, kind);
        const std::vector<vertex_t> parent = all_parents(solver.parents());
        EXPECT_EQ(parent[static_cast<std::size_t>(root)], root);
        const std::vector<std::int64_t> want = gr::serial::bfs_levels(s, root);
        EXPECT_EQ(levels_of(parent, root), want)
            << gr::name_of(kind) << " scale " << scale << " root " << root;
        const gr::bfs_verdict v = validator.validate(solver.parents(), root);
        EXPECT_TRUE(v.is_valid()) << gr::name_of(kind) << " root " << root << ": " << v.message();
        EXPECT_EQ(solver.traversed_edges(), component_edges(g, want));
      }
    }
  }
}

TEST_F(GraphBfs, BothVariantsMatchTheSerialLevels) {
  expect_searches_match_serial(8, 16, 5, 3);
  expect_searches_match_serial(9, 16, 6, 3);  // blocks of 171 vertices over 3 ranks
  expect_searches_match_serial(10, 16, 7, 3);
  expect_searches_match_serial(11, 16, 8, 3);
}

TEST_F(GraphBfs, SparseGraphsWithManyComponents) {
  // Edgefactor 2: many vertices unreached, the component rule exercised on valid trees.
  expect_searches_match_serial(10, 2, 11, 4);
}

TEST_F(GraphBfs, RanksWithoutVerticesSearchToo) {
  // 8 vertices over up to 8 ranks: blocks of one vertex (not a multiple of 64).
  expect_searches_match_serial(3, 16, 3, 2);
}

TEST_F(GraphBfs, DirectionOptimizingGoesBottomUp) {
  const gr::kronecker g(11, 16, 2);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  gr::bfs_solver solver(c, world());
  const std::vector<vertex_t> roots = gr::select_roots(c, 1, world());
  solver.run(roots[0], gr::bfs_kind::diropt);
  EXPECT_GT(solver.stats().bottom_up_levels, 0);
  EXPECT_LT(solver.stats().bottom_up_levels, solver.stats().levels);
  solver.run(roots[0], gr::bfs_kind::topdown);
  EXPECT_EQ(solver.stats().bottom_up_levels, 0);
}

TEST_F(GraphBfs, SearchKeysDoNotDependOnTheRankCount) {
  const gr::kronecker g(10, 16, 4);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  const gr::serial::csr s = gr::serial::build_csr(g);
  // The serial choice: the first 64 distinct candidates with an edge other than a self-loop.
  std::vector<vertex_t> want;
  for (std::uint64_t i = 0; want.size() < 64; ++i) {
    const vertex_t v = g.root_candidate(i);
    if (s.degree(v) > 0 && std::find(want.begin(), want.end(), v) == want.end()) {
      want.push_back(v);
    }
  }
  EXPECT_EQ(gr::select_roots(c, 64, world()), want);
  std::uint64_t searchable = 0;
  for (vertex_t v = 0; v < s.vertex_count; ++v) searchable += s.degree(v) > 0 ? 1U : 0U;
  EXPECT_EQ(gr::searchable_vertices(c, world()), searchable);
}

TEST_F(GraphBfs, KernelOneFromTheEdgeListBuildsTheSameRows) {
  const gr::kronecker g(10, 16, 13);
  const std::vector<gr::edge> share = gr::edge_share(g, world());
  const gr::dist_csr from_list = gr::build_dist_csr(g, share, world());
  const gr::dist_csr generated = gr::build_dist_csr(g, world());
  EXPECT_EQ(from_list.offsets, generated.offsets);
  EXPECT_EQ(from_list.targets, generated.targets);
  EXPECT_EQ(from_list.weights, generated.weights);
  EXPECT_EQ(from_list.global_arcs, generated.global_arcs);
  // A share of another size is refused (on every rank here: each drops an edge).
  const std::span<const gr::edge> short_share(share.data(), share.size() - 1);
  EXPECT_THROW((void)gr::build_dist_csr(g, short_share, world()), std::invalid_argument);
}

TEST_F(GraphBfs, StatisticsAreTheReferences) {
  // The reference's get_statistics: quartiles as means of two order statistics.
  const gr::statistics s = gr::statistics_of({4.0, 1.0, 3.0, 2.0});
  EXPECT_EQ(s.minimum, 1.0);
  EXPECT_EQ(s.first_quartile, 1.5);
  EXPECT_EQ(s.median, 2.5);
  EXPECT_EQ(s.third_quartile, 3.5);
  EXPECT_EQ(s.maximum, 4.0);
  EXPECT_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(5.0 / 3.0));
  const gr::statistics five = gr::statistics_of({5.0, 1.0, 4.0, 2.0, 3.0});
  EXPECT_EQ(five.first_quartile, 2.0);
  EXPECT_EQ(five.median, 3.0);
  EXPECT_EQ(five.third_quartile, 4.0);
  // TEPS from seconds per edge: the harmonic mean of the rates.
  const gr::kernel_result k{"bfs", {1.0, 2.0}, {10.0, 10.0}, {0.5, 0.5}};
  const gr::teps_statistics t = gr::teps_of(k);
  EXPECT_DOUBLE_EQ(t.harmonic_mean, 1.0 / 0.15);
  EXPECT_DOUBLE_EQ(t.minimum, 5.0);
  EXPECT_DOUBLE_EQ(t.maximum, 10.0);
}

TEST_F(GraphBfs, ResultsPrintInTheReferencesFormat) {
  gr::run_info r;
  r.scale = 18;
  r.edgefactor = 16;
  r.nbfs = 2;
  r.ranks = 2;
  const gr::kernel_result k{"bfs", {1.0, 2.0}, {10.0, 10.0}, {0.5, 0.5}};
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  gr::print_results(f, r, {k});
  std::rewind(f);
  std::string text;
  for (int ch = std::fgetc(f); ch != EOF; ch = std::fgetc(f)) text += static_cast<char>(ch);
  std::fclose(f);
  for (const char* line :
       {"SCALE:                          18\n", "edgefactor:                     16\n",
        "NBFS:                           2\n", "num_mpi_processes:              2\n",
        "bfs  min_time:                  1\n", "min_nedge:                      10\n",
        "bfs  max_TEPS:                  10\n", "bfs  harmonic_mean_TEPS:     !  6.66667\n",
        "bfs  mean_validate:             0.5\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in\n" << text;
  }
  EXPECT_LT(text.find("construction_time:"), text.find("bfs  min_time:"));
  EXPECT_LT(text.find("stddev_nedge:"), text.find("bfs  min_TEPS:"));
  EXPECT_LT(text.find("bfs  harmonic_stddev_TEPS:"), text.find("bfs  min_validate:"));
}

// A valid diropt tree of a scale-10 graph, and the serial facts to corrupt it with.
class CorruptedTree : public GraphBfs {
 protected:
  CorruptedTree()
      : g_(10, 16, 21),
        c_(gr::build_dist_csr(g_, world())),
        s_(gr::serial::build_csr(g_)),
        edges_(gr::edge_share(g_, world())),
        solver_(c_, world()),
        validator_(c_, edges_, world()),
        root_(gr::select_roots(c_, 1, world())[0]) {
    solver_.run(root_, gr::bfs_kind::diropt);
    parent_ = all_parents(solver_.parents());
    barrier(world());  // every rank read the parents before a test changes one
    level_ = gr::serial::bfs_levels(s_, root_);
    is_parent_.assign(parent_.size(), false);
    for (vertex_t p : parent_) {
      if (p >= 0) is_parent_[static_cast<std::size_t>(p)] = true;
    }
  }

  bool adjacent(vertex_t a, vertex_t b) const {
    for (std::uint64_t i = s_.offsets[static_cast<std::size_t>(a)];
         i < s_.offsets[static_cast<std::size_t>(a) + 1]; ++i) {
      if (s_.targets[i] == b) return true;
    }
    return false;
  }
  // The first reached leaf (nobody's parent, not the root) for which `ok(v)` holds.
  template <class Ok>
  vertex_t leaf_where(Ok ok) const {
    for (vertex_t v = 0; v < s_.vertex_count; ++v) {
      const auto i = static_cast<std::size_t>(v);
      if (v != root_ && level_[i] > 0 && !is_parent_[i] && ok(v)) return v;
    }
    ADD_FAILURE() << "no such vertex";
    return 0;
  }
  // Sets parent[v] = p (its owner writes its block), then validates.
  gr::bfs_verdict validate_with(vertex_t v, vertex_t p) {
    const gr::vertex_partition& part = c_.partition;
    if (part.owner(v) == rank()) solver_.parents().local().data()[v - c_.first] = p;
    barrier(world());
    return validator_.validate(solver_.parents(), root_);
  }

  gr::kronecker g_;
  gr::dist_csr c_;
  gr::serial::csr s_;
  std::vector<gr::edge> edges_;
  gr::bfs_solver solver_;
  gr::bfs_validator validator_;
  vertex_t root_;
  std::vector<vertex_t> parent_;
  std::vector<std::int64_t> level_;
  std::vector<bool> is_parent_;
};

TEST_F(CorruptedTree, TheUncorruptedTreeValidates) {
  EXPECT_TRUE(validator_.validate(solver_.parents(), root_).is_valid());
}

TEST_F(CorruptedTree, AnotherParentOneLevelUpStillValidates) {
  // Any neighbour one level up is a valid parent: the validator is not over-strict.
  vertex_t other = -1;
  const vertex_t v = leaf_where([&](vertex_t x) {
    for (vertex_t w = 0; w < s_.vertex_count; ++w) {
      if (w != parent_[static_cast<std::size_t>(x)] &&
          level_[static_cast<std::size_t>(w)] == level_[static_cast<std::size_t>(x)] - 1 &&
          adjacent(x, w)) {
        other = w;
        return true;
      }
    }
    return false;
  });
  const gr::bfs_verdict verdict = validate_with(v, other);
  EXPECT_TRUE(verdict.is_valid()) << verdict.message();
}

TEST_F(CorruptedTree, TheRootsParentMustBeItself) {
  const vertex_t neighbour = s_.targets[s_.offsets[static_cast<std::size_t>(root_)]];
  const gr::bfs_verdict v = validate_with(root_, neighbour);
  EXPECT_EQ(v.rule, gr::bfs_rule::root) << v.message();
  EXPECT_EQ(v.vertex, root_);
  EXPECT_NE(v.message().find("root's parent"), std::string::npos);
}

TEST_F(CorruptedTree, AParentOutOfRangeIsRejected) {
  const vertex_t leaf = leaf_where([](vertex_t) { return true; });
  gr::bfs_verdict v = validate_with(leaf, s_.vertex_count + 3);
  EXPECT_EQ(v.rule, gr::bfs_rule::parent_range) << v.message();
  EXPECT_EQ(v.vertex, leaf);
  v = validate_with(leaf, -7);
  EXPECT_EQ(v.rule, gr::bfs_rule::parent_range) << v.message();
  EXPECT_EQ(v.vertex, leaf);
}

TEST_F(CorruptedTree, AParentCycleIsRejected) {
  const vertex_t leaf = leaf_where([](vertex_t) { return true; });
  const gr::bfs_verdict v = validate_with(leaf, leaf);
  EXPECT_EQ(v.rule, gr::bfs_rule::parent_chain) << v.message();
  EXPECT_EQ(v.vertex, leaf);
}

TEST_F(CorruptedTree, AParentThatIsNotANeighbourIsRejected) {
  // A non-neighbour one level up: the levels stay right, only the tree edge is missing.
  vertex_t stranger = -1;
  const vertex_t v = leaf_where([&](vertex_t x) {
    for (vertex_t w = 0; w < s_.vertex_count; ++w) {
      if (level_[static_cast<std::size_t>(w)] == level_[static_cast<std::size_t>(x)] - 1 &&
          !adjacent(x, w)) {
        stranger = w;
        return true;
      }
    }
    return false;
  });
  const gr::bfs_verdict verdict = validate_with(v, stranger);
  EXPECT_EQ(verdict.rule, gr::bfs_rule::tree_edge) << verdict.message();
  EXPECT_EQ(verdict.vertex, v);
}

TEST_F(CorruptedTree, ALevelSkipIsRejected) {
  // A neighbour on the same level as parent: v moves one level down, two below its old parent.
  vertex_t same = -1;
  const vertex_t v = leaf_where([&](vertex_t x) {
    for (std::uint64_t i = s_.offsets[static_cast<std::size_t>(x)];
         i < s_.offsets[static_cast<std::size_t>(x) + 1]; ++i) {
      if (level_[static_cast<std::size_t>(s_.targets[i])] == level_[static_cast<std::size_t>(x)]) {
        same = s_.targets[i];
        return true;
      }
    }
    return false;
  });
  const gr::bfs_verdict verdict = validate_with(v, same);
  EXPECT_EQ(verdict.rule, gr::bfs_rule::edge_levels) << verdict.message();
  EXPECT_EQ(verdict.vertex, v);
}

TEST_F(CorruptedTree, AnUnreachedVertexInTheComponentIsRejected) {
  const vertex_t leaf = leaf_where([](vertex_t) { return true; });
  const gr::bfs_verdict v = validate_with(leaf, -1);
  EXPECT_EQ(v.rule, gr::bfs_rule::component) << v.message();
  EXPECT_EQ(v.vertex, leaf);
  EXPECT_NE(v.message().find("does not span"), std::string::npos);
}

}  // namespace
}  // namespace oneside::test
