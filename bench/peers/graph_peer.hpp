// What the graph baselines of bench/peers share (graph_serial, graph_tbb, mpi_graph_bfs): the
// command line, the search keys, the Graph500 v3 report (the reference's output_results names
// and order, so bench/run_graph.py parses every program alike), the JSON record and the checks
// of --verify against the serial references of apps/graph/serial.hpp. Plain C++: no MPI, no TBB.
//
// The graph is the apps' (kronecker.hpp: `kronecker g(scale, edgefactor, seed)`), made
// undirected as serial::build_csr makes it (both directions, self-loops dropped, duplicates
// kept). The 64 search keys are the apps': the first distinct root_candidate(i), i = 0, 1, ...,
// of degree >= 1 not counting self-loops.
//
// TEPS: a search's edge count is the reference's (get_edge_count_for_teps, which validation
// checks): the input edges inside the searched component, each counted once, i.e. the sum of the
// reached vertices' degrees over 2 (self-loops are not in the CSR, so they do not count).
// harmonic_mean_TEPS is 1 / mean(time_i / edges_i), as the reference computes it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/option_reader.hpp"
#include "kronecker.hpp"
#include "serial.hpp"

namespace oneside::bench::graph_peer {

namespace ag = oneside::apps::graph;
using ag::vertex_t;

// Vertex numbers in the tuned CSR and the search state: 32 bits (scale <= 30), half the memory
// traffic of the reference's 64-bit ones.
using vid = std::uint32_t;
inline constexpr std::int32_t unreached = -1;

struct options {
  int scale = 16;
  int edgefactor = 16;
  std::uint64_t seed = 1;
  int roots = 64;                    // search keys (Graph500: 64)
  int pagerank_iterations = 20;      // K
  int cc_runs = 3;                   // connected components: the fastest of this many runs
  int threads = 0;                   // graph_tbb: 0 = every core
  std::string sssp = "delta";        // delta | dijkstra (graph_serial, graph_tbb)
  double delta = 0.0;                // delta-stepping's bucket width; 0 = the program's default
  std::vector<std::string> kernels;  // bfs, sssp, pagerank, cc (default: what the program offers)
  bool verify = false;
  // Testing only (not in the usage text): --verify checks a damaged copy of each result, so it
  // must print "Solution fails validation" (proves the checks can fail).
  bool corrupt = false;
  std::string json;  // a file for the JSON record, "-" = stdout, empty = none
  bool help = false;

  bool runs(std::string_view k) const {
    return std::find(kernels.begin(), kernels.end(), k) != kernels.end();
  }
};

// What a baseline is called and offers.
struct program_info {
  const char* name;
  const char* flavour;               // in the report's first line
  std::vector<std::string> kernels;  // the ones it implements
  bool threads = false;              // takes --threads
  bool sssp_choice = false;          // takes --sssp (dijkstra or delta-stepping)
  double delta_times_degree = 0.1;   // the default delta times the average degree

  bool offers(std::string_view k) const {
    return std::find(kernels.begin(), kernels.end(), k) != kernels.end();
  }
};

inline options parse_options(int argc, char** argv, const program_info& p, std::string& error) {
  options o;
  apps::option_reader in(argc, argv);
  bool kernels_given = false;
  while (in.next()) {
    if (in.name() == "--help" || in.name() == "-h") {
      o.help = true;
    } else if (in.name() == "--scale") {
      in.number(o.scale, 1, 30);
    } else if (in.name() == "--edgefactor") {
      in.number(o.edgefactor, 1, 1024);
    } else if (in.name() == "--seed") {
      in.number(o.seed, 0, std::numeric_limits<long long>::max());
    } else if (in.name() == "--roots") {
      in.number(o.roots, 1, 1 << 16);
    } else if (in.name() == "--pagerank-iterations" && p.kernels.size() > 1) {
      in.number(o.pagerank_iterations, 1, 1 << 16);
    } else if (in.name() == "--cc-runs" && p.kernels.size() > 1) {
      in.number(o.cc_runs, 1, 1 << 10);
    } else if (in.name() == "--threads" && p.threads) {
      in.number(o.threads, 0, 1 << 12);
    } else if (in.name() == "--sssp" && p.sssp_choice) {
      in.choice(o.sssp, {"delta", "dijkstra"}, "--sssp algorithm");
    } else if (in.name() == "--delta" && p.offers("sssp")) {
      const auto v = in.value();
      if (v && (!apps::parse_number(*v, o.delta) || !(o.delta > 0.0))) {
        in.fail("option --delta: '" + std::string(*v) + "' is not a positive number");
      }
    } else if (in.name() == "--kernels") {
      const auto v = in.value();
      if (!v) break;
      kernels_given = true;
      std::string_view rest = *v;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string k(rest.substr(0, comma));
        if (std::find(p.kernels.begin(), p.kernels.end(), k) == p.kernels.end()) {
          in.fail("unknown kernel '" + k + "' (known: " + apps::joined(p.kernels) + ")");
        } else if (!o.runs(k)) {
          o.kernels.push_back(k);
        }
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      }
    } else if (in.name() == "--verify") {
      std::string v;
      in.choice(v, {"on", "off"}, "--verify value");
      o.verify = v == "on";
    } else if (in.name() == "--corrupt-results") {
      o.corrupt = true;
    } else if (in.name() == "--json") {
      if (const auto v = in.value()) o.json = std::string(*v);
    } else {
      in.fail_unknown();
    }
  }
  if (!kernels_given) o.kernels = p.kernels;
  error = in.error();
  return o;
}

inline void print_usage(const program_info& p) {
  std::printf(
      "usage: %s [--scale S] [--edgefactor E] [--seed X] [--roots R] [--kernels K,...]\n"
      "          [--verify on|off] [--json FILE|-]%s%s%s\n"
      "  %s, on the Graph500 Kronecker graph of apps/graph\n"
      "  (2^S vertices, E x 2^S edges, undirected, self-loops dropped); search keys: the apps'\n"
      "  first R distinct candidates of degree >= 1. Prints the Graph500 v3 reference's result\n"
      "  lines.\n"
      "  --scale S          2^S vertices, S <= 30 (default 16)\n"
      "  --edgefactor E     edges per vertex (default 16)\n"
      "  --seed X           the generator's seed (default 1)\n"
      "  --roots R          search keys for BFS and SSSP (default 64)\n"
      "  --kernels K,...    of %s (default: all)\n",
      p.name, p.offers("sssp") ? " [--delta D]" : "", p.threads ? " [--threads T]" : "",
      p.sssp_choice ? " [--sssp delta|dijkstra]" : "", p.flavour, apps::joined(p.kernels).c_str());
  if (p.kernels.size() > 1) {
    std::printf(
        "  --pagerank-iterations K  pull PageRank iterations, damping 0.85 (default 20)\n"
        "  --cc-runs N        connected components runs, the fastest reported (default 3)\n");
  }
  if (p.threads) std::printf("  --threads T        TBB threads (default 0: every core)\n");
  if (p.sssp_choice) {
    std::printf(
        "  --sssp A           delta (delta-stepping, the default) or dijkstra (binary heap)\n");
  }
  if (p.offers("sssp")) {
    std::printf(
        "  --delta D          delta-stepping's bucket width (default %g / average degree)\n",
        p.delta_times_degree);
  }
  std::printf(
      "  --verify on|off    check every result against apps/graph/serial.hpp; use at small\n"
      "                     scales (default off); prints \"Solution validates\"\n"
      "  --json FILE        also write the results as one JSON object (- for stdout)\n"
      "  --help             this text\n");
}

// Parses the command line; prints the usage or the error. Returns the exit code to leave with
// (0 after --help, 2 for bad input), or -1 to run with `o`.
inline int start(const program_info& p, int argc, char** argv, bool root, options& o) {
  std::string error;
  o = parse_options(argc, argv, p, error);
  if (!error.empty()) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", p.name, error.c_str());
    return 2;
  }
  if (o.help) {
    if (root) print_usage(p);
    return 0;
  }
  return -1;
}

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The search keys: the first `count` distinct candidates of degree >= 1 (degree(v) counts no
// self-loop), fewer if 64·2^scale candidates do not find them.
template <class Degree>
std::vector<vid> search_keys(const ag::kronecker& g, int count, Degree degree) {
  std::vector<vid> keys;
  std::unordered_set<vertex_t> seen;
  const std::uint64_t limit = 64 * static_cast<std::uint64_t>(g.vertex_count());
  for (std::uint64_t i = 0; i < limit && static_cast<int>(keys.size()) < count; ++i) {
    const vertex_t v = g.root_candidate(i);
    if (degree(v) > 0 && seen.insert(v).second) keys.push_back(static_cast<vid>(v));
  }
  return keys;
}

// The search keys, or an error naming the graph when it has no vertex of degree >= 1.
inline bool has_keys(const char* program, const std::vector<vid>& keys, const options& o) {
  if (!keys.empty()) return true;
  std::fprintf(stderr, "%s: error: the graph of scale %d, edgefactor %d has no search key\n",
               program, o.scale, o.edgefactor);
  return false;
}

// The reference's statistics of a sample (output_results: quartiles as the mean of two order
// statistics, standard deviation with n - 1).
struct statistics {
  double min = 0, first_quartile = 0, median = 0, third_quartile = 0, max = 0, mean = 0, stddev = 0;
};
inline statistics statistics_of(std::vector<double> x) {
  statistics s;
  const std::size_t n = x.size();
  if (n == 0) return s;
  double sum = 0;
  for (double v : x) sum += v;
  s.mean = sum / static_cast<double>(n);
  double sq = 0;
  for (double v : x) sq += (v - s.mean) * (v - s.mean);
  s.stddev = n > 1 ? std::sqrt(sq / static_cast<double>(n - 1)) : 0.0;
  std::sort(x.begin(), x.end());
  s.min = x.front();
  s.first_quartile = (x[(n - 1) / 4] + x[n / 4]) * 0.5;
  s.median = (x[(n - 1) / 2] + x[n / 2]) * 0.5;
  s.third_quartile = (x[n - 1 - (n - 1) / 4] + x[n - 1 - n / 4]) * 0.5;
  s.max = x.back();
  return s;
}

// One search kernel's per-key times and edge counts.
struct search_results {
  std::vector<double> times;
  std::vector<double> edges;

  statistics time_stats() const { return statistics_of(times); }
  // Statistics of seconds per edge (the TEPS lines invert them).
  statistics per_edge_stats() const {
    std::vector<double> s(times.size());
    for (std::size_t i = 0; i < times.size(); ++i) s[i] = times[i] / edges[i];
    return statistics_of(s);
  }
  double harmonic_mean_teps() const { return 1.0 / per_edge_stats().mean; }
};

// Everything a run reports.
struct report {
  const program_info* program = nullptr;
  const options* opts = nullptr;
  int processes = 1;
  int threads = 1;
  double generation_time = 0;
  double construction_time = 0;
  search_results bfs;
  search_results sssp;
  std::vector<double> pagerank_iteration_times;  // K of them
  std::vector<double> cc_times;
  std::uint64_t cc_components = 0;
  bool validated = false;  // --verify ran and every check passed

  // The mean of the K iterations and the fastest CC run: what apps/graph's pagerank and cc report.
  double pagerank_iteration_time() const {
    return pagerank_time() / static_cast<double>(pagerank_iteration_times.size());
  }
  double pagerank_time() const {
    double t = 0;
    for (double x : pagerank_iteration_times) t += x;
    return t;
  }
  double cc_time() const { return statistics_of(cc_times).min; }
};

inline void print_time_lines(const char* k, const statistics& s) {
  std::printf("%s min_time:                  %g\n", k, s.min);
  std::printf("%s firstquartile_time:        %g\n", k, s.first_quartile);
  std::printf("%s median_time:               %g\n", k, s.median);
  std::printf("%s thirdquartile_time:        %g\n", k, s.third_quartile);
  std::printf("%s max_time:                  %g\n", k, s.max);
  std::printf("%s mean_time:                 %g\n", k, s.mean);
  std::printf("%s stddev_time:               %g\n", k, s.stddev);
}

inline void print_teps_lines(const char* k, const statistics& s, std::size_t n) {
  std::printf("%s min_TEPS:                  %g\n", k, 1.0 / s.max);
  std::printf("%s firstquartile_TEPS:        %g\n", k, 1.0 / s.third_quartile);
  std::printf("%s median_TEPS:               %g\n", k, 1.0 / s.median);
  std::printf("%s thirdquartile_TEPS:        %g\n", k, 1.0 / s.first_quartile);
  std::printf("%s max_TEPS:                  %g\n", k, 1.0 / s.min);
  std::printf("%s harmonic_mean_TEPS:     !  %g\n", k, 1.0 / s.mean);
  const double hs =
      n > 1 ? s.stddev / (s.mean * s.mean * std::sqrt(static_cast<double>(n - 1))) : 0.0;
  std::printf("%s harmonic_stddev_TEPS:      %g\n", k, hs);
}

// The Graph500 v3 reference's result lines (main.c's order and names), then the lines of the
// other kernels: pagerank_iterations, pagerank_iteration_time (the mean of the K iterations),
// pagerank_time (all K), cc_time (the fastest run), cc_components.
inline void print_report(const report& r) {
  const options& o = *r.opts;
  const bool bfs = !r.bfs.times.empty();
  const bool sssp = !r.sssp.times.empty();
  std::printf("SCALE:                          %d\n", o.scale);
  std::printf("edgefactor:                     %d\n", o.edgefactor);
  std::printf("NBFS:                           %zu\n",
              bfs ? r.bfs.times.size() : r.sssp.times.size());
  std::printf("graph_generation:               %g\n", r.generation_time);
  std::printf("num_mpi_processes:              %d\n", r.processes);
  std::printf("num_threads:                    %d\n", r.threads);
  std::printf("construction_time:              %g\n", r.construction_time);
  if (bfs) print_time_lines("bfs ", r.bfs.time_stats());
  if (sssp) print_time_lines("sssp", r.sssp.time_stats());
  if (bfs || sssp) {
    const statistics e = statistics_of(bfs ? r.bfs.edges : r.sssp.edges);
    std::printf("min_nedge:                      %.11g\n", e.min);
    std::printf("firstquartile_nedge:            %.11g\n", e.first_quartile);
    std::printf("median_nedge:                   %.11g\n", e.median);
    std::printf("thirdquartile_nedge:            %.11g\n", e.third_quartile);
    std::printf("max_nedge:                      %.11g\n", e.max);
    std::printf("mean_nedge:                     %.11g\n", e.mean);
    std::printf("stddev_nedge:                   %.11g\n", e.stddev);
  }
  if (bfs) print_teps_lines("bfs ", r.bfs.per_edge_stats(), r.bfs.times.size());
  if (sssp) print_teps_lines("sssp", r.sssp.per_edge_stats(), r.sssp.times.size());
  if (!r.pagerank_iteration_times.empty()) {
    std::printf("pagerank_iterations:            %zu\n", r.pagerank_iteration_times.size());
    std::printf("pagerank_iteration_time:        %g\n", r.pagerank_iteration_time());
    std::printf("pagerank_time:                  %g\n", r.pagerank_time());
  }
  if (!r.cc_times.empty()) {
    std::printf("cc_time:                        %g\n", r.cc_time());
    std::printf("cc_components:                  %llu\n",
                static_cast<unsigned long long>(r.cc_components));
  }
  std::fflush(stdout);
}

// The same as one JSON object, to o.json.
inline void write_json(const report& r) {
  const options& o = *r.opts;
  if (o.json.empty()) return;
  std::FILE* f = o.json == "-" ? stdout : std::fopen(o.json.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "%s: cannot write %s\n", r.program->name, o.json.c_str());
    return;
  }
  std::fprintf(f,
               "{\"program\": \"%s\", \"scale\": %d, \"edgefactor\": %d, \"seed\": %llu, "
               "\"processes\": %d, \"threads\": %d, \"graph_generation\": %g, "
               "\"construction_time\": %g",
               r.program->name, o.scale, o.edgefactor, static_cast<unsigned long long>(o.seed),
               r.processes, r.threads, r.generation_time, r.construction_time);
  const auto search = [&](const char* k, const search_results& s) {
    if (s.times.empty()) return;
    const statistics t = s.time_stats();
    std::fprintf(f,
                 ", \"%s\": {\"nroots\": %zu, \"harmonic_mean_TEPS\": %g, \"median_time\": %g, "
                 "\"min_time\": %g, \"max_time\": %g, \"mean_nedge\": %.11g}",
                 k, s.times.size(), s.harmonic_mean_teps(), t.median, t.min, t.max,
                 statistics_of(s.edges).mean);
  };
  search("bfs", r.bfs);
  search("sssp", r.sssp);
  if (!r.pagerank_iteration_times.empty()) {
    std::fprintf(f, ", \"pagerank\": {\"iterations\": %zu, \"iteration_time\": %g, \"time\": %g}",
                 r.pagerank_iteration_times.size(), r.pagerank_iteration_time(), r.pagerank_time());
  }
  if (!r.cc_times.empty()) {
    std::fprintf(f, ", \"cc\": {\"time\": %g, \"components\": %llu}", r.cc_time(),
                 static_cast<unsigned long long>(r.cc_components));
  }
  std::fprintf(f, ", \"verified\": %s}\n", o.verify ? (r.validated ? "true" : "false") : "null");
  if (f != stdout) std::fclose(f);
}

// --verify: the checks of each result against the serial references (serial.hpp), on a CSR of
// that header's own (independent of the baseline's). Each returns "" or what is wrong.
class verifier {
 public:
  // corrupt: check a damaged copy of each result instead (options::corrupt).
  explicit verifier(const ag::kronecker& g, bool corrupt = false)
      : c_(ag::serial::build_csr(g)), corrupt_(corrupt) {}

  const ag::serial::csr& csr() const noexcept { return c_; }

  // A BFS tree by the spec's rules: the root is its own parent; every other reached vertex's
  // parent is a neighbour one level closer (levels from serial::bfs_levels), so the tree's
  // edges exist and join levels differing by one; exactly the root's component is reached.
  std::string bfs_tree(vid root, const std::vector<std::int32_t>& result) const {
    std::vector<std::int32_t> damaged;
    if (corrupt_) damaged = damage(result, root);
    const std::vector<std::int32_t>& parent = corrupt_ ? damaged : result;
    const std::vector<std::int64_t> level = ag::serial::bfs_levels(c_, root);
    if (parent.size() != level.size()) return "the parent array has the wrong size";
    if (parent[root] != static_cast<std::int32_t>(root)) {
      return "root " + std::to_string(root) + "'s parent is " + std::to_string(parent[root]);
    }
    for (std::size_t v = 0; v < level.size(); ++v) {
      if (v == root) continue;
      const std::int32_t p = parent[v];
      if ((level[v] < 0) != (p < 0)) {
        return "vertex " + std::to_string(v) + (level[v] < 0 ? " is reached" : " is not reached") +
               " from root " + std::to_string(root);
      }
      if (p < 0) continue;
      if (static_cast<std::size_t>(p) >= level.size() ||
          level[static_cast<std::size_t>(p)] != level[v] - 1) {
        return "vertex " + std::to_string(v) + "'s parent " + std::to_string(p) +
               " is not one level closer to root " + std::to_string(root);
      }
      if (!has_arc(static_cast<vertex_t>(v), p)) {
        return "vertex " + std::to_string(v) + "'s parent " + std::to_string(p) +
               " is not its neighbour";
      }
    }
    return {};
  }

  // SSSP distances within a relative 1e-5 of Dijkstra's; each reached vertex's parent is a
  // neighbour whose distance plus the arc's weight gives the vertex's.
  std::string sssp(vid root, const std::vector<float>& result,
                   const std::vector<std::int32_t>& parent) const {
    std::vector<float> damaged;
    if (corrupt_) {
      damaged = result;
      for (std::size_t v = 0; v < damaged.size(); ++v) {
        if (v != root && parent[v] >= 0) {
          damaged[v] += 0.25F;
          break;
        }
      }
    }
    const std::vector<float>& dist = corrupt_ ? damaged : result;
    const std::vector<float> ref = ag::serial::sssp_distances(c_, root);
    if (dist.size() != ref.size() || parent.size() != ref.size()) return "wrong sizes";
    for (std::size_t v = 0; v < ref.size(); ++v) {
      if (std::isinf(ref[v]) != std::isinf(dist[v]) ||
          (!std::isinf(ref[v]) && std::fabs(dist[v] - ref[v]) > 1e-5F * std::max(1.0F, ref[v]))) {
        return "vertex " + std::to_string(v) + "'s distance from " + std::to_string(root) + " is " +
               std::to_string(dist[v]) + ", Dijkstra's " + std::to_string(ref[v]);
      }
      if (v == root || std::isinf(ref[v])) continue;
      const std::int32_t p = parent[v];
      bool tight = false;
      for (std::uint64_t i = c_.offsets[v]; p >= 0 && i < c_.offsets[v + 1]; ++i) {
        tight = tight || (c_.targets[i] == p &&
                          std::fabs(dist[static_cast<std::size_t>(p)] + c_.weights[i] - dist[v]) <=
                              1e-5F * std::max(1.0F, dist[v]));
      }
      if (!tight) {
        return "vertex " + std::to_string(v) + "'s parent " + std::to_string(p) +
               " is not a neighbour on a shortest path from " + std::to_string(root);
      }
    }
    if (parent[root] != static_cast<std::int32_t>(root)) return "the root is not its own parent";
    return {};
  }

  std::string pagerank(const std::vector<double>& result, int iterations) const {
    std::vector<double> damaged;
    if (corrupt_) {
      damaged = result;
      damaged.front() *= 1.001;
    }
    const std::vector<double>& rank = corrupt_ ? damaged : result;
    const std::vector<double> ref = ag::serial::pagerank(c_, 0.85, iterations);
    if (rank.size() != ref.size()) return "wrong size";
    for (std::size_t v = 0; v < ref.size(); ++v) {
      if (std::fabs(rank[v] - ref[v]) > 1e-9 * ref[v]) {
        return "vertex " + std::to_string(v) + "'s rank is " + precise(rank[v]) +
               ", the serial reference's " + precise(ref[v]);
      }
    }
    return {};
  }

  std::string components(const std::vector<vid>& result) const {
    std::vector<vid> damaged;
    if (corrupt_) {
      damaged = result;
      for (std::size_t v = 0; v < damaged.size(); ++v) {
        if (damaged[v] != v) {
          damaged[v] = static_cast<vid>(v);
          break;
        }
      }
    }
    const std::vector<vid>& label = corrupt_ ? damaged : result;
    const std::vector<vertex_t> ref = ag::serial::components(c_);
    if (label.size() != ref.size()) return "wrong size";
    for (std::size_t v = 0; v < ref.size(); ++v) {
      if (label[v] != ref[v]) {
        return "vertex " + std::to_string(v) + "'s component is " + std::to_string(label[v]) +
               ", union-find's " + std::to_string(ref[v]);
      }
    }
    return {};
  }

 private:
  static std::string precise(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.12g", x);
    return text;
  }

  // The first reached vertex other than the root becomes its own parent.
  static std::vector<std::int32_t> damage(std::vector<std::int32_t> parent, vid root) {
    for (std::size_t v = 0; v < parent.size(); ++v) {
      if (v != root && parent[v] >= 0) {
        parent[v] = static_cast<std::int32_t>(v);
        break;
      }
    }
    return parent;
  }

  bool has_arc(vertex_t u, vertex_t v) const {
    for (std::uint64_t i = c_.offsets[static_cast<std::size_t>(u)];
         i < c_.offsets[static_cast<std::size_t>(u) + 1]; ++i) {
      if (c_.targets[i] == v) return true;
    }
    return false;
  }

  ag::serial::csr c_;
  bool corrupt_;
};

// Prints a failed check (and returns false) or nothing.
inline bool check(const char* program, const char* what, const std::string& error) {
  if (error.empty()) return true;
  std::fprintf(stderr, "%s: %s: Validation Error: %s\n", program, what, error.c_str());
  return false;
}

}  // namespace oneside::bench::graph_peer
