// The connected-components mini-app: each vertex of the Graph500 Kronecker graph or of an
// edge-list file (graph_input.hpp) labelled with the smallest vertex of its component, by
// cc.hpp's union-find within ranks and label propagation between them. --verify compares every
// label with serial::components (union-find) and prints "Solution validates".
//
//   oneside-run -n 2 cc --scale 18
//
// Prints the construction time (kernel 1), the time (the slowest rank's), the rounds and the
// number of components (vertices that are their own label, isolated vertices included, and
// those of more than one vertex).
#include "cc.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
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
  int repeat = 1;
  bool verify = false;
  bool help = false;
};

options parse(int argc, char** argv, std::string& error) {
  options o;
  oneside::apps::option_reader in(argc, argv);
  while (in.next()) {
    if (o.graph.read(in)) continue;
    if (in.name() == "--help" || in.name() == "-h") {
      o.help = true;
    } else if (in.name() == "--repeat") {
      in.number(o.repeat, 1, 1000);
    } else if (in.name() == "--verify") {
      o.verify = true;
    } else {
      in.fail_unknown();
    }
  }
  error = in.error();
  return o;
}

void usage() {
  std::printf(
      "usage: cc [graph options] [--repeat R] [--verify]\n"
      "  Connected components: every vertex labelled with the smallest vertex of its "
      "component\n%s"
      "  --repeat R         run R times, report the fastest and the mean (default 1)\n"
      "  --verify           compare with a serial union-find (small graphs)\n",
      gr::graph_options::usage());
}

int run(int argc, char** argv) {
  const oneside::team& world = oneside::world();
  const bool root = world.rank() == 0;
  std::string error;
  const options o = parse(argc, argv, error);
  if (!error.empty()) {
    std::fprintf(stderr, "cc: %s\n", error.c_str());
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
  gr::cc_solver solver(c, world);
  gr::cc_result r;
  double best = 0.0;
  double total = 0.0;
  for (int k = 0; k < o.repeat; ++k) {
    r = solver.run();
    const double seconds = oneside::allreduce(world, r.seconds, oneside::op::max);
    best = k == 0 ? seconds : std::min(best, seconds);
    total += seconds;
  }
  std::uint64_t own = 0;    // vertices that are their component's label
  std::uint64_t alone = 0;  // of them, without arcs
  for (std::size_t l = 0; l < r.label.size(); ++l) {
    if (r.label[l] == c.first + static_cast<gr::vertex_t>(l)) {
      ++own;
      if (c.degree(static_cast<gr::vertex_t>(l)) == 0) ++alone;
    }
  }
  const std::uint64_t components = oneside::allreduce(world, own, oneside::op::sum);
  const std::uint64_t isolated = oneside::allreduce(world, alone, oneside::op::sum);
  const std::uint64_t sent = oneside::allreduce(world, r.values_sent, oneside::op::sum);
  const double local = oneside::allreduce(world, r.local_seconds, oneside::op::max);
  if (root) {
    std::printf("Connected components: %s, %lld vertices, %llu edges (%llu arcs), %d ranks\n",
                input.describe().c_str(), static_cast<long long>(input.vertex_count()),
                static_cast<unsigned long long>(input.edge_count()),
                static_cast<unsigned long long>(c.global_arcs), world.size());
    std::printf("construction_time: %.6f s\n", construction);
    std::printf("cc time: %.6f s (fastest of %d; mean %.6f s)\n", best, o.repeat, total / o.repeat);
    std::printf(
        "local union-find: %.6f s (the last run's slowest rank), rounds: %d, labels "
        "sent: %llu\n",
        local, r.rounds, static_cast<unsigned long long>(sent));
    std::printf("components: %llu (%llu isolated vertices, %llu of two or more)\n",
                static_cast<unsigned long long>(components),
                static_cast<unsigned long long>(isolated),
                static_cast<unsigned long long>(components - isolated));
    std::fflush(stdout);
  }
  if (!o.verify) return 0;

  const std::vector<gr::vertex_t> want = gr::serial::components(input.build_serial());
  std::uint64_t wrong = 0;
  gr::vertex_t first_wrong = -1;
  for (std::size_t l = 0; l < r.label.size(); ++l) {
    if (r.label[l] != want[static_cast<std::size_t>(c.first) + l]) {
      if (wrong++ == 0) first_wrong = c.first + static_cast<gr::vertex_t>(l);
    }
  }
  const std::uint64_t all_wrong = oneside::allreduce(world, wrong, oneside::op::sum);
  if (wrong > 0) {
    std::fprintf(stderr, "cc: rank %d: %llu wrong labels, the first of vertex %lld\n", world.rank(),
                 static_cast<unsigned long long>(wrong), static_cast<long long>(first_wrong));
  }
  if (root) {
    std::printf(all_wrong == 0 ? "Solution validates\n"
                               : "Solution does not validate (%llu wrong labels)\n",
                static_cast<unsigned long long>(all_wrong));
  }
  return all_wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return oneside::apps::app_main("cc", argc, argv, run);
}
