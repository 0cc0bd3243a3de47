// The PageRank mini-app: PageRank (damping 0.85 by default) on the Graph500 Kronecker graph or
// an edge-list file (graph_input.hpp), by pagerank.hpp's pull along the rows after a bulk
// exchange of ghost values; for a fixed number of iterations, or until the L1 change falls below
// --tolerance. --verify compares every rank with serial::pagerank after as many iterations
// (relative error at most 1e-9 per vertex) and prints "Solution validates".
//
//   oneside-run -n 2 pagerank --scale 18 --iterations 20
//
// Prints the construction time (kernel 1), the time per iteration (the slowest rank's) and
// arcs per second: every arc (both directions of each edge, self-loops dropped) is traversed
// once per iteration.
#include "pagerank.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "common/app_main.hpp"
#include "common/option_reader.hpp"
#include "graph_input.hpp"
#include "serial.hpp"
#include "timing.hpp"

namespace {

namespace gr = oneside::apps::graph;

struct options {
  gr::graph_options graph;
  int iterations = 20;
  double tolerance = 0.0;
  double damping = 0.85;
  bool verify = false;
  bool help = false;
};

options parse(int argc, char** argv, std::string& error) {
  options o;
  oneside::apps::option_reader in(argc, argv);
  bool iterations_given = false;
  while (in.next()) {
    if (o.graph.read(in)) continue;
    if (in.name() == "--help" || in.name() == "-h") {
      o.help = true;
    } else if (in.name() == "--iterations") {
      in.number(o.iterations, 1, 1 << 20);
      iterations_given = true;
    } else if (in.name() == "--tolerance") {
      in.real(o.tolerance, 0.0, std::numeric_limits<double>::infinity(), "[0, inf)");
    } else if (in.name() == "--damping") {
      in.real(o.damping, 0.0, 1.0, "[0, 1]");
    } else if (in.name() == "--verify") {
      o.verify = true;
    } else {
      in.fail_unknown();
    }
  }
  if (o.tolerance > 0.0 && !iterations_given) o.iterations = 100;
  error = in.error();
  return o;
}

void usage() {
  std::printf(
      "usage: pagerank [graph options] [--iterations K | --tolerance T] [--damping D] "
      "[--verify]\n"
      "  PageRank r'(v) = (1 - D)/N + D (sum over arcs u->v of r(u)/deg(u) + dangling/N)\n%s"
      "  --iterations K     iterations (default 20; with --tolerance: at most K, default 100)\n"
      "  --tolerance T      stop once the L1 change sum |r' - r| < T\n"
      "  --damping D        in [0, 1] (default 0.85)\n"
      "  --verify           compare with a serial computation (small graphs)\n",
      gr::graph_options::usage());
}

int run(int argc, char** argv) {
  const oneside::team& world = oneside::world();
  const bool root = world.rank() == 0;
  std::string error;
  const options o = parse(argc, argv, error);
  if (!error.empty()) {
    std::fprintf(stderr, "pagerank: %s\n", error.c_str());
    return 2;
  }
  if (o.help) {
    if (root) usage();
    return 0;
  }
  const gr::graph_input input(o.graph);
  std::optional<gr::dist_csr> built;
  const double construction = gr::timed(world, [&] { built.emplace(input.build(world)); });
  const gr::dist_csr& c = *built;
  gr::pagerank_solver solver(c, world);
  const gr::pagerank_result r = solver.run(o.damping, o.iterations, o.tolerance);
  const double seconds = oneside::allreduce(world, r.seconds, oneside::op::max);
  const double per_iteration = seconds / r.iterations;
  if (root) {
    std::printf("PageRank: %s, %lld vertices, %llu edges (%llu arcs), %d ranks\n",
                input.describe().c_str(), static_cast<long long>(input.vertex_count()),
                static_cast<unsigned long long>(input.edge_count()),
                static_cast<unsigned long long>(c.global_arcs), world.size());
    std::printf("damping: %g, iterations: %d, L1 change of the last: %.3e\n", o.damping,
                r.iterations, r.change);
    std::printf("construction_time: %.6f s\n", construction);
    std::printf("time per iteration: %.6f s\n", per_iteration);
    std::printf("arcs per second: %.4g\n", static_cast<double>(c.global_arcs) / per_iteration);
    std::fflush(stdout);
  }
  if (!o.verify) return 0;

  const gr::serial::csr s = input.build_serial();
  const std::vector<double> want = gr::serial::pagerank(s, o.damping, r.iterations);
  double worst = 0.0;
  gr::vertex_t worst_vertex = -1;
  for (std::size_t l = 0; l < r.rank.size(); ++l) {
    const double w = want[static_cast<std::size_t>(c.first) + l];
    const double e = std::abs(r.rank[l] - w) / w;
    if (!(e <= worst)) {
      worst = e;
      worst_vertex = c.first + static_cast<gr::vertex_t>(l);
    }
  }
  const double max_error = oneside::allreduce(world, worst, oneside::op::max);
  const bool ok = max_error <= 1e-9;
  if (!ok && worst == max_error) {
    std::fprintf(stderr, "pagerank: rank %d: vertex %lld has relative error %.3e (> 1e-9)\n",
                 world.rank(), static_cast<long long>(worst_vertex), worst);
  }
  if (root) {
    std::printf(ok ? "Solution validates (max relative error %.3e)\n"
                   : "Solution does not validate (max relative error %.3e)\n",
                max_error);
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return oneside::apps::app_main("pagerank", argc, argv, run);
}
