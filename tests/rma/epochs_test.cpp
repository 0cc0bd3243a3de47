// The synchronization this issue delivers (fence, lock/unlock, lock_all/unlock_all, flush*,
// sync) and its epoch rules: RMA only inside an access epoch (SYN-1), which epochs may be open
// together (SYN-2, SYN-34), what each closing or flushing call completes and where (SYN-5,
// SYN-16, SYN-17, SYN-24 … SYN-27, MEM-7, MEM-10), put/get ordering needing a flush (SEM-7),
// and every misuse raising rma_sync, locktype or assert while leaving the window usable
// (ERR-8, ERR-9, ERR-11).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

using rma::flavor;
using rma::lock_type;
using rma::mode;

class Epochs : public RankTest {
 protected:
  // A window of `slots` int64 per rank, every slot -1, published.
  static rma::window fresh(std::size_t slots) {
    rma::window w = rma::window::allocate(world(), slots * sizeof(std::int64_t), 8);
    std::fill_n(static_cast<std::int64_t*>(w.base()), slots, std::int64_t{-1});
    settle(w);
    return w;
  }
  static std::int64_t* slots_of(rma::window& w) { return static_cast<std::int64_t*>(w.base()); }
};

TEST_F(Epochs, RmaNeedsAnAccessEpoch) {
  covers("SYN-1", "SYN-32", "ERR-11");
  rma::window w = fresh(2);
  const std::int64_t v = rank();
  std::int64_t r = 0;
  expect_error(error_class::rma_sync, "put", [&] { w.put(v, right(), 0); });
  expect_error(error_class::rma_sync, "get",
               [&] { w.get(std::span<std::int64_t>(&r, 1), right(), 0); });
  expect_error(error_class::rma_sync, "accumulate",
               [&] { w.accumulate(std::span<const std::int64_t>(&v, 1), right(), 0, op::sum); });
  expect_error(error_class::rma_sync, "fetch_and_op",
               [&] { (void)w.fetch_and_op(v, right(), 0, op::sum); });
  expect_error(error_class::rma_sync, "compare_and_swap",
               [&] { (void)w.compare_and_swap(v, v, right(), 0); });
  w.fence(mode::nosucceed);
  expect_error(error_class::rma_sync, "put", [&] { w.put(v, right(), 0); });
  w.fence();
  expect_ok("put after fence(0)", [&] { w.put(v, right(), 0); });
  w.fence();
  settle(w);
  EXPECT_EQ(slots_of(w)[0], left());
  EXPECT_EQ(r, 0);
}

TEST_F(Epochs, LocksOnDistinctTargetsMayBeHeldTogether) {
  covers("SYN-2", "SYN-16");
  ONESIDE_SKIP_UNLESS_ALL(size() >= 3, "needs two targets other than oneself");
  rma::window w = fresh(2);
  const rank_t a = right(), b = (rank() + 2) % size();
  w.lock(lock_type::shared, a);
  w.lock(lock_type::exclusive, b);
  w.put(std::int64_t{100 + rank()}, a, 0);
  w.put(std::int64_t{200 + rank()}, b, 1);
  w.unlock(a);
  w.unlock(b);
  settle(w);
  EXPECT_EQ(slots_of(w)[0], 100 + left());
  EXPECT_EQ(slots_of(w)[1], 200 + (rank() + size() - 2) % size());
}

TEST_F(Epochs, NestedAndMixedPassiveEpochsAreRejected) {
  covers("SYN-2", "SYN-34", "ERR-11");
  rma::window w = fresh(1);
  const rank_t a = right();
  w.lock(lock_type::shared, a);
  expect_error(error_class::rma_sync, "lock", [&] { w.lock(lock_type::shared, a); });
  expect_error(error_class::rma_sync, "lock_all", [&] { w.lock_all(); });
  w.unlock(a);
  w.lock_all();
  expect_error(error_class::rma_sync, "lock_all", [&] { w.lock_all(); });
  expect_error(error_class::rma_sync, "lock", [&] { w.lock(lock_type::shared, a); });
  expect_error(error_class::rma_sync, "fence", [&] { w.fence(); });
  w.unlock_all();
  // A fence epoch with an operation pending cannot turn into a lock epoch.
  w.fence();
  w.put(std::int64_t{rank()}, a, 0);
  expect_error(error_class::rma_sync, "lock_all", [&] { w.lock_all(); });
  expect_error(error_class::rma_sync, "lock", [&] { w.lock(lock_type::shared, a); });
  w.fence();
  // A fence that issued nothing opened no epoch: lock_all may follow (rule 9 of the list).
  expect_ok("lock_all after a fence with no RMA", [&] {
    w.lock_all();
    w.unlock_all();
  });
  settle(w);
  EXPECT_EQ(slots_of(w)[0], left());
  barrier(world());  // every rank has read its slot before the next puts
  // Still usable.
  w.lock(lock_type::exclusive, a);
  w.put(std::int64_t{50 + rank()}, a, 0);
  w.unlock(a);
  settle(w);
  EXPECT_EQ(slots_of(w)[0], 50 + left());
}

TEST_F(Epochs, DifferentWindowsMayBeLockedAtOnce) {
  covers("SYN-2");
  rma::window w1 = fresh(1);
  rma::window w2 = fresh(1);
  w1.lock_all();
  w2.lock_all();
  w1.put(std::int64_t{10 + rank()}, right(), 0);
  w2.put(std::int64_t{20 + rank()}, right(), 0);
  w2.unlock_all();
  w1.unlock_all();
  settle(w1);
  settle(w2);
  EXPECT_EQ(slots_of(w1)[0], 10 + left());
  EXPECT_EQ(slots_of(w2)[0], 20 + left());
}

TEST_F(Epochs, FenceEpochsNeverShowStaleValues) {
  covers("SYN-5", "SYN-6", "SYN-7", "MEM-8");
  constexpr int iterations = 25;
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), static_cast<std::size_t>(size()) * 8, 8);
    std::int64_t* slot = tw.local_as<std::int64_t>();
    std::fill_n(slot, size(), std::int64_t{-1});
    settle(tw.win);
    int stale = 0;
    for (int it = 0; it < iterations; ++it) {
      tw.win.fence();
      tw.win.put(std::int64_t{it}, right(), tw.disp(right(), rank()));
      tw.win.fence();
      stale += slot[left()] == it ? 0 : 1;
    }
    EXPECT_EQ(stale, 0) << "iterations whose closing fence left an old value";
    settle(tw.win);
  }
}

TEST_F(Epochs, LockArgumentsAreChecked) {
  covers("SYN-15", "SYN-29", "ERR-8", "ERR-9", "ERR-11");
  rma::window w = fresh(1);
  const rank_t a = right();
  expect_error(error_class::locktype, "lock", [&] { w.lock(static_cast<lock_type>(7), a); });
  expect_error(error_class::rank, "lock", [&] { w.lock(lock_type::shared, size()); });
  expect_error(error_class::assert_, "lock",
               [&] { w.lock(lock_type::shared, a, static_cast<mode>(1U << 20)); });
  expect_error(error_class::assert_, "lock_all", [&] { w.lock_all(static_cast<mode>(1U << 7)); });
  expect_error(error_class::assert_, "fence", [&] { w.fence(static_cast<mode>(1U << 20)); });
  // Inside lock(a) only a may be accessed.
  w.lock(lock_type::shared, a);
  if (size() >= 2) {
    expect_error(error_class::rma_sync, "put", [&] { w.put(std::int64_t{-5}, rank(), 0); });
  }
  w.put(std::int64_t{rank()}, a, 0);
  w.unlock(a);
  settle(w);
  EXPECT_EQ(slots_of(w)[0], left());
}

TEST_F(Epochs, UnlockCompletesAtTheTarget) {
  covers("SYN-16", "MEM-10", "ERR-11");
  rma::window w = fresh(1);
  const rank_t target = 1 % size(), writer = 0, reader = 2 % size();
  if (rank() == writer) {
    w.lock(lock_type::exclusive, target);
    w.put(std::int64_t{4242}, target, 0);
    w.unlock(target);
  }
  barrier(world());  // the message "unlock has returned"
  if (rank() == reader) {
    std::int64_t got = 0;
    w.lock(lock_type::shared, target);
    w.get(std::span<std::int64_t>(&got, 1), target, 0);
    w.unlock(target);
    EXPECT_EQ(got, 4242);
  }
  expect_error(error_class::rma_sync, "unlock", [&] { w.unlock(right()); });
  settle(w);
}

TEST_F(Epochs, LockAllByOneRankReachesEveryone) {
  covers("SYN-17", "MEM-10", "MEM-12", "ERR-11");
  rma::window w = fresh(1);
  if (rank() == 0) {
    w.lock_all();
    for (rank_t t = 0; t < size(); ++t) w.put(std::int64_t{1000 + t}, t, 0);
    if (size() >= 2) {
      expect_error(error_class::rma_sync, "unlock", [&] { w.unlock(1); });
    }
    w.unlock_all();
  }
  barrier(world());
  // The owner's lock on its own window makes public updates visible to its loads.
  w.lock(lock_type::shared, rank());
  EXPECT_EQ(slots_of(w)[0], 1000 + rank());
  w.unlock(rank());
  expect_error(error_class::rma_sync, "unlock_all", [&] { w.unlock_all(); });
  settle(w);
}

TEST_F(Epochs, FlushAndSyncNeedAPassiveEpochCoveringTheTarget) {
  covers("SYN-23", "ERR-11");
  rma::window w = fresh(1);
  const rank_t a = right();
  const auto all_flushes_fail = [&](const std::string& where) {
    SCOPED_TRACE(where);
    expect_error(error_class::rma_sync, "flush", [&] { w.flush(a); });
    expect_error(error_class::rma_sync, "flush_all", [&] { w.flush_all(); });
    expect_error(error_class::rma_sync, "flush_local", [&] { w.flush_local(a); });
    expect_error(error_class::rma_sync, "flush_local_all", [&] { w.flush_local_all(); });
    expect_error(error_class::rma_sync, "sync", [&] { w.sync(); });
  };
  all_flushes_fail("no epoch");
  w.fence();
  all_flushes_fail("fence epoch");
  w.fence(mode::nosucceed);
  w.lock(lock_type::shared, a);
  if (size() >= 2) {
    expect_error(error_class::rma_sync, "flush", [&] { w.flush(rank()); });
    expect_error(error_class::rma_sync, "flush_local", [&] { w.flush_local(rank()); });
  }
  expect_ok("flush family inside lock(a)", [&] {
    w.flush(a);
    w.flush_local(a);
    w.flush_all();
    w.flush_local_all();
    w.sync();
  });
  w.unlock(a);
  settle(w);
}

TEST_F(Epochs, FlushCompletesAtTheTargetAndKeepsTheEpochOpen) {
  covers("SYN-24", "SYN-25", "MEM-10", "MEM-12", "SYN-28");
  const auto p = static_cast<std::size_t>(size());
  rma::window w = fresh(p + 1);
  std::int64_t* mine = slots_of(w);
  w.lock_all();
  w.put(std::int64_t{7000 + rank()}, right(), static_cast<disp_t>(p));
  w.flush(right());
  barrier(world());  // the message "flushed"
  w.sync();
  EXPECT_EQ(mine[p], 7000 + left()) << "flush(target)";
  for (rank_t t = 0; t < size(); ++t) w.put(std::int64_t{rank() * 100 + t}, t, rank());
  w.flush_all();
  barrier(world());
  w.sync();
  for (rank_t q = 0; q < size(); ++q) {
    EXPECT_EQ(mine[q], q * 100 + rank()) << "flush_all, from rank " << q;
  }
  w.unlock_all();
  settle(w);
}

// flush and unlock complete an operation at the target: also an accumulate that the target's
// agent applies (dynamic windows over user memory), not just "sent" (rule 3 of the list).
TEST_F(Epochs, FlushAndUnlockWaitUntilAccumulatesAreApplied) {
  covers("SYN-24", "SYN-16", "MEM-10", "SEM-12");
  constexpr int rounds = 30;
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), 2 * sizeof(std::int64_t), 8);
    std::int64_t* mine = tw.local_as<std::int64_t>();
    mine[0] = 0;
    mine[1] = 0;
    settle(tw.win);
    const std::int64_t one = 1;
    const std::vector<std::int64_t> ones(1, one);
    int late = 0;
    for (int r = 0; r < rounds; ++r) {
      tw.win.lock_all();
      tw.win.accumulate(std::span<const std::int64_t>(ones), right(), tw.disp(right(), 0), op::sum);
      tw.win.flush(right());
      barrier(world());  // "flushed"
      tw.win.sync();
      late += mine[0] == r + 1 ? 0 : 1;
      barrier(world());
      tw.win.unlock_all();
      tw.win.lock(lock_type::shared, right());
      tw.win.accumulate(std::span<const std::int64_t>(ones), right(), tw.disp(right(), 1), op::sum);
      tw.win.unlock(right());
      barrier(world());  // "unlocked"
      tw.win.lock(lock_type::shared, rank());
      late += mine[1] == r + 1 ? 0 : 1;
      tw.win.unlock(rank());
      barrier(world());
    }
    EXPECT_EQ(late, 0) << "rounds where the accumulate was not applied when flush/unlock returned";
    settle(tw.win);
  }
}

TEST_F(Epochs, EveryCompletingCallDeliversAGet) {
  covers("MEM-7", "SYN-26", "SYN-27", "SYN-16", "SYN-17", "SYN-5");
  constexpr std::size_t k = 64;
  rma::window w = rma::window::allocate(world(), k * sizeof(std::int64_t), 8);
  for (std::size_t i = 0; i < k; ++i) {
    slots_of(w)[i] = rank() * 1000 + static_cast<std::int64_t>(i);
  }
  settle(w);
  const rank_t t = right();
  const auto fine = [&](const std::vector<std::int64_t>& got) {
    for (std::size_t i = 0; i < k; ++i) {
      if (got[i] != t * 1000 + static_cast<std::int64_t>(i)) return false;
    }
    return true;
  };
  std::vector<std::int64_t> got(k, 0);
  const auto get = [&] { w.get(std::span<std::int64_t>(got), t, 0); };
  const auto reset = [&] { std::fill(got.begin(), got.end(), 0); };

  reset();
  w.fence();
  get();
  w.fence();
  EXPECT_TRUE(fine(got)) << "fence";
  reset();
  w.fence(mode::nosucceed);
  w.lock(lock_type::shared, t);
  get();
  w.unlock(t);
  EXPECT_TRUE(fine(got)) << "unlock";
  reset();
  w.lock_all();
  get();
  w.unlock_all();
  EXPECT_TRUE(fine(got)) << "unlock_all";
  w.lock_all();
  reset();
  get();
  w.flush(t);
  EXPECT_TRUE(fine(got)) << "flush";
  reset();
  get();
  w.flush_all();
  EXPECT_TRUE(fine(got)) << "flush_all";
  reset();
  get();
  w.flush_local(t);
  EXPECT_TRUE(fine(got)) << "flush_local";
  reset();
  get();
  w.flush_local_all();
  EXPECT_TRUE(fine(got)) << "flush_local_all";
  // Gets from every rank, then one flush_local_all (SYN-27).
  std::vector<std::int64_t> from_all(k * static_cast<std::size_t>(size()), 0);
  for (rank_t q = 0; q < size(); ++q) {
    w.get(std::span<std::int64_t>(from_all).subspan(static_cast<std::size_t>(q) * k, k), q, 0);
  }
  w.flush_local_all();
  int wrong = 0;
  for (rank_t q = 0; q < size(); ++q) {
    for (std::size_t i = 0; i < k; ++i) {
      wrong +=
          from_all[static_cast<std::size_t>(q) * k + i] == q * 1000 + static_cast<std::int64_t>(i)
              ? 0
              : 1;
    }
  }
  EXPECT_EQ(wrong, 0) << "gets from every rank after flush_local_all";
  w.unlock_all();
  settle(w);
}

TEST_F(Epochs, FlushLocalFreesTheOriginBufferWithoutChangingWhatArrives) {
  covers("SYN-26", "COM-2", "SEM-7");
  rma::window w = fresh(2);
  const rank_t t = right();
  std::int64_t buf = 900 + rank();
  w.lock_all();
  w.put(std::span<const std::int64_t>(&buf, 1), t, 0);
  w.flush_local(t);
  buf = -900;  // the origin buffer may be reused after local completion
  w.flush(t);
  // A put, then flush, then a get of the same location returns the put (SEM-7 needs the flush).
  std::int64_t back = 0;
  w.get(std::span<std::int64_t>(&back, 1), t, 0);
  w.flush(t);
  EXPECT_EQ(back, 900 + rank());
  for (int i = 0; i < 20; ++i) {
    w.put(std::int64_t{i * 3 + rank()}, t, 1);
    w.flush(t);
    std::int64_t x = -1;
    w.get(std::span<std::int64_t>(&x, 1), t, 1);
    w.flush(t);
    EXPECT_EQ(x, i * 3 + rank()) << "round " << i;
  }
  w.unlock_all();
  settle(w);
  EXPECT_EQ(slots_of(w)[0], 900 + left());
}

}  // namespace
}  // namespace oneside::test
