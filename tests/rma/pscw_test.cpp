// General active-target synchronization, post/start/complete/wait/test (SYN-8 … SYN-14,
// SYN-30, SYN-31, MEM-9): per-epoch matching with a fast origin, start that never blocks,
// complete that never waits for the target's wait, wait that implies completion at the target
// (active-message accumulates included), test, the assertions, and every misuse raising
// rma_sync or group while leaving the epochs usable (SYN-2, SYN-3, SYN-20, SYN-34, WIN-17).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/runtime/wait.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

using rma::flavor;
using rma::lock_type;
using rma::mode;

class Pscw : public RankTest {
 protected:
  static oneside::group group_of(std::vector<rank_t> world_ranks) {
    return oneside::group(std::move(world_ranks));
  }
};

// Every rank exposes its window to its left neighbour and accesses its right one in the same
// epochs (a process is origin and target at once, SYN-13), over every flavour: put, and an
// accumulate that dynamic and create windows carry to the target's agent. After wait the
// epoch's data is there (SYN-11, MEM-9), and nothing of the next epoch yet.
TEST_F(Pscw, RingOfEpochsOverEveryFlavor) {
  covers("SYN-8", "SYN-9", "SYN-10", "SYN-11", "SYN-13", "SYN-34", "MEM-9");
  constexpr int rounds = 25;
  const oneside::group from_left = group_of({world().to_world(left())});
  const oneside::group to_right = group_of({world().to_world(right())});
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), 2 * sizeof(std::int64_t), 8);
    std::int64_t* mine = tw.local_as<std::int64_t>();
    mine[0] = -1;
    mine[1] = 0;
    settle(tw.win);
    int wrong = 0;
    for (int r = 0; r < rounds; ++r) {
      tw.win.post(from_left);
      tw.win.start(to_right);
      tw.win.put(std::int64_t{r * 100 + rank()}, right(), tw.disp(right(), 0));
      const std::int64_t one = 1;
      tw.win.accumulate(std::span<const std::int64_t>(&one, 1), right(), tw.disp(right(), 1),
                        op::sum);
      tw.win.complete();
      tw.win.wait();
      wrong += mine[0] == r * 100 + left() ? 0 : 1;
      wrong += mine[1] == r + 1 ? 0 : 1;
    }
    EXPECT_EQ(wrong, 0) << "epochs whose data was missing after wait";
    settle(tw.win);
  }
}

// SYN-13's Figure 11.5: rank 0 start({1,2}); rank 1 post({0}); rank 2 post({0,3});
// rank 3 start({2}). Groups differ per process; the epochs still match one to one.
TEST_F(Pscw, FigureElevenFiveGroupsDifferPerProcess) {
  covers("SYN-13", "EX-F5");
  if (size() < 4) GTEST_SKIP() << "needs 4 ranks";
  rma::window w = rma::window::allocate(world(), 2 * sizeof(std::int64_t), 8);
  auto* mine = static_cast<std::int64_t*>(w.base());
  mine[0] = mine[1] = -1;
  settle(w);
  const auto g = [](std::vector<rank_t> r) { return group_of(std::move(r)); };
  for (int round = 0; round < 10; ++round) {
    switch (rank()) {
      case 0:
        w.start(g({1, 2}));
        w.put(std::int64_t{1000 + round}, 1, 0);
        w.put(std::int64_t{2000 + round}, 2, 0);
        w.complete();
        break;
      case 1:
        w.post(g({0}));
        w.wait();
        EXPECT_EQ(mine[0], 1000 + round);
        break;
      case 2:
        w.post(g({0, 3}));
        w.wait();
        EXPECT_EQ(mine[0], 2000 + round);
        EXPECT_EQ(mine[1], 3000 + round);
        break;
      case 3:
        w.start(g({2}));
        w.put(std::int64_t{3000 + round}, 2, 1);
        w.complete();
        break;
      default:
        break;
    }
  }
  settle(w);
}

// A fast origin's second start must not use the target's first post (SYN-13, rule 7 of the
// list), and the target's window is not accessed before its post (SYN-14): the target stores
// a marker only after its first wait, then posts again; the origin's second epoch reads it.
TEST_F(Pscw, SecondStartWaitsForTheSecondPost) {
  covers("SYN-13", "SYN-14", "SYN-8");
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rma::window w = rma::window::allocate(world(), 2 * sizeof(std::int64_t), 8);
  auto* mine = static_cast<std::int64_t*>(w.base());
  mine[0] = mine[1] = 0;
  settle(w);
  if (rank() == 0) {
    const oneside::group origin = group_of({1});
    w.post(origin);
    w.wait();
    EXPECT_EQ(mine[1], 7);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    mine[0] = 42;  // a local store between the epochs
    w.post(origin);
    w.wait();
  } else if (rank() == 1) {
    const oneside::group target = group_of({0});
    w.start(target);
    w.put(std::int64_t{7}, 0, 1);
    w.complete();
    w.start(target);  // returns at once; the get waits for post number two
    std::int64_t got = -1;
    w.get(std::span<std::int64_t>(&got, 1), 0, 0);
    w.complete();
    EXPECT_EQ(got, 42) << "the second epoch read the window before the target's second post";
  }
  settle(w);
}

// start never blocks (SYN-8 allows it, and it is this runtime's choice): an origin whose
// target posts only after hearing from it must not deadlock. complete does not wait for the
// target's wait (SYN-9): the target calls wait only after a message sent after complete.
TEST_F(Pscw, StartAndCompleteNeverWaitForTheTargetsLaterCalls) {
  covers("SYN-8", "SYN-9", "SYN-10", "SYN-14");
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  rma::window w = rma::window::allocate(world(), sizeof(std::int64_t), 8);
  *static_cast<std::int64_t*>(w.base()) = 0;
  settle(w);
  notice_board ch;
  if (rank() == 1) {
    w.start(group_of({0}));  // rank 0 has not posted, and will not until told
    ch.send(0, 0, 1);        // "started"
    w.put(std::int64_t{99}, 0, 0);
    w.complete();
    ch.send(0, 0, 2);  // "completed": only now does rank 0 call wait
  } else if (rank() == 0) {
    EXPECT_TRUE(ch.await(0, 1));
    const auto t0 = std::chrono::steady_clock::now();
    w.post(group_of({1}));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << "post blocked";
    EXPECT_TRUE(ch.await(0, 2));
    w.wait();
    EXPECT_EQ(*static_cast<std::int64_t*>(w.base()), 99);
  }
  barrier(world());
  settle(w);
}

// test is wait without blocking (SYN-12): false while an origin has not completed (no effect:
// the epoch stays open), then true, after which the data is there and the epoch closed;
// another test before a new post is an error. wait returns only after the slowest origin
// completed (SYN-11).
TEST_F(Pscw, TestIsFalseUntilEveryOriginCompleted) {
  covers("SYN-11", "SYN-12", "ERR-11");
  rma::window w = rma::window::allocate(world(), static_cast<std::size_t>(size()) * 8, 8);
  auto* mine = static_cast<std::int64_t*>(w.base());
  std::fill_n(mine, size(), std::int64_t{-1});
  settle(w);
  notice_board ch;
  std::vector<rank_t> others;
  for (rank_t r = 1; r < size(); ++r) others.push_back(r);
  if (rank() == 0) {
    w.post(group_of(others));
    if (!others.empty()) {
      EXPECT_FALSE(w.test()) << "test was true before any origin completed";
      for (rank_t r : others) ch.send(r, 0, 1);  // "go"
    }
    int polls = 0;
    while (!w.test()) {
      ++polls;
      std::this_thread::yield();
    }
    for (rank_t r : others) EXPECT_EQ(load(mine[r]), r * 10) << "from rank " << r;
    expect_error(error_class::rma_sync, "window::test", [&] { (void)w.test(); });
    expect_error(error_class::rma_sync, "window::wait", [&] { w.wait(); });
  } else {
    EXPECT_TRUE(ch.await(0, 1));
    // Later ranks complete later: wait/test must hold out for the slowest.
    std::this_thread::sleep_for(std::chrono::milliseconds(10 * rank()));
    w.start(group_of({0}));
    w.put(std::int64_t{rank() * 10}, 0, rank());
    w.complete();
  }
  settle(w);
}

// With NOCHECK on both sides the handshake is skipped (SYN-30, SYN-31); NOPUT with gets only
// and NOSTORE with no local stores are correct assertions, and give the data of assert 0.
TEST_F(Pscw, AssertionsKeepTheDataOfAssertZero) {
  covers("SYN-29", "SYN-30", "SYN-31");
  rma::window w = rma::window::allocate(world(), 2 * sizeof(std::int64_t), 8);
  auto* mine = static_cast<std::int64_t*>(w.base());
  mine[0] = rank();
  mine[1] = -1;
  settle(w);
  const oneside::group from_left = group_of({world().to_world(left())});
  const oneside::group to_right = group_of({world().to_world(right())});
  // NOCHECK: every post happens before any start (the barrier sees to it).
  w.post(from_left, mode::nocheck);
  barrier(world());
  w.start(to_right, mode::nocheck);
  w.put(std::int64_t{500 + rank()}, right(), 1);
  w.complete();
  w.wait();
  EXPECT_EQ(mine[1], 500 + left());
  // NOPUT (the origins only get) and NOSTORE (no local stores since the last sync).
  w.post(from_left, mode::noput | mode::nostore);
  w.start(to_right);
  std::int64_t got = -1;
  w.get(std::span<std::int64_t>(&got, 1), right(), 0);
  w.complete();
  w.wait();
  EXPECT_EQ(got, right());
  settle(w);
}

// Every misuse raises its class, names the call and changes nothing: the epoch that was open
// stays open and usable.
TEST_F(Pscw, MisuseIsRejectedAndChangesNothing) {
  covers("SYN-2", "SYN-3", "SYN-8", "SYN-9", "SYN-11", "SYN-20", "SYN-23", "SYN-34", "REQ-1",
         "WIN-17", "ERR-11");
  rma::window w = rma::window::allocate(world(), sizeof(std::int64_t), 8);
  auto* mine = static_cast<std::int64_t*>(w.base());
  *mine = -1;
  settle(w);
  const oneside::group from_left = group_of({world().to_world(left())});
  const oneside::group to_right = group_of({world().to_world(right())});
  const oneside::group none;

  expect_error(error_class::rma_sync, "window::complete", [&] { w.complete(); });
  expect_error(error_class::rma_sync, "window::wait", [&] { w.wait(); });
  expect_error(error_class::rma_sync, "window::test", [&] { (void)w.test(); });

  w.post(from_left);
  expect_error(error_class::rma_sync, "window::post", [&] { w.post(from_left); });
  expect_error(error_class::rma_sync, "window::fence", [&] { w.fence(); });
  expect_error(error_class::rma_sync, "window::free", [&] { w.free(); });
  w.start(to_right);
  expect_error(error_class::rma_sync, "window::start", [&] { w.start(to_right); });
  expect_error(error_class::rma_sync, "window::lock", [&] { w.lock(lock_type::shared, right()); });
  expect_error(error_class::rma_sync, "window::lock_all", [&] { w.lock_all(); });
  expect_error(error_class::rma_sync, "window::flush", [&] { w.flush(right()); });
  expect_error(error_class::rma_sync, "window::rput",
               [&] { (void)w.rput(std::span<const std::int64_t>(mine, 1), right(), 0); });
  // The epochs survived every rejected call.
  EXPECT_TRUE(
      expect_ok("put in the start epoch", [&] { w.put(std::int64_t{rank() + 10}, right(), 0); }));
  w.complete();
  w.wait();
  EXPECT_EQ(*mine, left() + 10);

  // A target outside the start group (here: an empty group).
  w.start(none);
  expect_error(error_class::rma_sync, "window::put", [&] { w.put(std::int64_t{-5}, right(), 0); });
  w.complete();
  barrier(world());
  EXPECT_EQ(*mine, left() + 10) << "a rejected put changed the target";

  // post while this process holds a lock on its own window (SYN-20).
  w.lock(lock_type::shared, rank());
  expect_error(error_class::rma_sync, "window::post", [&] { w.post(from_left); });
  w.unlock(rank());
  // lock of one's own window while exposed; lock of another rank while exposed is legal.
  w.post(none);
  expect_error(error_class::rma_sync, "window::lock",
               [&] { w.lock(lock_type::exclusive, rank()); });
  if (size() > 1) {
    EXPECT_TRUE(expect_ok("lock of another rank beside a post epoch", [&] {
      w.lock(lock_type::shared, right());
      w.unlock(right());
    }));
  }
  w.wait();
  settle(w);
}

// A group member outside the window's group is error(group); nothing opens.
TEST_F(Pscw, GroupsMustLieInTheWindowsGroup) {
  covers("SYN-8", "ERR-16");
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  team alone = world().split(rank(), 0);
  rma::window w = rma::window::allocate(alone, sizeof(std::int64_t), 8);
  const oneside::group stranger = group_of({world().to_world(right())});
  expect_error(error_class::group, "window::start", [&] { w.start(stranger); });
  expect_error(error_class::group, "window::post", [&] { w.post(stranger); });
  EXPECT_TRUE(expect_ok("free after the rejected calls (no epoch was opened)", [&] { w.free(); }));
}

// Mode switches with global synchronization in between are legal (SYN-34): fence -> lock_all
// -> PSCW -> fence on one window, each phase checking its data; a fence that issued nothing
// may be followed by start directly.
TEST_F(Pscw, ModeSwitchesThroughEveryMechanism) {
  covers("SYN-34", "SYN-7");
  rma::window w = rma::window::allocate(world(), 3 * sizeof(std::int64_t), 8);
  auto* mine = static_cast<std::int64_t*>(w.base());
  std::fill_n(mine, 3, std::int64_t{-1});
  settle(w);
  w.fence();
  w.put(std::int64_t{rank()}, right(), 0);
  w.fence(mode::nosucceed);
  EXPECT_EQ(mine[0], left());
  w.lock_all();
  w.put(std::int64_t{rank() + 100}, right(), 1);
  w.unlock_all();
  barrier(world());
  EXPECT_EQ(load(mine[1]), left() + 100);
  w.fence();  // issues nothing: start may follow
  w.post(group_of({world().to_world(left())}));
  w.start(group_of({world().to_world(right())}));
  w.put(std::int64_t{rank() + 200}, right(), 2);
  w.complete();
  w.wait();
  EXPECT_EQ(mine[2], left() + 200);
  w.fence();
  w.put(std::int64_t{rank() + 300}, right(), 0);
  w.fence();
  EXPECT_EQ(mine[0], left() + 300);
  settle(w);
}

}  // namespace
}  // namespace oneside::test
