// Connected components (apps/graph/cc.hpp) at every rank count: labels equal serial::components
// (the smallest vertex of each component) on Kronecker graphs of several scales and edge
// factors (edge factor 1 and 2: many components), on an edge-list graph with known components
// (graph_input.hpp), and again when the solver runs twice; edge-list files that cannot be read
// are rejected naming the file and line.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include <oneside/oneside.hpp>

#include "graph/cc.hpp"
#include "graph/dist_graph.hpp"
#include "graph/graph_input.hpp"
#include "graph/serial.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

namespace gr = apps::graph;
using gr::vertex_t;

class GraphCc : public RankTest {};

void expect_labels(const gr::dist_csr& c, const gr::cc_result& r,
                   const std::vector<vertex_t>& want) {
  ASSERT_EQ(r.label.size(), static_cast<std::size_t>(c.local_rows()));
  for (std::size_t l = 0; l < r.label.size(); ++l) {
    ASSERT_EQ(r.label[l], want[static_cast<std::size_t>(c.first) + l])
        << "vertex " << c.first + static_cast<vertex_t>(l);
  }
}

void expect_union_find(int scale, int edgefactor, std::uint64_t seed) {
  const gr::kronecker g(scale, edgefactor, seed);
  const gr::dist_csr c = gr::build_dist_csr(g, world());
  gr::cc_solver solver(c, world());
  const std::vector<vertex_t> want = gr::serial::components(gr::serial::build_csr(g));
  const gr::cc_result r = solver.run();
  expect_labels(c, r, want);
  EXPECT_GE(r.rounds, 1);
  if (world().size() == 1) {
    EXPECT_EQ(r.values_sent, 0U);
  }
  const gr::cc_result again = solver.run();
  expect_labels(c, again, want);
}

TEST_F(GraphCc, LabelsEqualUnionFind) {
  expect_union_find(8, 16, 1);
  expect_union_find(10, 16, 4);
  expect_union_find(11, 2, 9);
}

TEST_F(GraphCc, RanksWithoutVerticesTakePart) {
  expect_union_find(2, 16, 3);  // 4 vertices: from 5 ranks on, some own none
}

TEST_F(GraphCc, ManyComponentsAtEdgeFactorOne) {
  const gr::kronecker g(10, 1, 3);
  const std::vector<vertex_t> want = gr::serial::components(gr::serial::build_csr(g));
  std::size_t nontrivial = 0;
  std::vector<int> members(want.size(), 0);
  for (const vertex_t l : want) ++members[static_cast<std::size_t>(l)];
  for (const int m : members) nontrivial += m > 1 ? 1 : 0;
  ASSERT_GT(nontrivial, 5U);  // the case is worth testing (8 components of 2+ vertices)
  expect_union_find(10, 1, 3);
}

std::filesystem::path write_file(const std::string& tag, const std::string& text) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("oneside_cc_" + tag + "_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(path) << text;
  return path;
}

TEST_F(GraphCc, AnEdgeListGraphHasItsComponents) {
  const auto path = write_file("ok",
                               "# components {0}, {1, 2, 4}, {3, 5, 9, 10}, {6}, {7, 8}\n"
                               "1 2\n5 3\n3 9\n2 4\n10 9 trailing text\n\n7 8\n6 6\n5 3\n");
  gr::graph_options o;
  o.edges = path.string();
  const gr::graph_input in(o);
  std::filesystem::remove(path);
  ASSERT_EQ(in.vertex_count(), 11);
  const gr::dist_csr c = in.build(world());
  EXPECT_EQ(c.global_arcs, 14U);  // 8 edges, one a self-loop
  gr::cc_solver solver(c, world());
  expect_labels(c, solver.run(), {0, 1, 1, 3, 1, 3, 6, 7, 7, 3, 3});
}

TEST_F(GraphCc, UnreadableEdgeListsNameTheFileAndLine) {
  const auto bad = write_file("bad", "0 1\n# fine\n1 -2\n");
  gr::graph_options o;
  o.edges = bad.string();
  try {
    const gr::graph_input in(o);
    ADD_FAILURE() << "no error for " << bad;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'" + bad.string() + "' line 3: expected two vertex"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(bad);
  const auto empty = write_file("empty", "# nothing\n\n");
  o.edges = empty.string();
  EXPECT_THROW({ const gr::graph_input in(o); }, std::runtime_error);
  std::filesystem::remove(empty);
  o.edges = "/nonexistent/oneside_edges.txt";
  try {
    const gr::graph_input in(o);
    ADD_FAILURE() << "no error for a missing file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open edge list '/nonexistent/oneside_edges.txt'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace oneside::test
