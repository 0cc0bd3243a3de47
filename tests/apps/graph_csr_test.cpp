// Kernel 1 of the graph apps (apps/graph/dist_graph.hpp) at every rank count: each rank's rows
// are exactly the serial build's rows of its vertices (same neighbours, same weights, same
// order), so the generator's output does not depend on how many ranks generate it; blocks
// follow dist::block (a dist_array of N elements holds one value per vertex beside its rows),
// including ranks that own no vertex.
#include <cstdint>
#include <vector>

#include <oneside/oneside.hpp>

#include "graph/dist_graph.hpp"
#include "graph/serial.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

using apps::graph::vertex_t;

class GraphCsr : public RankTest {};

void expect_rows_match_serial(int scale, int edgefactor, std::uint64_t seed) {
  const rank_t me = world().rank();
  const apps::graph::kronecker g(scale, edgefactor, seed);
  const apps::graph::dist_csr c = apps::graph::build_dist_csr(g, world());
  const apps::graph::serial::csr s = apps::graph::serial::build_csr(g);
  EXPECT_EQ(c.global_arcs, s.targets.size());
  EXPECT_EQ(c.first, c.partition.first(me));
  ASSERT_EQ(c.local_rows(), c.partition.size(me));
  for (vertex_t l = 0; l < c.local_rows(); ++l) {
    const vertex_t v = c.first + l;
    const auto begin = static_cast<std::ptrdiff_t>(s.offsets[static_cast<std::size_t>(v)]);
    const auto end = static_cast<std::ptrdiff_t>(s.offsets[static_cast<std::size_t>(v) + 1]);
    const std::vector<vertex_t> want(s.targets.begin() + begin, s.targets.begin() + end);
    const std::vector<float> want_w(s.weights.begin() + begin, s.weights.begin() + end);
    const auto got = c.neighbours(l);
    const auto got_w = c.neighbour_weights(l);
    ASSERT_EQ(std::vector<vertex_t>(got.begin(), got.end()), want) << "vertex " << v;
    ASSERT_EQ(std::vector<float>(got_w.begin(), got_w.end()), want_w) << "vertex " << v;
  }
}

TEST_F(GraphCsr, RowsEqualTheSerialBuild) {
  expect_rows_match_serial(10, 16, 1);
}

TEST_F(GraphCsr, AnOddScaleSplitsUnevenly) {
  expect_rows_match_serial(9, 8, 42);
}

TEST_F(GraphCsr, RanksWithoutVerticesHaveNoRows) {
  // 4 vertices over up to 8 ranks: blocks of ceil(4/P), the last ranks empty.
  expect_rows_match_serial(2, 16, 3);
}

TEST_F(GraphCsr, TheBlocksAreThoseOfADistArray) {
  const apps::graph::kronecker g(7, 16, 9);
  const apps::graph::dist_csr c = apps::graph::build_dist_csr(g, world());
  dist_array<std::int64_t, 1> a(world(), {static_cast<std::size_t>(g.vertex_count())},
                                {dist::block}, "parents");
  ASSERT_EQ(static_cast<vertex_t>(a.local().size()), c.local_rows());
  for (vertex_t l = 0; l < c.local_rows(); ++l) {
    EXPECT_EQ(c.partition.owner(c.first + l), rank());
    EXPECT_EQ(c.partition.local(c.first + l), l);
    EXPECT_TRUE(a.owns({static_cast<std::size_t>(c.first + l)}));
    EXPECT_EQ(a.global_index({static_cast<std::size_t>(l)})[0],
              static_cast<std::size_t>(c.first + l));
  }
}

}  // namespace
}  // namespace oneside::test
