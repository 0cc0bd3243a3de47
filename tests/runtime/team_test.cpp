// Teams and groups: world(), split() with colors and keys (including opting out), nested
// splits, the node-local team, collectives on sub-teams running concurrently on disjoint
// members, and the group algebra (incl, excl, union, intersection, difference, rank
// translation, comparison) with its errors.
#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "runtime/transport.hpp"

namespace oneside::test {
namespace {

class Teams : public RankTest {};

TEST_F(Teams, WorldHoldsEveryRankInOrder) {
  const team& w = world();
  EXPECT_TRUE(w.is_valid());
  EXPECT_EQ(w.size(), size());
  for (int r = 0; r < w.size(); ++r) {
    EXPECT_EQ(w.to_world(r), r);
    EXPECT_EQ(w.from_world(r), r);
  }
  EXPECT_EQ(w.group().size(), w.size());
  EXPECT_EQ(w.group().rank(), w.rank());
  // Every rank agrees on the world team's id.
  const auto ids = allgather(w, w.id());
  for (auto id : ids) EXPECT_EQ(id, w.id());
}

TEST_F(Teams, SplitByColorOrdersByKeyThenRank) {
  // Color: rank % 3; key: -rank (reverse order), except that all ranks ≥ 4 share key 0 so
  // ties fall back to the parent's order.
  const int color = rank() % 3;
  const int key = rank() >= 4 ? 0 : -rank();
  const team t = world().split(color, key);
  ASSERT_TRUE(t.is_valid());
  std::vector<int> members;
  for (int r = 0; r < size(); ++r) {
    if (r % 3 == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [](int a, int b) {
    const int ka = a >= 4 ? 0 : -a, kb = b >= 4 ? 0 : -b;
    return ka < kb;
  });
  ASSERT_EQ(t.size(), static_cast<int>(members.size()));
  for (int i = 0; i < t.size(); ++i) EXPECT_EQ(t.to_world(i), members[static_cast<std::size_t>(i)]);
  EXPECT_EQ(t.to_world(t.rank()), rank());
  // The team works: its members sum their world ranks.
  const int sum = allreduce(t, rank(), op::sum);
  EXPECT_EQ(sum, std::accumulate(members.begin(), members.end(), 0));
  // Members agree on the id; teams of other colors have other ids.
  const auto ids = allgather(world(), t.id());
  for (int r = 0; r < size(); ++r) {
    if (r % 3 == color) {
      EXPECT_EQ(ids[static_cast<std::size_t>(r)], t.id());
    } else {
      EXPECT_NE(ids[static_cast<std::size_t>(r)], t.id());
    }
  }
}

TEST_F(Teams, NoColorGivesANullTeam) {
  const team t = world().split(rank() == 0 ? team::no_color : 1, 0);
  if (rank() == 0) {
    EXPECT_FALSE(t.is_valid());
    try {
      (void)t.size();
      ADD_FAILURE() << "a null team answered size()";
    } catch (const error& e) {
      EXPECT_EQ(e.error_class(), error_class::comm);
    }
  } else {
    ASSERT_TRUE(t.is_valid());
    EXPECT_EQ(t.size(), size() - 1);
    EXPECT_EQ(t.rank(), rank() - 1);
    EXPECT_EQ(allreduce(t, 1, op::sum), size() - 1);
  }
}

TEST_F(Teams, NegativeColorIsRejected) {
  try {
    (void)world().split(-5, 0);
    ADD_FAILURE() << "accepted color -5";
  } catch (const error& e) {
    EXPECT_EQ(e.error_class(), error_class::arg);
  }
  EXPECT_EQ(allreduce(world(), 1, op::sum), size());
}

// A member that cannot make its part of a new team (its collective area: no room in
// /dev/shm, or here a bad setting read by the split) must not leave the others waiting for it
// in the new team's first collective (issue 18): every rank raises, that member its own error
// and the others one naming it, and the world goes on.
TEST_F(Teams, ASplitThatFailsOnOneMemberRaisesOnEveryRank) {
  const rank_t bad = size() - 1;
  for (const bool bad_opts_out : {false, true}) {
    SCOPED_TRACE(bad_opts_out ? "the other ranks opt out" : "one team");
    if (rank() == bad) ::setenv("ONESIDE_COLL_SLOT_BYTES", "lots", 1);
    const int color = bad_opts_out && rank() != bad ? team::no_color : 0;
    try {
      const team t = world().split(color, rank());
      ADD_FAILURE() << "split made a team although rank " << bad << " could not take part";
    } catch (const error& e) {
      EXPECT_EQ(e.error_class(), error_class::arg) << e.what();
      const std::string what = e.what();
      if (rank() == bad) {
        EXPECT_NE(what.find("ONESIDE_COLL_SLOT_BYTES"), std::string::npos) << what;
      } else {
        EXPECT_NE(what.find("rank " + std::to_string(bad) + " of the parent team"),
                  std::string::npos)
            << what;
      }
    }
    if (rank() == bad) ::unsetenv("ONESIDE_COLL_SLOT_BYTES");
    const team t = world().split(0, rank());
    ASSERT_TRUE(t.is_valid());
    EXPECT_EQ(allreduce(t, 1, op::sum), size());
  }
}

TEST_F(Teams, NestedSplitsAndConcurrentSubTeamCollectives) {
  const team half = world().split(rank() % 2, rank());
  const team quarter = half.split(half.rank() % 2, half.rank());
  ASSERT_TRUE(quarter.is_valid());
  // Disjoint sub-teams run different numbers of collectives at the same time.
  long total = 0;
  for (int i = 0; i < 20 + 5 * (rank() % 2); ++i) total += allreduce(half, 1L, op::sum);
  EXPECT_EQ(total, (20 + 5 * (rank() % 2)) * static_cast<long>(half.size()));
  std::vector<int> in(1000, rank());
  std::vector<int> out(in.size() * static_cast<std::size_t>(quarter.size()));
  allgather(quarter, in, out);
  for (int q = 0; q < quarter.size(); ++q) {
    EXPECT_EQ(out[static_cast<std::size_t>(q) * in.size()], quarter.to_world(q));
  }
  barrier(world());
}

TEST_F(Teams, ManyShortLivedTeams) {
  // Teams come and go (their shared memory with them) without leaking or breaking others.
  for (int i = 0; i < 50; ++i) {
    const team t = world().split(i % 2 == 0 ? 0 : rank() % 2, rank());
    EXPECT_EQ(allreduce(t, 1, op::sum), t.size());
  }
  EXPECT_EQ(allreduce(world(), 1, op::sum), size());
}

TEST_F(Teams, LocalTeamHoldsTheRanksOfThisNode) {
  // The ranks whose memory this one loads and stores, in world order: on one node with
  // load/store (the default), every rank; with ONESIDE_SHM_LOAD_STORE=0, this rank alone.
  const std::span<const rank_t> node = transport::current().node_ranks();
  const team& l = local_team();
  EXPECT_EQ(l.size(), static_cast<int>(node.size()));
  for (int r = 0; r < std::min(l.size(), static_cast<int>(node.size())); ++r) {
    EXPECT_EQ(l.to_world(r), node[static_cast<std::size_t>(r)]);
  }
  EXPECT_EQ(l.to_world(l.rank()), rank());
  EXPECT_EQ(allreduce(l, 1, op::sum), l.size());
}

TEST_F(Teams, GroupAlgebra) {
  covers("WIN-20");
  const group& all = world().group();
  std::vector<rank_t> evens, odds;
  for (int r = 0; r < size(); ++r) (r % 2 == 0 ? evens : odds).push_back(r);
  const group ge = all.incl(evens);
  const group go = all.excl(evens);
  EXPECT_EQ(ge.size(), static_cast<int>(evens.size()));
  EXPECT_EQ(go.size(), static_cast<int>(odds.size()));
  EXPECT_EQ(ge.rank(), rank() % 2 == 0 ? rank() / 2 : no_rank);
  EXPECT_EQ(go.rank(), rank() % 2 == 1 ? rank() / 2 : no_rank);
  // incl keeps the order given.
  if (size() >= 3) {
    const group g = all.incl({2, 0, 1});
    EXPECT_EQ(g.world_rank(0), 2);
    EXPECT_EQ(g.world_rank(1), 0);
    EXPECT_EQ(compare(g, all.incl({0, 1, 2})), group_relation::similar);
  }
  const group u = group_union(go, ge);
  EXPECT_EQ(u.size(), size());
  EXPECT_EQ(compare(u, all), size() > 1 ? group_relation::similar : group_relation::identical);
  EXPECT_EQ(compare(group_union(ge, go), all),
            size() > 2 ? group_relation::similar : group_relation::identical);
  EXPECT_EQ(compare(all, all.incl(std::vector<rank_t>(all.world_ranks().begin(),
                                                      all.world_ranks().end()))),
            group_relation::identical);
  EXPECT_TRUE(group_intersection(ge, go).empty());
  EXPECT_EQ(compare(group_intersection(all, ge), ge), group_relation::identical);
  EXPECT_EQ(compare(group_difference(all, go), ge), group_relation::identical);
  EXPECT_TRUE(group_difference(ge, all).empty());
  if (size() > 1) {
    EXPECT_EQ(compare(ge, go), group_relation::unequal);
  }
  // Translation: member i of ge is world rank 2i, which is rank i in ge and absent in go.
  std::vector<rank_t> ids(static_cast<std::size_t>(ge.size()));
  std::iota(ids.begin(), ids.end(), 0);
  ids.push_back(proc_null);
  const auto in_world = translate_ranks(ge, ids, all);
  const auto in_odds = translate_ranks(ge, ids, go);
  for (int i = 0; i < ge.size(); ++i) {
    EXPECT_EQ(in_world[static_cast<std::size_t>(i)], 2 * i);
    EXPECT_EQ(in_odds[static_cast<std::size_t>(i)], no_rank);
  }
  EXPECT_EQ(in_world.back(), proc_null);
  EXPECT_EQ(in_odds.back(), proc_null);
}

TEST_F(Teams, GroupErrors) {
  covers("ERR-16");
  const group& all = world().group();
  auto expect_rank_error = [](auto&& f, const char* what) {
    try {
      f();
      ADD_FAILURE() << what << ": accepted";
    } catch (const error& e) {
      EXPECT_EQ(e.error_class(), error_class::rank) << what;
    }
  };
  expect_rank_error([&] { (void)all.incl({size()}); }, "incl of a rank outside the group");
  expect_rank_error([&] { (void)all.incl({0, 0}); }, "incl of a repeated rank");
  expect_rank_error([&] { (void)all.excl({-1}); }, "excl of a negative rank");
  expect_rank_error([&] { (void)group({0, size()}); }, "a world rank outside the job");
  expect_rank_error([&] { (void)all.world_rank(size()); }, "world_rank out of range");
  const std::vector<rank_t> bad{size()};
  expect_rank_error([&] { (void)translate_ranks(all, bad, all); }, "translate of a non-member");
}

}  // namespace
}  // namespace oneside::test
