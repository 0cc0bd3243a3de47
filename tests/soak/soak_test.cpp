// Soak (issue 18): the memory of a long-running program stays flat. Mixed traffic with window
// churn (soak_workload.hpp: windows of every flavour made, used and freed, regions attached to
// and detached from a dynamic window that stays, team splits, heap blocks allocated, used and
// freed, puts, gets, atomics and accumulates between all of them) for a warm-up, then for at
// least 800 rounds and 8 s more; the largest resident set over the ranks must not have grown
// meanwhile by as much as 768 KiB. Before the tables were rewritten in place, each round kept
// about 4.5 KiB at 4 ranks (the dynamic window's region views alone 1.5 KiB): 5.7 MiB over
// 1,230 rounds, 2 MiB over 1,307 rounds with only the region views retained. The long version,
// which prints the resident set as it goes, is scripts/soak.sh.
#include <chrono>
#include <cstdio>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "soak_workload.hpp"

namespace oneside::test {
namespace {

class Soak : public RankTest {};

// Under a sanitizer the resident set says little: its own bookkeeping (shadow memory, freed
// blocks held back) grows with the traffic. The workload still runs, for what the sanitizer
// finds in it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;
#elif defined(__has_feature)
constexpr bool sanitized = __has_feature(address_sanitizer) || __has_feature(thread_sanitizer);
#else
constexpr bool sanitized = false;
#endif

using clock_type = std::chrono::steady_clock;

// Rounds of `work` until both `min_rounds` rounds and `min_seconds` of rank 0's clock have
// passed (or `max_seconds` have, on a machine far slower than expected). Returns the rounds
// run; `ok` turns false when a round read back a wrong value.
long run_rounds(soak::mixed_workload& work, long min_rounds, double min_seconds, double max_seconds,
                bool& ok) {
  const auto start = clock_type::now();
  long rounds = 0;
  for (;;) {
    ok = work.round() && ok;
    ++rounds;
    const double mine = world().rank() == 0
                            ? std::chrono::duration<double>(clock_type::now() - start).count()
                            : 0.0;
    const double t = allreduce(world(), mine, op::max);
    if ((rounds >= min_rounds && t >= min_seconds) || t >= max_seconds) return rounds;
  }
}

TEST_F(Soak, ResidentSetStaysFlatUnderMixedTrafficWithWindowChurn) {
  soak::mixed_workload work;
  bool ok = true;
  const long warm_rounds = run_rounds(work, 150, 2.0, 30.0, ok);
  const long warm = soak::world_max_rss();
  const long rounds = run_rounds(work, 800, 8.0, 90.0, ok);
  const long end = soak::world_max_rss();
  if (rank() == 0) {
    std::printf(
        "soak: %ld rounds of warm-up, then %ld rounds: largest VmRSS %ld KiB -> %ld KiB "
        "(%+ld KiB)\n",
        warm_rounds, rounds, warm, end, end - warm);
  }
  EXPECT_TRUE(ok) << "a value read back was wrong";
  if (sanitized) return;
  EXPECT_LT(end - warm, 768) << "the resident set grew by " << end - warm << " KiB over " << rounds
                             << " rounds (from " << warm << " KiB)";
}

}  // namespace
}  // namespace oneside::test
