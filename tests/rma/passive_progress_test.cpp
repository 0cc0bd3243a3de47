// Passive-target progress without the target (SEM-11, SEM-12, MEM-13, SYN-4): rank 0 computes
// without calling oneside while every other rank locks its window, puts, accumulates, fetches,
// compares-and-swaps, reads and unlocks, and then reads another origin's update through the
// target. The target stops when every origin says it finished (a flag each puts at the end)
// or after 20 s; every origin must finish before the target stops, and the target must have
// stopped because they did, on an allocate window, a create window over the target's
// std::vector and a dynamic window over attached std::vector memory (the owner's agent path).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

using rma::flavor;
using rma::lock_type;

class PassiveProgress : public RankTest, public ::testing::WithParamInterface<flavor> {};

const datatype& i64() {
  return datatype::of<std::int64_t>();
}

TEST_P(PassiveProgress, OriginsFinishWhileTheTargetComputes) {
  covers("SEM-11", "SEM-12", "MEM-13", "SYN-4", "SYN-21", "SYN-18");
  ONESIDE_SKIP_UNLESS_ALL(size() >= 2, "needs a target and an origin");
  const auto p = static_cast<std::size_t>(size());
  // Target layout: [0, P) one slot per origin (put), P: accumulate counter, P+1: ticket
  // counter, [P+2, 2P+2): one compare-and-swap slot per origin, 2P+2: exclusive-lock counter,
  // [2P+3, 3P+3): one "finished" flag per origin.
  const std::size_t acc = p, tickets = p + 1, cas0 = p + 2, excl = 2 * p + 2, done = 2 * p + 3,
                    slots = 3 * p + 3;
  test_window tw = make_window(GetParam(), world(), slots * sizeof(std::int64_t), 8);
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, slots, std::int64_t{0});
  settle(tw.win);
  rma::window& w = tw.win;
  const team origins = world().split(rank() == 0 ? team::no_color : 1, rank());
  const auto d = [&](std::size_t k) { return tw.disp(0, static_cast<disp_t>(k)); };

  computed busy;
  std::int64_t all_done = 0;
  std::int64_t ticket = -1, cas_old = -1, read_back = -1, partial = -1, other_value = -1;
  barrier(world());
  if (rank() == 0) {
    busy = compute_until_origins_done(mine + done, p, std::chrono::seconds(20));
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the target computes by now
    const std::int64_t me = rank();
    const std::int64_t one = 1;
    w.lock(lock_type::shared, 0);
    w.put(me * 10 + 1, 0, d(static_cast<std::size_t>(rank())));
    w.accumulate(std::span<const std::int64_t>(&me, 1), 0, d(acc), op::sum);
    w.fetch_and_op(&one, &ticket, i64(), 0, d(tickets), op::sum);
    const std::int64_t swap_in = me + 100, expect_zero = 0;
    w.compare_and_swap(&swap_in, &expect_zero, &cas_old, i64(), 0,
                       d(cas0 + static_cast<std::size_t>(rank())));
    w.flush(0);
    w.get(std::span<std::int64_t>(&read_back, 1), 0, d(static_cast<std::size_t>(rank())));
    w.get_accumulate(nullptr, 0, i64(), &partial, 1, i64(), 0, d(acc), 1, i64(), op::no_op);
    w.unlock(0);
    // An exclusive lock is granted without the target too.
    w.lock(lock_type::exclusive, 0);
    w.accumulate(std::span<const std::int64_t>(&one, 1), 0, d(excl), op::sum);
    w.unlock(0);
    // Every origin has unlocked: another origin's put is at the target (MEM-13).
    barrier(origins);
    const rank_t other = origins.rank() + 1 < origins.size() ? rank() + 1 : 1;
    w.lock(lock_type::shared, 0);
    w.get(std::span<std::int64_t>(&other_value, 1), 0, d(static_cast<std::size_t>(other)));
    w.unlock(0);
    EXPECT_EQ(other_value, other * 10 + 1);
    all_done = now_ns();
    w.lock(lock_type::shared, 0);
    w.put(one, 0, d(done + static_cast<std::size_t>(rank())));
    w.unlock(0);
  }
  const std::int64_t end0 = broadcast(world(), busy.end_ns, 0);
  const bool origins_done = broadcast(world(), busy.origins_done ? 1 : 0, 0) != 0;
  EXPECT_TRUE(origins_done) << "the target computed 20 s without every origin finishing";
  if (rank() != 0) {
    EXPECT_LT(all_done, end0) << "the origins finished only after the target stopped computing";
    EXPECT_EQ(read_back, rank() * 10 + 1);
    EXPECT_EQ(cas_old, 0);
    EXPECT_GE(partial, rank());
  }
  const std::vector<std::int64_t> all_tickets = allgather(world(), ticket);
  settle(w);
  if (rank() == 0) {
    std::vector<std::int64_t> t(all_tickets.begin() + 1, all_tickets.end());
    std::sort(t.begin(), t.end());
    for (std::size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(t[i], static_cast<std::int64_t>(i)) << "ticket " << i;
    }
    std::int64_t sum = 0;
    for (rank_t o = 1; o < size(); ++o) {
      const auto u = static_cast<std::size_t>(o);
      EXPECT_EQ(mine[u], o * 10 + 1) << "put of origin " << o;
      EXPECT_EQ(mine[cas0 + u], o + 100) << "compare_and_swap of origin " << o;
      sum += o;
    }
    EXPECT_EQ(mine[acc], sum);
    EXPECT_EQ(mine[tickets], size() - 1);
    EXPECT_EQ(mine[excl], size() - 1);
  }
}

INSTANTIATE_TEST_SUITE_P(AllocateAndUserMemory, PassiveProgress,
                         ::testing::Values(flavor::allocate, flavor::create, flavor::dynamic),
                         [](const ::testing::TestParamInfo<flavor>& i) {
                           return flavor_name(i.param);
                         });

}  // namespace
}  // namespace oneside::test
