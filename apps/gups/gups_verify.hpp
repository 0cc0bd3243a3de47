// The GUPS table's initial values, HPCC's verification (replay the whole stream, applying the
// updates to this rank's words, and count the words that are not their initial value again:
// xor undoes itself; at most 1% may be wrong, as HPCC allows for its non-atomic versions) and
// the report of the verdict and the rate, shared by the GUPS app and its MPI peer.
#pragma once

#include <cstdint>
#include <cstdio>

#include "gups_cli.hpp"
#include "gups_stream.hpp"

namespace oneside::apps::gups {

// Every word holds its global index.
inline void initialize(std::uint64_t* local, const table_layout& t, int me) {
  const std::uint64_t first = t.start(me);
  for (std::uint64_t i = 0; i < t.local_size(me); ++i) local[i] = first + i;
}

// Applies again the updates of every rank's share that fall on this rank's words, then returns
// how many of them differ from their initial value.
inline std::uint64_t replay_and_count(std::uint64_t* local, const table_layout& t, int me,
                                      std::uint64_t factor) {
  const std::uint64_t first = t.start(me);
  const std::uint64_t n = t.local_size(me);
  update_stream all(0, factor * t.size());
  for (std::uint64_t a = 0; all.next(a);) {
    const std::uint64_t i = t.index_of(a) - first;  // wraps above n below `first`
    if (i < n) local[i] ^= a;
  }
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < n; ++i) wrong += local[i] != first + i ? 1 : 0;
  return wrong;
}

// Prints the time and rate (rank 0) as HPCC does, then, when verified, the verdict; returns
// the exit code every rank should use. `max_seconds`: the slowest rank's time of the updates;
// `errors`: the wrong words of every rank.
inline int report(std::uint64_t errors, double max_seconds, const options& o, bool root) {
  const std::uint64_t size = std::uint64_t{1} << o.log2_table;
  const double updates = static_cast<double>(o.updates_factor * size);
  if (root) {
    std::printf("Real time used = %.6f seconds\n", max_seconds);
    std::printf("%.9f Billion(10^9) Updates    per second [GUP/s]\n", updates / max_seconds / 1e9);
  }
  if (!o.verify) {
    if (root) std::printf("Not verified (--verify off)\n");
    return 0;
  }
  // HPCC's threshold: 1% of the table.
  const bool passed = static_cast<double>(errors) <= 0.01 * static_cast<double>(size);
  if (root) {
    std::printf("Found %llu errors in %llu locations (%s).\n",
                static_cast<unsigned long long>(errors), static_cast<unsigned long long>(size),
                passed ? "passed" : "failed");
    if (passed) {
      std::printf("Solution validates\n");
    } else {
      std::fprintf(stderr,
                   "ERROR: %llu of %llu table words are wrong, more than 1%%: the run does not "
                   "validate\n",
                   static_cast<unsigned long long>(errors), static_cast<unsigned long long>(size));
    }
  }
  std::fflush(stdout);
  std::fflush(stderr);
  return passed ? 0 : 1;
}

}  // namespace oneside::apps::gups
