// The command line of the graph500 app: the options, their parsing and usage text.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/option_reader.hpp"
#include "kronecker.hpp"

namespace oneside::apps::graph {

struct graph500_options {
  int scale = 16;  // the reference's default SCALE
  int edgefactor = 16;
  std::uint64_t seed = 1;
  int nbfs = 64;
  std::string bfs = "diropt";  // topdown | diropt
  std::string claims =
      "direct";      // how top-down levels claim remote vertices: direct | atomic | rpc
  std::string json;  // a JSON record of the results there, when not empty
  bool validate = true;
  bool sssp = true;    // kernel 3 after kernel 2 (--no-sssp: BFS only)
  float delta = 0.1F;  // SSSP's bucket width (weights are uniform in [0, 1))
  // Testing only (not in the usage text): the first tree's root loses its parent before
  // validation, which must then fail on every rank.
  bool inject_error = false;
  bool inject_sssp_error = false;  // the same for the first SSSP result (its root's distance)
  bool help = false;
};

inline const std::vector<std::string>& bfs_variants() {
  static const std::vector<std::string> names = {"diropt", "topdown"};
  return names;
}

// Parses argv; the first error, naming the option, in `error` (empty when all is well).
inline graph500_options parse_graph500_options(int argc, char** argv, std::string& error) {
  graph500_options o;
  option_reader in(argc, argv);
  while (in.next()) {
    if (in.name() == "--help" || in.name() == "-h") {
      o.help = true;
    } else if (in.name() == "--scale") {
      in.number(o.scale, 1, max_scale);
    } else if (in.name() == "--edgefactor") {
      in.number(o.edgefactor, 1, 1024);
    } else if (in.name() == "--seed") {
      in.number(o.seed, 0, (1LL << 62));
    } else if (in.name() == "--nbfs") {
      in.number(o.nbfs, 1, 1 << 16);
    } else if (in.name() == "--bfs") {
      in.choice(o.bfs, bfs_variants(), "--bfs variant");
    } else if (in.name() == "--claims") {
      in.choice(o.claims, {"direct", "atomic", "rpc"}, "--claims value");
    } else if (in.name() == "--json") {
      if (const auto v = in.value()) {
        if (v->empty()) in.fail("option --json needs a file name");
        o.json = std::string(*v);
      }
    } else if (in.name() == "--no-validate") {
      o.validate = false;
    } else if (in.name() == "--no-sssp") {
      o.sssp = false;
    } else if (in.name() == "--delta") {
      in.real(o.delta, 1e-6, 1e6, "[1e-06, 1e+06]");
    } else if (in.name() == "--inject-error") {
      o.inject_error = true;
    } else if (in.name() == "--inject-sssp-error") {
      o.inject_sssp_error = true;
    } else {
      in.fail_unknown();
    }
  }
  error = in.error();
  return o;
}

inline void print_graph500_usage() {
  std::printf(
      "usage: graph500 [--scale S] [--edgefactor E] [--seed X] [--nbfs K] [--bfs V]\n"
      "                [--claims direct|atomic|rpc] [--delta D] [--no-sssp] [--json PATH]\n"
      "                [--no-validate]\n"
      "  Graph500 (v3) breadth-first search on a Kronecker graph of 2^S vertices and E x 2^S\n"
      "  edges: kernel 1 builds the distributed CSR (construction_time), kernel 2 searches\n"
      "  from K keys, each tree validated; results in the reference's format.\n"
      "  --scale S        log2 of the vertex count, 1..%d (default 16; 40 when built with\n"
      "                   ONESIDE_GRAPH_WIDE_TARGETS)\n"
      "  --edgefactor E   edges per vertex (default 16)\n"
      "  --seed X         the generator's seed (default 1)\n"
      "  --nbfs K         search keys (default 64)\n"
      "  --bfs V          %s (default diropt: direction-optimizing)\n"
      "  --claims C       top-down claims of remote vertices: direct (batches appended to\n"
      "                   node peers' inboxes, the default; atomic for the others), atomic\n"
      "                   (aggregated atomic_min) or rpc (aggregated rpc_ff)\n"
      "  --delta D        SSSP's bucket width (default 0.1; weights are in [0, 1))\n"
      "  --no-sssp        skip kernel 3 (SSSP from the same keys)\n"
      "  --json PATH      also write the results as one JSON record to PATH\n"
      "  --no-validate    skip validation (no \"Solution validates\")\n"
      "  --help           this text\n",
      max_scale, joined(bfs_variants()).c_str());
}

}  // namespace oneside::apps::graph
