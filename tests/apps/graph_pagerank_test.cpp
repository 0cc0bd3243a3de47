// PageRank (apps/graph/pagerank.hpp) at every rank count: the ranks equal serial::pagerank's
// for fixed iterations and several damping factors, scales and edge factors; a tolerance stops
// at the first iteration whose L1 change falls below it; edge-list graphs (graph_input.hpp)
// give the serial result too; bad arguments are rejected on every rank.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <oneside/oneside.hpp>

#include "graph/dist_graph.hpp"
#include "graph/graph_input.hpp"
#include "graph/pagerank.hpp"
#include "graph/serial.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

namespace gr = apps::graph;
using gr::vertex_t;

class GraphPagerank : public RankTest {};

void expect_ranks(const gr::dist_csr& c, const gr::pagerank_result& r,
                  const std::vector<double>& want, double tolerance) {
  ASSERT_EQ(r.rank.size(), static_cast<std::size_t>(c.local_rows()));
  double sum = 0.0;
  for (std::size_t l = 0; l < r.rank.size(); ++l) {
    const double w = want[static_cast<std::size_t>(c.first) + l];
    ASSERT_NEAR(r.rank[l], w, tolerance * w) << "vertex " << c.first + static_cast<vertex_t>(l);
    sum += r.rank[l];
  }
  EXPECT_NEAR(allreduce(world(), sum, op::sum), 1.0, 1e-9);
}

void expect_serial(int scale, int edgefactor, double damping, int iterations) {
  const gr::kronecker g(scale, edgefactor, 5);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  gr::pagerank_solver solver(c, world());
  const gr::pagerank_result r = solver.run(damping, iterations, 0.0);
  EXPECT_EQ(r.iterations, iterations);
  expect_ranks(c, r, gr::serial::pagerank(gr::serial::build_csr(g), damping, iterations), 1e-12);
}

TEST_F(GraphPagerank, EqualsTheSerialFormula) {
  expect_serial(8, 16, 0.85, 20);
  expect_serial(10, 16, 0.85, 10);
  expect_serial(9, 2, 0.5, 15);  // many vertices without arcs: dangling mass
  expect_serial(11, 4, 1.0, 5);
}

TEST_F(GraphPagerank, RanksWithoutVerticesTakePart) {
  expect_serial(2, 16, 0.85, 6);  // 4 vertices: from 5 ranks on, some own none
}

TEST_F(GraphPagerank, AToleranceStopsAtTheFirstSmallChange) {
  const gr::kronecker g(10, 16, 2);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  const gr::serial::csr s = gr::serial::build_csr(g);
  gr::pagerank_solver solver(c, world());
  const double tolerance = 1e-7;
  const gr::pagerank_result r = solver.run(0.85, 1000, tolerance);
  ASSERT_GT(r.iterations, 1);
  EXPECT_LT(r.iterations, 1000);
  EXPECT_LT(r.change, tolerance);
  const std::vector<double> last = gr::serial::pagerank(s, 0.85, r.iterations);
  const std::vector<double> before = gr::serial::pagerank(s, 0.85, r.iterations - 1);
  const std::vector<double> earlier = gr::serial::pagerank(s, 0.85, r.iterations - 2);
  double change = 0.0;
  double previous_change = 0.0;
  for (std::size_t v = 0; v < last.size(); ++v) {
    change += std::abs(last[v] - before[v]);
    previous_change += std::abs(before[v] - earlier[v]);
  }
  EXPECT_NEAR(r.change, change, 1e-12);
  EXPECT_GE(previous_change, tolerance);
  expect_ranks(c, r, last, 1e-12);
  // The solver runs again, from the start.
  const gr::pagerank_result again = solver.run(0.85, 3, 0.0);
  expect_ranks(c, again, gr::serial::pagerank(s, 0.85, 3), 1e-12);
}

TEST_F(GraphPagerank, AnEdgeListGraphEqualsTheSerialFormula) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("oneside_pagerank_" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream out(path);
    out << "# a path, a triangle and an isolated vertex (no edge names 6)\n0 1\n1 2\n2 3\n"
           "4 5\n5 7\n7 4\n\n3 3\n";
  }
  gr::graph_options o;
  o.edges = path.string();
  const gr::graph_input in(o);
  std::filesystem::remove(path);
  EXPECT_EQ(in.vertex_count(), 8);
  EXPECT_EQ(in.edge_count(), 7U);
  const gr::dist_csr c = in.build(world());
  EXPECT_EQ(c.global_arcs, 12U);
  gr::pagerank_solver solver(c, world());
  const gr::pagerank_result r = solver.run(0.85, 30, 0.0);
  expect_ranks(c, r, gr::serial::pagerank(in.build_serial(), 0.85, 30), 1e-12);
}

TEST_F(GraphPagerank, BadArgumentsAreRejectedOnEveryRank) {
  const gr::kronecker g(6, 16, 2);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  gr::pagerank_solver solver(c, world());
  for (const auto& [damping, iterations, tolerance] : std::vector<std::tuple<double, int, double>>{
           {1.5, 10, 0.0}, {-0.1, 10, 0.0}, {0.85, 0, 0.0}, {0.85, 10, -1.0}, {NAN, 10, 0.0}}) {
    try {
      (void)solver.run(damping, iterations, tolerance);
      ADD_FAILURE() << "no error for damping " << damping << ", iterations " << iterations
                    << ", tolerance " << tolerance;
    } catch (const error& e) {
      EXPECT_EQ(e.error_class(), error_class::arg);
      EXPECT_NE(std::string(e.what()).find("pagerank: damping"), std::string::npos) << e.what();
    }
  }
  const gr::pagerank_result r = solver.run(0.85, 4, 0.0);
  expect_ranks(c, r, gr::serial::pagerank(gr::serial::build_csr(g), 0.85, 4), 1e-12);
}

}  // namespace
}  // namespace oneside::test
