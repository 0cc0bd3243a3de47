// The command line shared by the stencil app and its MPI-RMA peer: the options, their parsing
// and usage text, the check that the grid fits the rank count, and the header the root prints
// before the run (start() does all of it).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/option_reader.hpp"
#include "stencil_decomposition.hpp"
#include "stencil_halo.hpp"
#include "stencil_kernel.hpp"

namespace oneside::apps::stencil {

struct options {
  index_t n = 1000;
  int radius = 2;
  int iterations = 10;
  std::string variant = "fence";
  kernel_kind kernel = kernel_kind::fused;
  halo_kind halo = halo_kind::pack;
  int tiles_x = 0;  // 0: PRK's factorization of the rank count
  int tiles_y = 0;
  bool inject_error = false;    // testing only: perturb one result so verification must fail
  std::string only;             // tasks variant: "compute" or "comm" runs one half (overlap bench)
  int checkpoint_every = 0;     // 0: no checkpoints
  std::string checkpoint;       // where checkpoints go (committed by rename from <path>.tmp)
  std::string restart;          // the checkpoint to start from
  std::string save_final;       // where the final state goes
  int crash_in_checkpoint = 0;  // testing only: rank 1 exits in the middle of checkpoint K
  bool help = false;
};

struct parse_result {
  options opts;
  std::string error;  // empty when the command line is valid
};

// Parses `--name value` and `--name=value`. `variants` lists the accepted --variant values.
inline parse_result parse_options(int argc, char** argv, const std::vector<std::string>& variants,
                                  std::string_view default_variant, kernel_kind default_kernel) {
  parse_result r;
  r.opts.variant = std::string(default_variant);
  r.opts.kernel = default_kernel;
  option_reader in(argc, argv);
  while (in.next()) {
    const std::string_view arg = in.name();
    if (arg == "--help" || arg == "-h") {
      r.opts.help = true;
    } else if (arg == "--n" || arg == "-n") {
      in.number(r.opts.n, 1, 1LL << 20);
    } else if (arg == "--radius" || arg == "-r") {
      in.number(r.opts.radius, 1, 1 << 10);
    } else if (arg == "--iterations" || arg == "-i") {
      in.number(r.opts.iterations, 1, 1 << 30);
    } else if (arg == "--variant" || arg == "-v") {
      in.choice(r.opts.variant, variants, "variant");
    } else if (arg == "--kernel") {
      if (const auto v = in.value()) {
        if (*v == "fused") {
          r.opts.kernel = kernel_kind::fused;
        } else if (*v == "prk") {
          r.opts.kernel = kernel_kind::prk;
        } else {
          in.fail("unknown kernel '" + std::string(*v) + "' (known: fused, prk)");
        }
      }
    } else if (arg == "--halo") {
      if (const auto v = in.value()) {
        if (*v == "pack") {
          r.opts.halo = halo_kind::pack;
        } else if (*v == "datatype") {
          r.opts.halo = halo_kind::datatype;
        } else {
          in.fail("unknown halo method '" + std::string(*v) + "' (known: pack, datatype)");
        }
      }
    } else if (arg == "--tiles") {
      if (const auto v = in.value()) {
        const auto x = v->find('x');
        if (x == std::string_view::npos || !parse_number(v->substr(0, x), r.opts.tiles_x) ||
            !parse_number(v->substr(x + 1), r.opts.tiles_y) || r.opts.tiles_x < 1 ||
            r.opts.tiles_y < 1) {
          in.fail("option --tiles: '" + std::string(*v) + "' is not of the form PXxPY");
        }
      }
    } else if (arg == "--checkpoint-every") {
      in.number(r.opts.checkpoint_every, 1, 1 << 30);
    } else if (arg == "--checkpoint") {
      if (const auto v = in.value()) r.opts.checkpoint = std::string(*v);
    } else if (arg == "--restart") {
      if (const auto v = in.value()) r.opts.restart = std::string(*v);
    } else if (arg == "--save-final") {
      if (const auto v = in.value()) r.opts.save_final = std::string(*v);
    } else if (arg == "--crash-in-checkpoint") {
      in.number(r.opts.crash_in_checkpoint, 1, 1 << 30);
    } else if (arg == "--inject-error") {
      r.opts.inject_error = true;
    } else if (arg == "--only") {
      if (const auto v = in.value()) {
        if (*v != "compute" && *v != "comm") {
          in.fail("option --only: '" + std::string(*v) + "' is neither compute nor comm");
        }
        r.opts.only = std::string(*v);
      }
    } else {
      in.fail("unknown argument '" + std::string(arg) + "' (see --help)");
    }
  }
  r.error = in.error();
  return r;
}

inline void print_usage(std::FILE* f, const char* program, std::string_view variants,
                        const char* default_kernel) {
  std::fprintf(f,
               "usage: %s [--n N] [--radius R] [--iterations I] [--variant V] [options]\n"
               "  The Parallel Research Kernels' Stencil: a star stencil of radius R on an N x N\n"
               "  grid of doubles, distributed over a 2-D grid of ranks, iterated I times (plus a\n"
               "  warm-up iteration), verified and reported in MFlops/s.\n"
               "  --n N            grid size (default 1000)\n"
               "  --radius R       stencil radius, >= 1 (default 2)\n"
               "  --iterations I   timed iterations, >= 1 (default 10)\n"
               "  --variant V      halo synchronization: %.*s (default %s)\n"
               "  --kernel K       fused (overlapped, one pass over `in`) or prk (exchange,\n"
               "                   stencil, then a separate in += 1 pass, as PRK; default %s)\n"
               "  --halo H         columns as pack (packed buffer, default) or datatype\n"
               "                   (vector datatype straight into the ghost zone)\n"
               "  --tiles PXxPY    rank grid (default: as square as possible, as PRK)\n"
               "  --only H         tasks variant: run only the computation (compute) or only\n"
               "                   the halo exchange (comm), unverified, to measure overlap\n"
               "  --checkpoint-every K  --checkpoint PATH\n"
               "                   after every K iterations (the warm-up counts) save `in` and\n"
               "                   `out` to PATH (written to PATH.tmp, synced, then renamed)\n"
               "  --restart PATH   start from the checkpoint at PATH (any rank count)\n"
               "  --save-final PATH  save the final `in` and `out` to PATH\n"
               "  --help           this text\n",
               program, static_cast<int>(variants.size()), variants.data(),
               std::string(variants.substr(0, variants.find(','))).c_str(), default_kernel);
}

// The decomposition for `ranks`, or an error message when n and R do not fit it.
inline std::string check_decomposition(const options& o, int ranks, int& px, int& py) {
  if (o.tiles_x > 0) {
    px = o.tiles_x;
    py = o.tiles_y;
    if (px * py != ranks) {
      return "--tiles " + std::to_string(px) + "x" + std::to_string(py) + " needs " +
             std::to_string(px * py) + " ranks, the job has " + std::to_string(ranks);
    }
  } else {
    factor_ranks(ranks, px, py);
  }
  if (2 * static_cast<index_t>(o.radius) + 1 > o.n) {
    return "grid size n = " + std::to_string(o.n) + " is too small for radius " +
           std::to_string(o.radius) + " (need n >= 2R + 1 = " + std::to_string(2 * o.radius + 1) +
           ")";
  }
  // Halos come from the direct neighbour only: every tile must be at least R cells wide.
  const index_t min_w = o.n / px;
  const index_t min_h = o.n / py;
  if (min_w < o.radius || min_h < o.radius) {
    return "grid size n = " + std::to_string(o.n) + " over " + std::to_string(px) + " x " +
           std::to_string(py) + " tiles gives tiles of " + std::to_string(min_w) + " x " +
           std::to_string(min_h) + " cells, smaller than the radius " + std::to_string(o.radius) +
           " (use a larger n)";
  }
  return {};
}

inline void print_header(const char* flavour, const options& o, int ranks, int px, int py) {
  std::printf("Parallel Research Kernels\n");
  std::printf("%s stencil execution on 2D grid\n", flavour);
  std::printf("Number of ranks        = %d\n", ranks);
  std::printf("Grid size              = %lld\n", static_cast<long long>(o.n));
  std::printf("Radius of stencil      = %d\n", o.radius);
  std::printf("Tiles in x/y-direction = %d/%d\n", px, py);
  std::printf("Type of stencil        = star\n");
  std::printf("Data type              = double precision\n");
  std::printf("Number of iterations   = %d\n", o.iterations);
  std::printf("Variant                = %s\n", o.variant.c_str());
  std::printf("Kernel                 = %s\n", o.kernel == kernel_kind::fused ? "fused" : "prk");
  std::printf("Halo columns           = %s\n", o.halo == halo_kind::pack ? "pack" : "datatype");
  std::fflush(stdout);
}

// What a stencil program is called and offers (the app and its MPI peer).
struct program_info {
  const char* name;                   // in usage and error messages
  const char* flavour;                // in the header: "<flavour> stencil execution on 2D grid"
  std::vector<std::string> variants;  // the first is the default
  kernel_kind default_kernel;
  bool checkpoints;  // --checkpoint-every, --checkpoint, --restart, --save-final
};

// Parses the command line and fits the decomposition to `ranks`; the root prints the usage,
// the error or the header. Returns the exit code to leave with (0 after --help, 2 for bad
// input), or -1 to run with `o`, `px` and `py` set.
inline int start(const program_info& p, int argc, char** argv, int ranks, bool root, options& o,
                 int& px, int& py) {
  const parse_result parsed =
      parse_options(argc, argv, p.variants, p.variants.front(), p.default_kernel);
  if (!parsed.error.empty()) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", p.name, parsed.error.c_str());
    return 2;
  }
  o = parsed.opts;
  if (o.help) {
    std::string list;
    for (const std::string& v : p.variants) list += (list.empty() ? "" : ", ") + v;
    if (root) {
      print_usage(stdout, p.name, list, p.default_kernel == kernel_kind::fused ? "fused" : "prk");
    }
    return 0;
  }
  if (!o.only.empty() && o.variant != "tasks") {
    if (root) std::fprintf(stderr, "%s: error: --only needs --variant tasks\n", p.name);
    return 2;
  }
  const bool any_checkpoint = o.checkpoint_every > 0 || !o.checkpoint.empty() ||
                              !o.restart.empty() || !o.save_final.empty() ||
                              o.crash_in_checkpoint > 0;
  if (any_checkpoint && !p.checkpoints) {
    if (root) std::fprintf(stderr, "%s: error: checkpoints are not supported here\n", p.name);
    return 2;
  }
  if ((o.checkpoint_every > 0) != !o.checkpoint.empty()) {
    if (root) {
      std::fprintf(stderr, "%s: error: --checkpoint-every and --checkpoint go together\n", p.name);
    }
    return 2;
  }
  if (any_checkpoint && !o.only.empty()) {
    if (root) std::fprintf(stderr, "%s: error: --only runs no checkpoints\n", p.name);
    return 2;
  }
  if (const std::string err = check_decomposition(o, ranks, px, py); !err.empty()) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", p.name, err.c_str());
    return 2;
  }
  if (root) print_header(p.flavour, o, ranks, px, py);
  return -1;
}

}  // namespace oneside::apps::stencil
