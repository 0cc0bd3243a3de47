// The Graph500 generator (apps/graph/kronecker.hpp) and the serial reference kernels
// (apps/graph/serial.hpp) the graph apps are tested against: the label permutation is a
// bijection, the edges follow the initiator's quadrant probabilities, the streams are pure
// functions of their counters and seeds, and each serial kernel gives the known answer on small
// hand-made graphs.
#include "graph/kronecker.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "graph/serial.hpp"

namespace oneside::apps::graph {
namespace {

TEST(Kronecker, ThePermutationIsABijectionAtEveryScale) {
  for (int scale = 1; scale <= 16; ++scale) {
    const kronecker g(scale, 16, 7);
    std::vector<char> seen(static_cast<std::size_t>(g.vertex_count()), 0);
    for (vertex_t x = 0; x < g.vertex_count(); ++x) {
      const vertex_t y = g.permute(x);
      ASSERT_GE(y, 0);
      ASSERT_LT(y, g.vertex_count());
      ASSERT_EQ(seen[static_cast<std::size_t>(y)], 0) << "scale " << scale << " x " << x;
      seen[static_cast<std::size_t>(y)] = 1;
    }
  }
}

TEST(Kronecker, EdgesAreFunctionsOfSeedAndIndex) {
  const kronecker g(12, 16, 1);
  const kronecker same(12, 16, 1);
  const kronecker other(12, 16, 2);
  int differ = 0;
  for (std::uint64_t e = 0; e < 1000; ++e) {
    EXPECT_EQ(g.edge_at(e).u, same.edge_at(e).u);
    EXPECT_EQ(g.edge_at(e).v, same.edge_at(e).v);
    EXPECT_EQ(g.weight_at(e), same.weight_at(e));
    differ += g.edge_at(e).u != other.edge_at(e).u ? 1 : 0;
  }
  EXPECT_GT(differ, 900);
  EXPECT_EQ(g.edge_count(), std::uint64_t{16} << 12);
  EXPECT_EQ(g.vertex_count(), 4096);
}

// Before permutation the top bits of (u, v) fall in quadrant (0,0), (0,1), (1,0), (1,1) with
// probabilities A, B, C, D; the permutation is a bijection, so invert it by a table.
TEST(Kronecker, TopLevelQuadrantsFollowTheInitiator) {
  const int scale = 10;
  const kronecker g(scale, 16, 3);
  std::vector<vertex_t> inverse(static_cast<std::size_t>(g.vertex_count()));
  for (vertex_t x = 0; x < g.vertex_count(); ++x)
    inverse[static_cast<std::size_t>(g.permute(x))] = x;
  double count[4] = {0, 0, 0, 0};
  const std::uint64_t m = g.edge_count();
  for (std::uint64_t e = 0; e < m; ++e) {
    const edge x = g.edge_at(e);
    const auto row = inverse[static_cast<std::size_t>(x.u)] >> (scale - 1);
    const auto col = inverse[static_cast<std::size_t>(x.v)] >> (scale - 1);
    ++count[row * 2 + col];
  }
  const double expected[4] = {kronecker::a, kronecker::b, kronecker::c,
                              1 - kronecker::a - kronecker::b - kronecker::c};
  for (int q = 0; q < 4; ++q) {
    // 16384 edges: a binomial's standard deviation is below 0.004 of the total.
    EXPECT_NEAR(count[q] / static_cast<double>(m), expected[q], 0.015) << "quadrant " << q;
  }
}

TEST(Kronecker, WeightsAndRootCandidatesStayInRange) {
  const kronecker g(9, 16, 5);
  double sum = 0;
  for (std::uint64_t e = 0; e < 10000; ++e) {
    const float w = g.weight_at(e);
    ASSERT_GE(w, 0.0F);
    ASSERT_LT(w, 1.0F);
    sum += static_cast<double>(w);
    const vertex_t r = g.root_candidate(e);
    ASSERT_GE(r, 0);
    ASSERT_LT(r, g.vertex_count());
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(IndexRange, SharesCoverTheRangeOnceWithSizesDifferingByAtMostOne) {
  for (int parts : {1, 2, 3, 7, 8}) {
    std::uint64_t next = 0;
    for (int p = 0; p < parts; ++p) {
      const index_range r = share_of(1001, parts, p);
      EXPECT_EQ(r.begin, next);
      EXPECT_LE(r.end - r.begin, 1001 / parts + 1);
      EXPECT_GE(r.end - r.begin, 1001 / parts);
      next = r.end;
    }
    EXPECT_EQ(next, 1001U);
  }
}

// A path 0 - 1 - 2 - 3 with weights 1, 1, 1, a chord 0 - 2 of weight 5, and an isolated 4 and a
// separate edge 5 - 6.
serial::csr small_graph() {
  serial::csr c;
  c.vertex_count = 7;
  const std::vector<std::vector<std::pair<vertex_t, float>>> rows = {
      {{1, 1.0F}, {2, 5.0F}},
      {{0, 1.0F}, {2, 1.0F}},
      {{1, 1.0F}, {3, 1.0F}, {0, 5.0F}},
      {{2, 1.0F}},
      {},
      {{6, 2.0F}},
      {{5, 2.0F}}};
  c.offsets.push_back(0);
  for (const auto& row : rows) {
    for (const auto& [t, w] : row) {
      c.targets.push_back(t);
      c.weights.push_back(w);
    }
    c.offsets.push_back(c.targets.size());
  }
  return c;
}

TEST(SerialKernels, GiveTheKnownAnswersOnASmallGraph) {
  const serial::csr c = small_graph();
  EXPECT_EQ(serial::bfs_levels(c, 0), (std::vector<std::int64_t>{0, 1, 1, 2, -1, -1, -1}));
  const std::vector<float> d = serial::sssp_distances(c, 0);
  EXPECT_EQ(d[2], 2.0F);  // through 1, not the chord
  EXPECT_EQ(d[3], 3.0F);
  EXPECT_TRUE(std::isinf(d[4]));
  EXPECT_EQ(serial::components(c), (std::vector<vertex_t>{0, 0, 0, 0, 4, 5, 5}));
  const std::vector<double> r = serial::pagerank(c, 0.85, 50);
  double sum = 0;
  for (double x : r) sum += x;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(r[5], r[6], 1e-15);  // symmetric pair
  EXPECT_GT(r[2], r[3]);           // 2 has three neighbours, 3 one
}

TEST(SerialKernels, TheCsrHoldsBothDirectionsOfEveryNonLoopEdge) {
  const kronecker g(8, 4, 11);
  const serial::csr c = serial::build_csr(g);
  std::uint64_t loops = 0;
  for (std::uint64_t e = 0; e < g.edge_count(); ++e) loops += g.edge_at(e).u == g.edge_at(e).v;
  EXPECT_EQ(c.targets.size(), 2 * (g.edge_count() - loops));
  // Symmetric: the multiset of arcs u → v equals that of v → u.
  std::vector<std::uint64_t> forward;
  std::vector<std::uint64_t> backward;
  for (vertex_t u = 0; u < c.vertex_count; ++u) {
    for (std::uint64_t i = c.offsets[static_cast<std::size_t>(u)];
         i < c.offsets[static_cast<std::size_t>(u) + 1]; ++i) {
      EXPECT_NE(c.targets[i], u);
      forward.push_back(static_cast<std::uint64_t>(u) << 32 |
                        static_cast<std::uint64_t>(c.targets[i]));
      backward.push_back(static_cast<std::uint64_t>(c.targets[i]) << 32 |
                         static_cast<std::uint64_t>(u));
    }
  }
  std::sort(forward.begin(), forward.end());
  std::sort(backward.begin(), backward.end());
  EXPECT_EQ(forward, backward);
}

}  // namespace
}  // namespace oneside::apps::graph
