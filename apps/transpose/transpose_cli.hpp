// The command line shared by the transpose app and its MPI1 peer: PRK's `<iterations> <order>
// [tile]` plus oneside-style options, their parsing and usage text, and the header the root
// prints before the run (start() does all of it).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "transpose_kernel.hpp"

namespace oneside::apps::transpose {

struct options {
  int iterations = 0;
  std::int64_t order = 0;
  int tile = 32;  // PRK's default; tiling when 0 < tile < order
  std::string variant;
  kernel_kind kernel = kernel_kind::buffered;
  bool inject_error = false;  // testing only: perturb one result so verification must fail
  bool help = false;

  bool tiled() const noexcept { return tile > 0 && tile < order; }
};

struct parse_result {
  options opts;
  std::string error;  // empty when the command line is valid
};

inline bool parse_integer(std::string_view s, long long& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc{} && p == end;
}

// Parses `iterations order [tile]` (PRK's positional arguments, in that order) and the
// options `--variant V` (or `--variant=V`; V among `variants`), `--kernel buffered|prk`,
// `--inject-error`, `--help`.
inline parse_result parse_options(int argc, char** argv, const std::vector<std::string>& variants) {
  parse_result r;
  r.opts.variant = variants.front();
  auto fail = [&](std::string msg) {
    if (r.error.empty()) r.error = std::move(msg);
  };
  std::vector<std::string_view> positional;
  for (int i = 1; i < argc && r.error.empty(); ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      r.opts.help = true;
    } else if (arg == "--inject-error") {
      r.opts.inject_error = true;
    } else if (arg == "--variant" || arg.starts_with("--variant=")) {
      std::string_view v;
      if (arg != "--variant") {
        v = arg.substr(arg.find('=') + 1);
      } else if (i + 1 < argc) {
        v = argv[++i];
      } else {
        fail("option --variant needs a value");
        break;
      }
      bool known = false;
      std::string list;
      for (const std::string& k : variants) {
        known = known || k == v;
        list += (list.empty() ? "" : ", ") + k;
      }
      if (!known) fail("unknown variant '" + std::string(v) + "' (known: " + list + ")");
      r.opts.variant = std::string(v);
    } else if (arg == "--kernel" || arg.starts_with("--kernel=")) {
      std::string_view v;
      if (arg != "--kernel") {
        v = arg.substr(arg.find('=') + 1);
      } else if (i + 1 < argc) {
        v = argv[++i];
      } else {
        fail("option --kernel needs a value");
        break;
      }
      if (v == "buffered") {
        r.opts.kernel = kernel_kind::buffered;
      } else if (v == "prk") {
        r.opts.kernel = kernel_kind::prk;
      } else {
        fail("unknown kernel '" + std::string(v) + "' (known: buffered, prk)");
      }
    } else if (arg.starts_with("--")) {
      fail("unknown option '" + std::string(arg) + "' (see --help)");
    } else {
      positional.push_back(arg);
    }
  }
  if (!r.error.empty() || r.opts.help) return r;
  if (positional.size() < 2 || positional.size() > 3) {
    fail("expected <# iterations> <matrix order> [tile size], got " +
         std::to_string(positional.size()) + " arguments (see --help)");
    return r;
  }
  long long v = 0;
  if (!parse_integer(positional[0], v) || v < 1 || v > (1LL << 30)) {
    fail("iterations must be an integer in [1, 2^30], not '" + std::string(positional[0]) + "'");
    return r;
  }
  r.opts.iterations = static_cast<int>(v);
  // order² elements of each matrix must be countable, and their values exact in a double.
  if (!parse_integer(positional[1], v) || v < 1 || v > (1LL << 20)) {
    fail("matrix order must be an integer in [1, 2^20], not '" + std::string(positional[1]) + "'");
    return r;
  }
  r.opts.order = v;
  if (positional.size() == 3) {
    if (!parse_integer(positional[2], v) || v < -(1LL << 30) || v > (1LL << 30)) {
      fail("tile size must be an integer (<= 0 or >= order: untiled), not '" +
           std::string(positional[2]) + "'");
      return r;
    }
    r.opts.tile = static_cast<int>(v);
  }
  return r;
}

inline void print_usage(std::FILE* f, const char* program, const std::string& variants) {
  std::fprintf(f,
               "usage: %s <# iterations> <matrix order> [tile size] [--variant V] [--kernel K]\n"
               "  The Parallel Research Kernels' Transpose: B += A^T; A += 1, iterated (plus a\n"
               "  warm-up iteration) on order x order matrices of doubles distributed by column\n"
               "  blocks, verified and reported in MB/s. An order that does not divide by the\n"
               "  rank count gives the last ranks narrower (possibly empty) column blocks.\n"
               "  tile size        side of the tiles of the local transposes (default 32;\n"
               "                   <= 0 or >= order: untiled)\n"
               "  --variant V      %s (default: the first)\n"
               "  --kernel K       buffered (tiles copied through a small buffer, default) or\n"
               "                   prk (PRK's loop nest)\n"
               "  --help           this text\n",
               program, variants.c_str());
}

inline void print_header(const char* flavour, const options& o, int ranks) {
  std::printf("Parallel Research Kernels\n");
  std::printf("%s matrix transpose: B = A^T\n", flavour);
  std::printf("Number of ranks      = %d\n", ranks);
  std::printf("Matrix order         = %lld\n", static_cast<long long>(o.order));
  std::printf("Number of iterations = %d\n", o.iterations);
  if (o.tiled()) {
    std::printf("Tile size            = %d\n", o.tile);
  } else {
    std::printf("Untiled\n");
  }
  std::printf("Variant              = %s\n", o.variant.c_str());
  std::printf("Kernel               = %s\n", o.kernel == kernel_kind::prk ? "prk" : "buffered");
  std::fflush(stdout);
}

// The local transposes' tiling for `o`.
inline tiling tiling_of(const options& o) {
  return tiling_of(o.tile, static_cast<std::size_t>(o.order), o.kernel);
}

// What a transpose program is called and offers (the app and its MPI peer).
struct program_info {
  const char* name;                   // in usage and error messages
  const char* flavour;                // in the header: "<flavour> matrix transpose: B = A^T"
  std::vector<std::string> variants;  // the first is the default
};

// Parses the command line; the root prints the usage, the error or the header. Returns the
// exit code to leave with (0 after --help, 2 for bad input), or -1 to run with `o`.
inline int start(const program_info& p, int argc, char** argv, int ranks, bool root, options& o) {
  const parse_result parsed = parse_options(argc, argv, p.variants);
  std::string list;
  for (const std::string& v : p.variants) list += (list.empty() ? "" : ", ") + v;
  if (!parsed.error.empty()) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", p.name, parsed.error.c_str());
    return 2;
  }
  o = parsed.opts;
  if (o.help) {
    if (root) print_usage(stdout, p.name, list);
    return 0;
  }
  if (root) print_header(p.flavour, o, ranks);
  return -1;
}

}  // namespace oneside::apps::transpose
