// The unified memory model as programs see it (MEM-1, MEM-3, MEM-11, MEM-16) and the lock
// guarantees that protect loads and stores (SYN-19, SYN-22, SYN-33): remote updates reach a
// target that only polls, local stores reach remote readers, one-byte flags are stable,
// a lock on one's own window waits for the holder, exclusive locks exclude lock_all holders,
// and NOCHECK keeps the data of assert 0.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

using rma::flavor;
using rma::lock_type;
using rma::mode;

class MemoryModel : public RankTest {};

std::int64_t now_ns_shared() {  // CLOCK_MONOTONIC: one clock for every process of the node
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Polls `done` with no oneside call in the loop, for at most 10 s (a hang fails instead).
template <class F>
bool poll_without_runtime(F&& done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

// Every flavour is unified (MEM-1), so a put reaches a target that only loads, with no call
// in its loop, and the target's plain store reaches an origin that polls with get + flush
// (MEM-3).
TEST_F(MemoryModel, UpdatesBecomeVisibleWithoutFurtherCalls) {
  covers("MEM-1", "MEM-3", "MEM-5");
  ONESIDE_SKIP_UNLESS_ALL(size() >= 2, "needs a target and an origin");
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), 2 * sizeof(std::int64_t), 8);
    EXPECT_EQ(tw.win.model(), expected_model());
    std::int64_t* mine = tw.local_as<std::int64_t>();
    mine[0] = mine[1] = 0;
    settle(tw.win);
    tw.win.lock_all();
    if (rank() == 1) {
      tw.win.put(std::int64_t{1}, 0, tw.disp(0, 0));
      tw.win.flush(0);
      std::int64_t seen = 0;
      EXPECT_TRUE(poll_without_runtime([&] {
        tw.win.get(std::span<std::int64_t>(&seen, 1), 0, tw.disp(0, 1));
        tw.win.flush(0);
        return seen == 7;
      })) << "the target's store never reached the origin's get";
    } else if (rank() == 0) {
      EXPECT_TRUE(poll_without_runtime([&] {
        return std::atomic_ref<std::int64_t>(mine[0]).load(std::memory_order_acquire) == 1;
      })) << "the put never reached the polling target";
      std::atomic_ref<std::int64_t>(mine[1]).store(7, std::memory_order_release);
    }
    tw.win.unlock_all();
    settle(tw.win);
  }
}

// A local store published by sync (and a barrier to order the reader after it) is what a
// remote get returns (MEM-11).
TEST_F(MemoryModel, LocalStoreAfterSyncIsSeenByRemoteGet) {
  covers("MEM-11", "SYN-28");
  for (flavor f : world_flavors()) {
    SCOPED_TRACE(flavor_name(f));
    test_window tw = make_window(f, world(), sizeof(std::int64_t), 8);
    std::int64_t* mine = tw.local_as<std::int64_t>();
    *mine = 0;
    settle(tw.win);
    tw.win.lock_all();
    *mine = 1000 + rank();
    tw.win.sync();
    barrier(world());
    std::int64_t got = -1;
    tw.win.get(std::span<std::int64_t>(&got, 1), right(), tw.disp(right(), 0));
    tw.win.flush(right());
    EXPECT_EQ(got, 1000 + right());
    tw.win.unlock_all();
    settle(tw.win);
  }
}

// Polling a one-byte flag is allowed (MEM-16 rule 2): the origin puts a payload, flushes,
// then puts the flag; the target polls the flag with relaxed loads, then syncs and reads the
// payload whole. The flag never reverts once set.
TEST_F(MemoryModel, OneByteFlagPollingSeesTheWholePayload) {
  covers("MEM-16", "MEM-3", "SYN-28");
  ONESIDE_SKIP_UNLESS_ALL(size() >= 2, "needs a target and an origin");
  constexpr std::size_t words = 512;
  constexpr int rounds = 20;
  rma::window w = rma::window::allocate(world(), words * 8 + 64, 1);
  auto* payload = static_cast<std::int64_t*>(w.base());
  auto* flag = static_cast<unsigned char*>(w.base()) + words * 8;
  std::fill_n(payload, words, std::int64_t{0});
  *flag = 0;
  settle(w);
  std::vector<std::int64_t> data(words);
  int torn = 0, reverted = 0;
  w.lock_all();
  for (int r = 1; r <= rounds; ++r) {
    if (rank() == 1) {
      for (std::size_t i = 0; i < words; ++i) data[i] = r * 100000 + static_cast<int>(i);
      w.put(std::span<const std::int64_t>(data), 0, 0);
      w.flush(0);
      const unsigned char one = 1;
      w.put(one, 0, static_cast<rma::disp_t>(words * 8));
      w.flush(0);
    } else if (rank() == 0) {
      std::atomic_ref<unsigned char> f(*flag);
      EXPECT_TRUE(poll_without_runtime([&] { return f.load(std::memory_order_relaxed) == 1; }));
      w.sync();
      for (std::size_t i = 0; i < words; ++i) {
        torn += payload[i] == r * 100000 + static_cast<int>(i) ? 0 : 1;
      }
      for (int k = 0; k < 200; ++k) reverted += f.load(std::memory_order_relaxed) == 1 ? 0 : 1;
      f.store(0, std::memory_order_relaxed);
      w.sync();
    }
    barrier(world());  // the flag is cleared before the next round's put
  }
  w.unlock_all();
  EXPECT_EQ(torn, 0) << "payload words not yet there after the flag was seen";
  EXPECT_EQ(reverted, 0) << "the flag went back to 0 while nobody wrote it";
  settle(w);
}

// lock of one's own window returns only once the lock is held (SYN-19): rank 1 holds the
// exclusive lock on rank 0 for 300 ms and puts; rank 0's own lock returns after rank 1's
// unlock began and then loads the value.
TEST_F(MemoryModel, LockOfOwnWindowWaitsForTheHolder) {
  covers("SYN-19", "SYN-18");
  ONESIDE_SKIP_UNLESS_ALL(size() >= 2, "needs two ranks");
  rma::window w = rma::window::allocate(world(), sizeof(std::int64_t), 8);
  auto* mine = static_cast<std::int64_t*>(w.base());
  *mine = 0;
  settle(w);
  std::vector<std::int64_t> unlock_began(1, 0);
  if (rank() == 1) {
    w.lock(lock_type::exclusive, 0);
    barrier(world());  // held: rank 0 may try now
    w.put(std::int64_t{4242}, 0, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    unlock_began[0] = now_ns_shared();
    w.unlock(0);
  } else {
    barrier(world());
    if (rank() == 0) {
      w.lock(lock_type::exclusive, 0);
      const std::int64_t got_lock = now_ns_shared();
      EXPECT_EQ(*mine, 4242) << "the holder's put was not there when the own lock returned";
      w.unlock(0);
      unlock_began[0] = got_lock;
    }
  }
  const std::int64_t holder_unlock = broadcast(world(), unlock_began[0], 1);
  const std::int64_t own_lock = broadcast(world(), unlock_began[0], 0);
  EXPECT_GE(own_lock, holder_unlock) << "lock of the own window returned while rank 1 held it";
  settle(w);
}

// An exclusive lock excludes lock_all holders (SYN-22): rank 1 writes a two-word record
// (equal words) under lock(exclusive, T) with a pause between the words; rank 0 reads it
// under lock_all and never sees the words differ.
TEST_F(MemoryModel, ExclusiveLockExcludesLockAllReaders) {
  covers("SYN-22", "SYN-18");
  ONESIDE_SKIP_UNLESS_ALL(size() >= 2, "needs a reader and a writer");
  const rank_t t = size() - 1;
  rma::window w = rma::window::allocate(world(), 2 * sizeof(std::int64_t), 8);
  auto* mine = static_cast<std::int64_t*>(w.base());
  mine[0] = mine[1] = 0;
  settle(w);
  constexpr int rounds = 150;
  int broken = 0;
  if (rank() == 1) {
    for (int k = 1; k <= rounds; ++k) {
      w.lock(lock_type::exclusive, t);
      w.put(std::int64_t{k}, t, 0);
      w.flush(t);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
      while (std::chrono::steady_clock::now() < until) {
      }
      w.put(std::int64_t{k}, t, 1);
      w.unlock(t);
    }
  } else if (rank() == 0) {
    for (int k = 0; k < rounds; ++k) {
      std::int64_t rec[2] = {-1, -1};
      w.lock_all();
      w.get(std::span<std::int64_t>(rec, 1), t, 0);
      w.flush(t);
      w.get(std::span<std::int64_t>(rec + 1, 1), t, 1);
      w.unlock_all();
      broken += rec[0] == rec[1] ? 0 : 1;
    }
  }
  EXPECT_EQ(broken, 0) << "records seen half written under lock_all";
  settle(w);
  if (rank() == t) {
    EXPECT_EQ(mine[0], rounds);
  }
}

// NOCHECK keeps the data of assert 0 (SYN-33): lock_all(nocheck) for a phase of flushed puts,
// then lock(exclusive, nocheck) taken by one rank at a time (turns kept by barriers).
TEST_F(MemoryModel, NocheckLocksKeepTheData) {
  covers("SYN-33", "SYN-29");
  rma::window w = rma::window::allocate(world(), 2 * sizeof(std::int64_t), 8);
  auto* mine = static_cast<std::int64_t*>(w.base());
  mine[0] = mine[1] = 0;
  settle(w);
  w.lock_all(mode::nocheck);
  w.put(std::int64_t{rank() + 1}, right(), 0);
  w.flush(right());
  w.unlock_all();
  barrier(world());
  EXPECT_EQ(std::atomic_ref<std::int64_t>(mine[0]).load(std::memory_order_acquire), left() + 1);
  for (rank_t turn = 0; turn < size(); ++turn) {
    if (rank() == turn) {
      w.lock(lock_type::exclusive, 0, mode::nocheck);
      std::int64_t v = -1;
      w.get(std::span<std::int64_t>(&v, 1), 0, 1);
      w.flush(0);
      w.put(v + 1, 0, 1);
      w.unlock(0);
    }
    barrier(world());
  }
  if (rank() == 0) {
    EXPECT_EQ(mine[1], size());
  }
  settle(w);
}

}  // namespace
}  // namespace oneside::test
