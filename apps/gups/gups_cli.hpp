// The command line shared by the GUPS app and its MPI peer: the options, their parsing and usage
// text, and the header the root prints before the run (start() does all of it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/option_reader.hpp"

namespace oneside::apps::gups {

struct options {
  int log2_table = 20;
  std::uint64_t updates_factor = 4;  // updates per table word (HPCC: 4)
  std::string variant;
  bool verify = true;
  bool combine = false;  // the aggregated variant: same-word combining (aggregator_options)
  // The aggregated variant: CPU atomics (on) or plain loads and stores (off, the default: HPCC
  // allows errors from non-atomic updates) where the updates are applied (aggregator_options).
  bool atomic_apply = false;
  // The aggregated variant: this rank applies the buffers for node peers' words itself
  // (aggregator_options::apply_at_origin) instead of sending them to the owner.
  bool apply_at_origin = false;
  // Testing only (not in the usage text): leave out every K-th update of each rank's share,
  // so that verification must count the lost updates (K = 50: ~8% of the words wrong).
  std::uint64_t skip_every = 0;
  bool help = false;
};

// What a GUPS program is called and offers (the app and its MPI peer).
struct program_info {
  const char* name;                   // in usage and error messages
  const char* flavour;                // in the header
  std::vector<std::string> variants;  // the first is the default

  bool offers(const std::string& variant) const {
    return std::find(variants.begin(), variants.end(), variant) != variants.end();
  }
};

inline options parse_options(int argc, char** argv, const program_info& p, std::string& error) {
  options o;
  o.variant = p.variants.front();
  option_reader in(argc, argv);
  while (in.next()) {
    if (in.name() == "--help" || in.name() == "-h") {
      o.help = true;
    } else if (in.name() == "--log2-table") {
      in.number(o.log2_table, 1, 40);
    } else if (in.name() == "--updates-factor") {
      in.number(o.updates_factor, 1, 1 << 10);
    } else if (in.name() == "--variant") {
      in.choice(o.variant, p.variants, "variant");
    } else if (in.name() == "--verify") {
      std::string v;
      in.choice(v, {"on", "off"}, "--verify value");
      o.verify = v != "off";
    } else if (in.name() == "--combine" && p.offers("aggregated")) {
      std::string v;
      in.choice(v, {"on", "off"}, "--combine value");
      o.combine = v == "on";
    } else if (in.name() == "--atomic-apply" && p.offers("aggregated")) {
      std::string v;
      in.choice(v, {"on", "off"}, "--atomic-apply value");
      o.atomic_apply = v == "on";
    } else if (in.name() == "--apply-at-origin" && p.offers("aggregated")) {
      std::string v;
      in.choice(v, {"on", "off"}, "--apply-at-origin value");
      o.apply_at_origin = v == "on";
    } else if (in.name() == "--skip-updates") {
      in.number(o.skip_every, 1, 1LL << 40);
    } else {
      in.fail_unknown();
    }
  }
  error = in.error();
  return o;
}

inline void print_usage(const program_info& p) {
  std::printf(
      "usage: %s [--log2-table N] [--updates-factor F] [--variant V] [--verify on|off]\n"
      "  HPC Challenge RandomAccess: a table of 2^N 64-bit words spread over the ranks in\n"
      "  blocks, F x 2^N xor updates T[a & (2^N - 1)] ^= a from HPCC's random stream (each\n"
      "  rank generates its share), verified by replaying the stream (at most 1%% of the\n"
      "  words may be wrong) and reported in GUP/s (updates / seconds / 1e9).\n"
      "  --log2-table N     table of 2^N words, at least one per rank (default 20)\n"
      "  --updates-factor F updates per table word (default 4, HPCC's)\n"
      "  --variant V        %s (default: the first)\n"
      "  --verify on|off    replay the stream and count wrong words (default on)\n",
      p.name, joined(p.variants).c_str());
  if (p.offers("aggregated")) {
    std::printf(
        "  --combine on|off   aggregated: combine updates of one word in a buffer (default "
        "off)\n"
        "  --atomic-apply on|off aggregated: apply updates with CPU atomics (on) or plain\n"
        "                     loads and stores, which may lose a racing update (default off)\n"
        "  --apply-at-origin on|off aggregated: apply the buffers for node peers' words at\n"
        "                     the sending rank instead of the owner (default off)\n");
  }
  std::printf("  --help             this text\n");
}

inline void print_header(const program_info& p, const options& o, int ranks) {
  const std::uint64_t size = std::uint64_t{1} << o.log2_table;
  std::printf("HPC Challenge RandomAccess (GUPS), %s\n", p.flavour);
  std::printf("Number of ranks   = %d\n", ranks);
  std::printf("Main table size   = 2^%d = %llu words\n", o.log2_table,
              static_cast<unsigned long long>(size));
  std::printf("Number of updates = %llu\n",
              static_cast<unsigned long long>(o.updates_factor * size));
  std::printf("Variant           = %s\n", o.variant.c_str());
  if (o.variant == "aggregated") {
    std::printf("Combining         = %s\n", o.combine ? "on" : "off");
    std::printf("Atomic apply      = %s\n", o.atomic_apply ? "on" : "off");
    std::printf("Apply at origin   = %s\n", o.apply_at_origin ? "on" : "off");
  }
  std::fflush(stdout);
}

// Parses the command line; the root prints the usage, the error or the header. Returns the
// exit code to leave with (0 after --help, 2 for bad input), or -1 to run with `o`.
inline int start(const program_info& p, int argc, char** argv, int ranks, bool root, options& o) {
  std::string error;
  o = parse_options(argc, argv, p, error);
  if (error.empty() && !o.help &&
      (std::uint64_t{1} << o.log2_table) < static_cast<std::uint64_t>(ranks)) {
    error = "a table of 2^" + std::to_string(o.log2_table) + " words is smaller than the " +
            std::to_string(ranks) + " ranks (use a larger --log2-table)";
  }
  if (!error.empty()) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", p.name, error.c_str());
    return 2;
  }
  if (o.help) {
    if (root) print_usage(p);
    return 0;
  }
  if (root) print_header(p, o, ranks);
  return -1;
}

}  // namespace oneside::apps::gups
