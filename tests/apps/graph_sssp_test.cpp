// Kernel 3 of the graph apps (apps/graph/sssp.hpp, sssp_validate.hpp) at every rank count:
// delta-stepping's distances equal Dijkstra's (serial::sssp_distances) for several roots,
// deltas and scales, its parents form a tree the Graph500 validation accepts, and the
// validation rejects deliberately corrupted results naming the rule and the vertex.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "graph/dist_graph.hpp"
#include "graph/serial.hpp"
#include "graph/sssp.hpp"
#include "graph/sssp_validate.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

namespace gr = apps::graph;
using gr::vertex_t;

class GraphSssp : public RankTest {};

// The first `count` distinct root candidates of degree ≥ 1 (the apps' search keys).
std::vector<vertex_t> roots_of(const gr::kronecker& g, const gr::serial::csr& s,
                               std::size_t count) {
  std::vector<vertex_t> roots;
  for (std::uint64_t i = 0; roots.size() < count && i < 1000; ++i) {
    const vertex_t r = g.root_candidate(i);
    if (s.degree(r) > 0 && std::find(roots.begin(), roots.end(), r) == roots.end()) {
      roots.push_back(r);
    }
  }
  return roots;
}

// The input edges (self-loops dropped, duplicates counted) with both ends reached.
std::uint64_t reached_edges(const gr::serial::csr& s, const std::vector<float>& dist) {
  std::uint64_t n = 0;
  for (vertex_t u = 0; u < s.vertex_count; ++u) {
    for (std::uint64_t i = s.offsets[static_cast<std::size_t>(u)];
         i < s.offsets[static_cast<std::size_t>(u) + 1]; ++i) {
      const vertex_t v = s.targets[i];
      if (u < v && std::isfinite(dist[static_cast<std::size_t>(u)])) ++n;
    }
  }
  return n;
}

void expect_dijkstra(int scale, std::uint64_t seed, const std::vector<float>& deltas,
                     gr::sssp_updates updates) {
  const gr::kronecker g(scale, 16, seed);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  const gr::serial::csr s = gr::serial::build_csr(g);
  gr::delta_stepping solver(c, world(), gr::delta_stepping::default_options(), updates);
  for (const vertex_t root : roots_of(g, s, 3)) {
    const std::vector<float> want = gr::serial::sssp_distances(s, root);
    for (const float delta : deltas) {
      const gr::sssp_result r = solver.run(root, delta);
      ASSERT_EQ(r.distance.size(), static_cast<std::size_t>(c.local_rows()));
      for (vertex_t l = 0; l < c.local_rows(); ++l) {
        const float w = want[static_cast<std::size_t>(c.first + l)];
        const float got = r.distance[static_cast<std::size_t>(l)];
        if (std::isinf(w)) {
          ASSERT_TRUE(std::isinf(got)) << "vertex " << c.first + l << " root " << root;
          ASSERT_EQ(r.parent[static_cast<std::size_t>(l)], -1);
        } else {
          ASSERT_NEAR(got, w, 1e-5F * std::max(1.0F, w))
              << "vertex " << c.first + l << " root " << root << " delta " << delta;
        }
      }
      const gr::sssp_verdict v = gr::validate_sssp(c, root, r);
      EXPECT_TRUE(v.is_valid()) << v.message() << " (root " << root << ", delta " << delta << ")";
      EXPECT_EQ(v.edges, reached_edges(s, want));
      EXPECT_GT(solver.stats().phases, 0U);
    }
  }
}

TEST_F(GraphSssp, DistancesEqualDijkstraAtScale8) {
  expect_dijkstra(8, 1, {0.05F, 0.1F, 0.5F, 4.0F}, gr::sssp_updates::direct);
}
TEST_F(GraphSssp, DistancesEqualDijkstraAtScale9) {
  expect_dijkstra(9, 7, {0.1F, 0.25F}, gr::sssp_updates::direct);
}
TEST_F(GraphSssp, DistancesEqualDijkstraAtScale11) {
  expect_dijkstra(11, 3, {0.02F, 0.1F}, gr::sssp_updates::direct);
}
// Every remote relaxation through the aggregator, node peers' too.
TEST_F(GraphSssp, AggregatedUpdatesEqualDijkstraAtScale9) {
  expect_dijkstra(9, 7, {0.1F, 0.25F}, gr::sssp_updates::aggregated);
}

TEST_F(GraphSssp, RanksWithoutVerticesTakePart) {
  // 4 vertices: from 5 ranks on, some own none
  expect_dijkstra(2, 3, {0.1F, 1.0F}, gr::sssp_updates::direct);
}

TEST_F(GraphSssp, TheFreeFunctionRunsOneSolve) {
  const gr::kronecker g(10, 16, 5);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  const gr::serial::csr s = gr::serial::build_csr(g);
  const vertex_t root = roots_of(g, s, 1).at(0);
  const gr::sssp_result r = gr::sssp(c, root, 0.1F);
  EXPECT_TRUE(gr::validate_sssp(c, root, r).is_valid());
  if (c.partition.owner(root) == rank()) {
    EXPECT_EQ(r.distance[static_cast<std::size_t>(root - c.first)], 0.0F);
    EXPECT_EQ(r.parent[static_cast<std::size_t>(root - c.first)], root);
  }
}

TEST_F(GraphSssp, BadArgumentsAreRejectedOnEveryRank) {
  const gr::kronecker g(6, 16, 2);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  gr::delta_stepping solver(c, world());
  auto expect_arg = [](auto call, const std::string& what) {
    try {
      call();
      ADD_FAILURE() << "no error for " << what;
    } catch (const error& e) {
      EXPECT_EQ(e.error_class(), error_class::arg);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_arg([&] { (void)solver.run(64, 0.1F); }, "root 64 is outside [0, 64)");
  expect_arg([&] { (void)solver.run(-1, 0.1F); }, "root -1 is outside");
  expect_arg([&] { (void)solver.run(0, 0.0F); }, "is not a positive finite number");
  expect_arg([&] { (void)solver.run(0, std::numeric_limits<float>::infinity()); },
             "is not a positive finite number");
  gr::sssp_result short_result;
  expect_arg([&] { (void)gr::validate_sssp(c, 0, short_result); }, "parents for");
  // The solver still works after the rejected calls.
  const gr::sssp_result r = solver.run(g.root_candidate(0), 0.2F);
  EXPECT_TRUE(gr::validate_sssp(c, g.root_candidate(0), r).is_valid());
}

// A correct result of every vertex on every rank (to corrupt the same way everywhere).
struct full_result {
  std::vector<float> distance;
  std::vector<vertex_t> parent;
};

class GraphSsspValidation : public RankTest {
 protected:
  void SetUp() override {
    RankTest::SetUp();
    const vertex_t n = g_.vertex_count();
    root_ = roots_of(g_, s_, 1).at(0);
    const gr::sssp_result r = gr::sssp(c_, root_, 0.1F);
    std::vector<count_t> counts(static_cast<std::size_t>(size()));
    std::vector<count_t> displs(static_cast<std::size_t>(size()));
    for (int p = 0; p < size(); ++p) {
      counts[static_cast<std::size_t>(p)] = static_cast<count_t>(c_.partition.size(p));
      displs[static_cast<std::size_t>(p)] = static_cast<count_t>(c_.partition.first(p));
    }
    full_.distance.resize(static_cast<std::size_t>(n));
    full_.parent.resize(static_cast<std::size_t>(n));
    allgatherv(world(), r.distance, full_.distance, counts, displs);
    allgatherv(world(), r.parent, full_.parent, counts, displs);
    ASSERT_TRUE(gr::validate_sssp(c_, root_, local(full_)).is_valid());
    for (vertex_t v = 0; v < n; ++v) {
      const vertex_t p = full_.parent[static_cast<std::size_t>(v)];
      if (p >= 0 && p != v) ++children_[static_cast<std::size_t>(p)];
    }
  }

  gr::sssp_result local(const full_result& f) const {
    gr::sssp_result r;
    const auto b = static_cast<std::ptrdiff_t>(c_.first);
    const auto e = b + static_cast<std::ptrdiff_t>(c_.local_rows());
    r.distance.assign(f.distance.begin() + b, f.distance.begin() + e);
    r.parent.assign(f.parent.begin() + b, f.parent.begin() + e);
    return r;
  }

  // The smallest reached vertex, not the root, that is nobody's parent and satisfies `pred`.
  template <class Pred>
  vertex_t leaf(Pred pred) const {
    for (vertex_t v = 0; v < g_.vertex_count(); ++v) {
      if (v != root_ && full_.parent[static_cast<std::size_t>(v)] >= 0 &&
          children_[static_cast<std::size_t>(v)] == 0 && pred(v)) {
        return v;
      }
    }
    return -1;
  }

  void expect_rejected(const full_result& f, gr::sssp_rule rule, vertex_t vertex) {
    const gr::sssp_verdict v = gr::validate_sssp(c_, root_, local(f));
    EXPECT_EQ(v.rule, rule) << v.message();
    EXPECT_EQ(v.vertex, vertex) << v.message();
    EXPECT_NE(v.message().find(std::string("rule ") + gr::sssp_rule_name(rule)), std::string::npos);
    EXPECT_NE(v.message().find(std::to_string(vertex)), std::string::npos);
  }

  gr::kronecker g_{9, 16, 11};
  gr::dist_csr c_ = gr::build_dist_csr(g_, world());
  gr::serial::csr s_ = gr::serial::build_csr(g_);
  vertex_t root_ = 0;
  full_result full_;
  std::vector<int> children_ = std::vector<int>(static_cast<std::size_t>(g_.vertex_count()), 0);
};

TEST_F(GraphSsspValidation, AWrongRootDistanceFailsTheRootRule) {
  full_result f = full_;
  f.distance[static_cast<std::size_t>(root_)] = 0.25F;
  expect_rejected(f, gr::sssp_rule::root, root_);
  f = full_;
  f.parent[static_cast<std::size_t>(root_)] = (root_ + 1) % g_.vertex_count();
  expect_rejected(f, gr::sssp_rule::root, root_);
}

TEST_F(GraphSsspValidation, ADistanceTooSmallFailsTheTreeEdgeRule) {
  const vertex_t v = leaf([](vertex_t) { return true; });
  ASSERT_GE(v, 0);
  full_result f = full_;
  f.distance[static_cast<std::size_t>(v)] *= 0.5F;
  expect_rejected(f, gr::sssp_rule::tree_edge, v);
}

TEST_F(GraphSsspValidation, AnEdgeThatCanStillRelaxFailsTheRelaxableRule) {
  // A leaf given another neighbour as parent, with the distance through it (longer): the tree
  // edge is right, but the edge from its true parent still relaxes it.
  vertex_t other = -1;
  float longer = 0.0F;
  const vertex_t v = leaf([&](vertex_t x) {
    const float d = full_.distance[static_cast<std::size_t>(x)];
    for (std::uint64_t i = s_.offsets[static_cast<std::size_t>(x)];
         i < s_.offsets[static_cast<std::size_t>(x) + 1]; ++i) {
      const vertex_t y = s_.targets[i];
      const float dy = full_.distance[static_cast<std::size_t>(y)] + s_.weights[i];
      if (y != x && std::isfinite(dy) && dy > d && children_[static_cast<std::size_t>(x)] == 0) {
        other = y;
        longer = dy;
        return true;
      }
    }
    return false;
  });
  ASSERT_GE(v, 0);
  full_result f = full_;
  f.parent[static_cast<std::size_t>(v)] = other;
  f.distance[static_cast<std::size_t>(v)] = longer;
  expect_rejected(f, gr::sssp_rule::relaxable, v);
}

TEST_F(GraphSsspValidation, ATreeEdgeThatDoesNotExistFailsTheTreeEdgeRule) {
  // A leaf whose parent becomes a reached vertex it has no edge to (distance kept).
  vertex_t stranger = -1;
  const vertex_t v = leaf([&](vertex_t x) {
    for (vertex_t y = 0; y < s_.vertex_count; ++y) {
      const auto b =
          s_.targets.begin() + static_cast<std::ptrdiff_t>(s_.offsets[static_cast<std::size_t>(x)]);
      const auto e = s_.targets.begin() +
                     static_cast<std::ptrdiff_t>(s_.offsets[static_cast<std::size_t>(x) + 1]);
      if (y != x && full_.parent[static_cast<std::size_t>(y)] >= 0 && std::find(b, e, y) == e) {
        stranger = y;
        return true;
      }
    }
    return false;
  });
  ASSERT_GE(v, 0);
  full_result f = full_;
  f.parent[static_cast<std::size_t>(v)] = stranger;
  expect_rejected(f, gr::sssp_rule::tree_edge, v);
}

TEST_F(GraphSsspValidation, AnUnreachedVertexOfTheComponentFailsTheComponentRule) {
  const vertex_t v = leaf([](vertex_t) { return true; });
  ASSERT_GE(v, 0);
  full_result f = full_;
  f.parent[static_cast<std::size_t>(v)] = -1;
  f.distance[static_cast<std::size_t>(v)] = std::numeric_limits<float>::infinity();
  expect_rejected(f, gr::sssp_rule::component, v);
}

TEST_F(GraphSsspValidation, InconsistentValuesFailTheRangeRule) {
  const vertex_t v = leaf([](vertex_t) { return true; });
  ASSERT_GE(v, 0);
  full_result f = full_;
  f.distance[static_cast<std::size_t>(v)] = std::numeric_limits<float>::infinity();
  expect_rejected(f, gr::sssp_rule::range, v);
  f = full_;
  f.parent[static_cast<std::size_t>(v)] = g_.vertex_count();
  expect_rejected(f, gr::sssp_rule::range, v);
  f = full_;
  f.distance[static_cast<std::size_t>(v)] = -0.5F;
  expect_rejected(f, gr::sssp_rule::range, v);
}

}  // namespace
}  // namespace oneside::test
