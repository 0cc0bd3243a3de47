// The access pattern, command line and report of the 1 GiB collective file I/O benchmark
// (issue 24's bench rows), shared by oneside's arm (../micro/io_bench.cpp) and its MPI-IO peer
// (../peers/mpi_io_bench.cpp) so that both move the same bytes to the same places. Standard
// library only: the peer does not link oneside.
//
// Pattern: `bytes` in total over n ranks, each rank's share bytes / n. Contiguous: rank r owns
// [r × share, (r + 1) × share). Interleaved: blocks of `block` bytes round-robin over the ranks
// (block k of the file belongs to rank k mod n). Each launch writes the file once untimed (its
// blocks exist), then times `reps` write_at_all and `reps` read_at_all of every rank's share
// (slowest rank; the read checked against what was written), and prints one line per
// operation: "<op> median_s <t> min_s <t> GB/s <rate of the median>".
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace oneside::bench::io {

struct options {
  std::string dir = "/tmp";  // where the file goes
  std::int64_t bytes = std::int64_t{1} << 30;
  std::int64_t block = 4096;
  bool interleaved = false;
  int reps = 3;
  std::string engine;  // the oneside arm's variants (its --help)
  bool split = false;  // the oneside arm: the split collectives (begin, then end) instead
  std::string hints;   // key=value,key=value: file hints for both arms

  // The file: named after rank 0's process id (the arms broadcast it), so launches that
  // overlap never share a file.
  std::string path(long id) const {
    return dir + "/oneside-io-bench-" + std::to_string(id) + ".bin";
  }
};

inline void usage(const char* prog, std::string_view engines) {
  const std::string extra =
      engines.empty() ? "" : " [--engine " + std::string(engines) + "] [--split]";
  std::fprintf(stderr,
               "usage: %s [--dir D] [--bytes N] [--pattern contiguous|interleaved] [--block B]\n"
               "          [--reps R] [--hints k=v,k=v]%s\n",
               prog, extra.c_str());
}

// Parses the command line; returns false (after printing why) on a bad one.
inline bool parse(int argc, char** argv, options& o, std::string_view engines = {}) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--help") {
      usage(argv[0], engines);
      std::exit(0);
    }
    if (a == "--dir" && (v = value())) {
      o.dir = v;
    } else if (a == "--bytes" && (v = value())) {
      o.bytes = std::strtoll(v, nullptr, 10);
    } else if (a == "--block" && (v = value())) {
      o.block = std::strtoll(v, nullptr, 10);
    } else if (a == "--reps" && (v = value())) {
      o.reps = std::atoi(v);
    } else if (a == "--hints" && (v = value())) {
      o.hints = v;
    } else if (a == "--pattern" && (v = value())) {
      if (std::string_view(v) != "contiguous" && std::string_view(v) != "interleaved") break;
      o.interleaved = std::string_view(v) == "interleaved";
    } else if (!engines.empty() && a == "--engine" && (v = value())) {
      o.engine = v;
    } else if (!engines.empty() && a == "--split") {
      o.split = true;
    } else {
      std::fprintf(stderr, "%s: bad argument %s\n", argv[0], argv[i]);
      usage(argv[0], engines);
      return false;
    }
  }
  if (o.bytes <= 0 || o.block <= 0 || o.reps <= 0) {
    std::fprintf(stderr, "%s: --bytes, --block and --reps must be positive\n", argv[0]);
    return false;
  }
  return true;
}

// The key=value pairs of --hints.
inline std::vector<std::pair<std::string, std::string>> hint_pairs(const std::string& s) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 0;
  while (at < s.size()) {
    std::size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    const std::string kv = s.substr(at, end - at);
    const std::size_t eq = kv.find('=');
    if (eq != std::string::npos) out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    at = end + 1;
  }
  return out;
}

// Rank r's share in bytes (the total must divide evenly, in whole blocks when interleaved).
inline bool share_of(const options& o, int ranks, std::int64_t& share) {
  const std::int64_t unit = o.interleaved ? o.block * ranks : ranks;
  if (o.bytes % unit != 0) {
    std::fprintf(stderr, "--bytes %lld is not a multiple of %lld\n",
                 static_cast<long long>(o.bytes), static_cast<long long>(unit));
    return false;
  }
  share = o.bytes / ranks;
  return true;
}

// Rank r's data: 8-byte words naming the rank and the word's index in the share, so a byte in
// the wrong place or from the wrong rank shows.
inline void fill(std::vector<std::byte>& buf, int rank, int rep) {
  const std::size_t words = buf.size() / 8;
  auto* w = reinterpret_cast<std::uint64_t*>(buf.data());
  const std::uint64_t tag =
      (static_cast<std::uint64_t>(rank) << 56) ^ (static_cast<std::uint64_t>(rep) << 48);
  for (std::size_t i = 0; i < words; ++i) w[i] = tag ^ i;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One report line (rank 0 prints): the median and fastest of the repetitions.
inline void report(std::string_view op, const std::vector<double>& seconds, std::int64_t bytes) {
  const double med = median(seconds);
  const double best = *std::min_element(seconds.begin(), seconds.end());
  std::printf("%.*s median_s %.6f min_s %.6f GB/s %.3f\n", static_cast<int>(op.size()), op.data(),
              med, best, static_cast<double>(bytes) / med / 1e9);
  std::fflush(stdout);
}

}  // namespace oneside::bench::io
