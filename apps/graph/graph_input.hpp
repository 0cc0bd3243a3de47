// The input graph of the pagerank and cc mini-apps: the Graph500 Kronecker graph (--scale,
// --edgefactor, --seed), or an edge-list file (--edges PATH).
//
// Edge-list files are text, one undirected edge per line: two vertex numbers "u v" (0-based,
// separated by blanks; anything after them on the line is ignored), blank lines and lines
// starting with '#' skipped. The graph has max(vertex) + 1 vertices; like the Kronecker graph
// it is made undirected, self-loops dropped and duplicates kept, every weight 1. Every rank
// reads the whole file and keeps its share of the edges (an input for small graphs).
#pragma once

#include <cstdint>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "common/option_reader.hpp"
#include "dist_graph.hpp"
#include "serial.hpp"

namespace oneside::apps::graph {

struct graph_options {
  int scale = 10;
  int edgefactor = 16;
  std::uint64_t seed = 1;
  std::string edges;  // an edge-list file instead of the Kronecker graph

  // Reads the option at `in` if it is one of these; false otherwise.
  bool read(option_reader& in) {
    if (in.name() == "--scale") {
      in.number(scale, 1, 32);
    } else if (in.name() == "--edgefactor") {
      in.number(edgefactor, 1, 1024);
    } else if (in.name() == "--seed") {
      in.number(seed, 0, (1LL << 62));
    } else if (in.name() == "--edges") {
      if (const auto v = in.value()) edges = std::string(*v);
    } else {
      return false;
    }
    return true;
  }

  static const char* usage() {
    return "  --scale S          Kronecker graph of 2^S vertices (default 10)\n"
           "  --edgefactor E     E x 2^S edges (default 16)\n"
           "  --seed X           the generator's seed (default 1)\n"
           "  --edges PATH       an edge-list file instead: lines \"u v\" (0-based vertices,\n"
           "                     '#' comments), read by every rank\n";
  }
};

struct edge_list {
  vertex_t vertex_count = 0;
  std::vector<edge> edges;
};

// Throws std::runtime_error naming the file and line on a missing file or a malformed line.
inline edge_list read_edge_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open edge list '" + path + "'");
  edge_list el;
  std::string line;
  for (std::uint64_t number = 1; std::getline(in, line); ++number) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream fields(line);
    long long u = -1;
    long long v = -1;
    if (!(fields >> u >> v) || u < 0 || v < 0 || u >= (1LL << 40) || v >= (1LL << 40)) {
      throw std::runtime_error("edge list '" + path + "' line " + std::to_string(number) +
                               ": expected two vertex numbers in [0, 2^40), got '" + line + "'");
    }
    el.edges.push_back({u, v});
    el.vertex_count = std::max(el.vertex_count, static_cast<vertex_t>(std::max(u, v) + 1));
  }
  if (el.edges.empty()) throw std::runtime_error("edge list '" + path + "' has no edge");
  return el;
}

// Kernel 1 on an edge list, collective over `t`: each rank takes its share of the edges and
// the arcs travel to their rows' owners as in build_dist_csr (rows in edge order). The
// dist_csr's generator is unused (a scale-1 placeholder).
inline dist_csr build_dist_csr(const edge_list& el, const team& t) {
  check_target_range(el.vertex_count);
  const int ranks = t.size();
  const rank_t me = t.rank();
  dist_csr c{kronecker(1, 1, 0), vertex_partition(el.vertex_count, ranks), me, 0, {}, {}, {}, 0};
  const vertex_partition& part = c.partition;
  c.first = part.first(me);
  const index_range mine = share_of(el.edges.size(), ranks, me);
  std::vector<std::vector<vertex_t>> out(static_cast<std::size_t>(ranks));  // (row, target) pairs
  for (std::uint64_t e = mine.begin; e < mine.end; ++e) {
    const edge x = el.edges[static_cast<std::size_t>(e)];
    if (x.u == x.v) continue;
    auto& to_u = out[static_cast<std::size_t>(part.owner(x.u))];
    to_u.push_back(part.local(x.u));
    to_u.push_back(x.v);
    auto& to_v = out[static_cast<std::size_t>(part.owner(x.v))];
    to_v.push_back(part.local(x.v));
    to_v.push_back(x.u);
  }
  std::vector<count_t> send_counts(static_cast<std::size_t>(ranks));
  std::vector<vertex_t> flat;
  for (int r = 0; r < ranks; ++r) {
    send_counts[static_cast<std::size_t>(r)] =
        static_cast<count_t>(out[static_cast<std::size_t>(r)].size());
    flat.insert(flat.end(), out[static_cast<std::size_t>(r)].begin(),
                out[static_cast<std::size_t>(r)].end());
  }
  out = {};
  std::vector<count_t> send_displs(static_cast<std::size_t>(ranks), 0);
  std::exclusive_scan(send_counts.begin(), send_counts.end(), send_displs.begin(), count_t{0});
  std::vector<count_t> recv_counts(static_cast<std::size_t>(ranks), 0);
  alltoall(t, send_counts, recv_counts);
  std::vector<count_t> recv_displs(static_cast<std::size_t>(ranks), 0);
  std::exclusive_scan(recv_counts.begin(), recv_counts.end(), recv_displs.begin(), count_t{0});
  std::vector<vertex_t> in(static_cast<std::size_t>(recv_displs.back() + recv_counts.back()));
  alltoallv(t, flat, send_counts, send_displs, in, recv_counts, recv_displs);
  const auto rows = static_cast<std::size_t>(part.size(me));
  c.offsets.assign(rows + 1, 0);
  for (std::size_t i = 0; i < in.size(); i += 2) ++c.offsets[static_cast<std::size_t>(in[i]) + 1];
  std::partial_sum(c.offsets.begin(), c.offsets.end(), c.offsets.begin());
  c.targets.resize(in.size() / 2);
  c.weights.assign(in.size() / 2, 1.0F);
  std::vector<std::uint64_t> fill(c.offsets.begin(), c.offsets.end() - 1);
  for (std::size_t i = 0; i < in.size(); i += 2) {
    c.targets[fill[static_cast<std::size_t>(in[i])]++] = static_cast<target_t>(in[i + 1]);
  }
  c.global_arcs = allreduce(t, static_cast<std::uint64_t>(c.targets.size()), op::sum);
  return c;
}

// The serial CSR of an edge list (serial::build_csr's rules).
inline serial::csr build_serial_csr(const edge_list& el) {
  serial::csr c;
  c.vertex_count = el.vertex_count;
  const auto n = static_cast<std::size_t>(c.vertex_count);
  c.offsets.assign(n + 1, 0);
  for (const edge& x : el.edges) {
    if (x.u == x.v) continue;
    ++c.offsets[static_cast<std::size_t>(x.u) + 1];
    ++c.offsets[static_cast<std::size_t>(x.v) + 1];
  }
  std::partial_sum(c.offsets.begin(), c.offsets.end(), c.offsets.begin());
  c.targets.resize(c.offsets[n]);
  c.weights.assign(c.offsets[n], 1.0F);
  std::vector<std::uint64_t> next(c.offsets.begin(), c.offsets.end() - 1);
  for (const edge& x : el.edges) {
    if (x.u == x.v) continue;
    c.targets[next[static_cast<std::size_t>(x.u)]++] = x.v;
    c.targets[next[static_cast<std::size_t>(x.v)]++] = x.u;
  }
  return c;
}

// The graph the options name, both forms: distributed (collective) and, for verification,
// serial (built on demand from the same source).
struct graph_input {
  explicit graph_input(const graph_options& o)
      : options(o), generator(o.scale, o.edgefactor, o.seed) {
    if (!o.edges.empty()) file = read_edge_list(o.edges);
  }

  bool from_file() const noexcept { return !options.edges.empty(); }
  vertex_t vertex_count() const noexcept {
    return from_file() ? file.vertex_count : generator.vertex_count();
  }
  std::uint64_t edge_count() const noexcept {
    return from_file() ? file.edges.size() : generator.edge_count();
  }
  std::string describe() const {
    if (from_file()) return "edge list " + options.edges;
    return "Kronecker graph, scale " + std::to_string(options.scale) + ", edgefactor " +
           std::to_string(options.edgefactor) + ", seed " + std::to_string(options.seed);
  }
  dist_csr build(const team& t) const {
    return from_file() ? build_dist_csr(file, t) : build_dist_csr(generator, t);
  }
  serial::csr build_serial() const {
    return from_file() ? build_serial_csr(file) : serial::build_csr(generator);
  }

  graph_options options;
  kronecker generator;
  edge_list file;
};

}  // namespace oneside::apps::graph
