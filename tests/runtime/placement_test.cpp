// Placement under the launcher's default binding: ranks have a core each while they do not
// outnumber the cores (and are unbound otherwise), and each rank's task arena is sized to the
// cores it is bound to (its share of the node when unbound) and runs work.
#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "runtime/settings.hpp"

namespace oneside::test {
namespace {

class Placement : public RankTest {};

TEST_F(Placement, RanksAreBoundToDistinctCoresUnlessOversubscribed) {
  ONESIDE_SKIP_UNLESS_ALL(
      detail::setting_string("ONESIDE_BINDING") != "none" || size() > this_machine().cores,
      "the job was started with an explicit --bind-to none");
  const rank_topology& t = this_rank_topology();
  if (size() <= this_machine().cores) {
    EXPECT_TRUE(t.is_bound) << t.describe();
    ASSERT_EQ(t.cores.size(), 1U) << t.describe();
    const std::vector<int> cores = allgather(world(), t.cores.front());
    EXPECT_EQ(std::set<int>(cores.begin(), cores.end()).size(), cores.size())
        << "two ranks share a core";
  } else {
    EXPECT_FALSE(t.is_bound) << "oversubscribed ranks are not bound: " << t.describe();
    allgather(world(), 0);  // keep the collective sequence equal on every rank
  }
}

TEST_F(Placement, TaskArenaMatchesTheRanksCores) {
  ONESIDE_SKIP_UNLESS_ALL(!detail::setting_is_set("ONESIDE_TASK_THREADS"),
                          "ONESIDE_TASK_THREADS overrides the arena size");
  const rank_topology& t = this_rank_topology();
  const int expected = t.is_bound ? static_cast<int>(t.cores.size())
                                  : std::max(1, this_machine().cores / local_team().size());
  EXPECT_EQ(this_rank_arena().max_concurrency(), expected) << t.describe();
}

TEST_F(Placement, TaskArenaRunsWork) {
  task_arena_ref arena = this_rank_arena();
  std::vector<int> hits(10000, 0);
  arena.parallel_for(hits.size(), [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) ++hits[i];
  });
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), static_cast<long>(hits.size()));
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) arena.enqueue([&] { ran.fetch_add(1); });
  arena.wait_enqueued();
  EXPECT_EQ(ran.load(), 100);
  int value = 0;
  arena.execute([&] { value = 42; });
  EXPECT_EQ(value, 42);
}

}  // namespace
}  // namespace oneside::test
