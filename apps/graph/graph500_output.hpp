// The results of the graph500 app: the Graph500 (v3) reference's output (its names, order and
// statistics: quartiles as the reference computes them, TEPS as edges / seconds per search and
// their harmonic mean with Norris's standard error), and the same numbers as one JSON record
// for the bench suite. Each kernel (bfs, later sssp) hands in its per-search times and edge
// counts as a kernel_result; the writers print every kernel given.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace oneside::apps::graph {

// One kernel's searches.
struct kernel_result {
  std::string name;                    // "bfs", "sssp": the reference's prefix
  std::vector<double> times;           // seconds, per search
  std::vector<double> nedges;          // edges counted for TEPS, per search
  std::vector<double> validate_times;  // seconds, per search (-1: not validated)
};

// What the run was, beside its kernels.
struct run_info {
  int scale = 0;
  int edgefactor = 0;
  int nbfs = 0;
  std::uint64_t seed = 0;
  int ranks = 0;
  std::string variant;  // the BFS variant
  double graph_generation = 0.0;
  double construction_time = 0.0;
  bool validated = false;             // every search validated (false also with --no-validate)
  std::uint64_t edge_list_bytes = 0;  // the input's edges as Graph500 counts them (2 x 8 bytes)
  std::uint64_t csr_bytes = 0;        // every rank's CSR (offsets, targets, weights)
  std::uint64_t bfs_state_bytes = 0;  // every rank's search state
};

// The reference's get_statistics.
struct statistics {
  double minimum = 0, first_quartile = 0, median = 0, third_quartile = 0, maximum = 0;
  double mean = 0, stddev = 0;
};

inline statistics statistics_of(std::vector<double> x) {
  statistics s;
  const std::size_t n = x.size();
  if (n == 0) return s;
  for (double v : x) s.mean += v;
  s.mean /= static_cast<double>(n);
  for (double v : x) s.stddev += (v - s.mean) * (v - s.mean);
  s.stddev = n > 1 ? std::sqrt(s.stddev / static_cast<double>(n - 1)) : 0.0;
  std::sort(x.begin(), x.end());
  s.minimum = x[0];
  s.first_quartile = (x[(n - 1) / 4] + x[n / 4]) * 0.5;
  s.median = (x[(n - 1) / 2] + x[n / 2]) * 0.5;
  s.third_quartile = (x[n - 1 - (n - 1) / 4] + x[n - 1 - n / 4]) * 0.5;
  s.maximum = x[n - 1];
  return s;
}

// TEPS statistics from seconds per edge, as the reference derives them.
struct teps_statistics {
  double minimum = 0, first_quartile = 0, median = 0, third_quartile = 0, maximum = 0;
  double harmonic_mean = 0, harmonic_stddev = 0;
};

inline teps_statistics teps_of(const kernel_result& k) {
  std::vector<double> secs_per_edge(k.times.size());
  for (std::size_t i = 0; i < k.times.size(); ++i) secs_per_edge[i] = k.times[i] / k.nedges[i];
  const statistics s = statistics_of(secs_per_edge);
  const double n = static_cast<double>(k.times.size());
  return {1.0 / s.maximum,
          1.0 / s.third_quartile,
          1.0 / s.median,
          1.0 / s.first_quartile,
          1.0 / s.minimum,
          1.0 / s.mean,
          n > 1 ? s.stddev / (s.mean * s.mean * std::sqrt(n - 1)) : 0.0};
}

inline double bytes_per_edge(const run_info& r) {
  const double edges =
      static_cast<double>(std::uint64_t{static_cast<std::uint64_t>(r.edgefactor)} << r.scale);
  return static_cast<double>(r.csr_bytes + r.bfs_state_bytes) / edges;
}

namespace detail {

inline void print_line(std::FILE* f, const std::string& name, double v) {
  std::fprintf(f, "%-32s%g\n", (name + ":").c_str(), v);
}

// `precise`: 11 significant digits (the reference's edge counts), else %g.
inline void print_stats(std::FILE* f, const std::string& prefix, const char* what,
                        const statistics& s, bool precise = false) {
  const char* names[] = {"min", "firstquartile", "median", "thirdquartile",
                         "max", "mean",          "stddev"};
  const double values[] = {s.minimum, s.first_quartile, s.median, s.third_quartile,
                           s.maximum, s.mean,           s.stddev};
  for (int i = 0; i < 7; ++i) {
    std::fprintf(f, "%-32s", (prefix + names[i] + "_" + what + ":").c_str());
    if (precise) {
      std::fprintf(f, "%.11g\n", values[i]);
    } else {
      std::fprintf(f, "%g\n", values[i]);
    }
  }
}

// "bfs" → "bfs  ", "sssp" → "sssp ": the reference's column of kernel names.
inline std::string prefix_of(const std::string& name) {
  std::string p = name + " ";
  while (p.size() < 5) p += " ";
  return p;
}

inline void json_number(std::FILE* f, double v) {
  if (std::isfinite(v)) {
    std::fprintf(f, "%.17g", v);
  } else {
    std::fprintf(f, "null");
  }
}

inline void json_array(std::FILE* f, const std::vector<double>& xs) {
  std::fprintf(f, "[");
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) std::fprintf(f, ", ");
    json_number(f, xs[i]);
  }
  std::fprintf(f, "]");
}

}  // namespace detail

// The reference's results block (output_results in its main.c), for each kernel given.
inline void print_results(std::FILE* f, const run_info& r, const std::vector<kernel_result>& ks) {
  std::fprintf(f, "%-32s%d\n", "SCALE:", r.scale);
  std::fprintf(f, "%-32s%d\n", "edgefactor:", r.edgefactor);
  std::fprintf(f, "%-32s%d\n", "NBFS:", r.nbfs);
  detail::print_line(f, "graph_generation", r.graph_generation);
  std::fprintf(f, "%-32s%d\n", "num_mpi_processes:", r.ranks);
  detail::print_line(f, "construction_time", r.construction_time);
  for (const kernel_result& k : ks) {
    detail::print_stats(f, detail::prefix_of(k.name), "time", statistics_of(k.times));
  }
  if (!ks.empty()) {
    const statistics s = statistics_of(ks.front().nedges);
    detail::print_stats(f, "", "nedge", s, true);
  }
  for (const kernel_result& k : ks) {
    const std::string p = detail::prefix_of(k.name);
    const teps_statistics t = teps_of(k);
    detail::print_line(f, p + "min_TEPS", t.minimum);
    detail::print_line(f, p + "firstquartile_TEPS", t.first_quartile);
    detail::print_line(f, p + "median_TEPS", t.median);
    detail::print_line(f, p + "thirdquartile_TEPS", t.third_quartile);
    detail::print_line(f, p + "max_TEPS", t.maximum);
    std::fprintf(f, "%-24s     !  %g\n", (p + "harmonic_mean_TEPS:").c_str(), t.harmonic_mean);
    detail::print_line(f, p + "harmonic_stddev_TEPS", t.harmonic_stddev);
  }
  for (const kernel_result& k : ks) {
    detail::print_stats(f, detail::prefix_of(k.name), "validate", statistics_of(k.validate_times));
  }
  std::fflush(f);
}

// The same numbers as one JSON object in `path` (replaced); false when it cannot be written.
inline bool write_json(const std::string& path, const run_info& r,
                       const std::vector<kernel_result>& ks) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "{\"program\": \"graph500\", \"implementation\": \"oneside\", ");
  std::fprintf(f, "\"bfs_variant\": \"%s\", \"scale\": %d, \"edgefactor\": %d, \"nbfs\": %d, ",
               r.variant.c_str(), r.scale, r.edgefactor, r.nbfs);
  std::fprintf(f, "\"seed\": %llu, \"ranks\": %d, \"validated\": %s,\n",
               static_cast<unsigned long long>(r.seed), r.ranks, r.validated ? "true" : "false");
  std::fprintf(f, " \"graph_generation\": ");
  detail::json_number(f, r.graph_generation);
  std::fprintf(f, ", \"construction_time\": ");
  detail::json_number(f, r.construction_time);
  std::fprintf(f,
               ",\n \"memory\": {\"edge_list_bytes\": %llu, \"csr_bytes\": %llu, "
               "\"bfs_state_bytes\": %llu, \"bytes_per_edge\": ",
               static_cast<unsigned long long>(r.edge_list_bytes),
               static_cast<unsigned long long>(r.csr_bytes),
               static_cast<unsigned long long>(r.bfs_state_bytes));
  detail::json_number(f, bytes_per_edge(r));
  std::fprintf(f, "},\n \"kernels\": {");
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const kernel_result& k = ks[i];
    const statistics s = statistics_of(k.times);
    const teps_statistics t = teps_of(k);
    std::fprintf(f, "%s\n  \"%s\": {", i > 0 ? "," : "", k.name.c_str());
    const std::pair<const char*, double> fields[] = {
        {"min_time", s.minimum},
        {"firstquartile_time", s.first_quartile},
        {"median_time", s.median},
        {"thirdquartile_time", s.third_quartile},
        {"max_time", s.maximum},
        {"mean_time", s.mean},
        {"stddev_time", s.stddev},
        {"min_TEPS", t.minimum},
        {"firstquartile_TEPS", t.first_quartile},
        {"median_TEPS", t.median},
        {"thirdquartile_TEPS", t.third_quartile},
        {"max_TEPS", t.maximum},
        {"harmonic_mean_TEPS", t.harmonic_mean},
        {"harmonic_stddev_TEPS", t.harmonic_stddev},
    };
    for (const auto& [name, value] : fields) {
      std::fprintf(f, "\"%s\": ", name);
      detail::json_number(f, value);
      std::fprintf(f, ", ");
    }
    std::fprintf(f, "\n   \"times\": ");
    detail::json_array(f, k.times);
    std::fprintf(f, ",\n   \"nedges\": ");
    detail::json_array(f, k.nedges);
    std::fprintf(f, ",\n   \"validate_times\": ");
    detail::json_array(f, k.validate_times);
    std::fprintf(f, "}");
  }
  std::fprintf(f, "}}\n");
  return std::fclose(f) == 0;
}

}  // namespace oneside::apps::graph
