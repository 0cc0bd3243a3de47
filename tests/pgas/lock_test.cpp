// dist_lock (lock.hpp): mutual exclusion under contention from every rank and several threads
// per rank (a non-atomic read-modify-write of a remote counter stays exact, and nobody is ever
// inside together), with the lock word on rank 0 and on the last rank; try_lock's answers
// while the lock is held (also by another thread of the same rank) and once it is free;
// independent locks; misuse and a bad home rank rejected.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/pgas/lock.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

class DistLock : public RankTest {};

template <class T>
global_ptr<T> shared_on(rank_t owner, std::size_t n) {
  global_ptr<T> mine;
  if (world().rank() == owner) {
    mine = allocate<T>(n);
    for (std::size_t i = 0; i < n; ++i) mine.local()[i] = T{};
  }
  const auto addr = broadcast(world(), static_cast<std::uint64_t>(mine.address()), owner);
  return global_ptr<T>(owner, static_cast<std::uintptr_t>(addr));
}

// Every thread of every rank increments a counter on rank `counter_owner` under the lock with
// a separate get and put (no atomic), and checks that nobody else is inside meanwhile.
void contend(dist_lock& lk, rank_t counter_owner, int threads, int rounds) {
  // [0] the counter, [1] how many are inside.
  const global_ptr<std::int64_t> c = shared_on<std::int64_t>(counter_owner, 2);
  barrier(world());
  std::atomic<int> overlaps{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < rounds; ++i) {
        const auto body = [&] {
          if (fetch_add(c + 1, 1).wait() != 0) overlaps.fetch_add(1);
          const std::int64_t v = rget(c).wait();
          // Hold the lock a while, so that the others queue up behind it.
          std::this_thread::sleep_for(std::chrono::microseconds(20));
          rput(v + 1, c).wait();
          atomic_sub(c + 1, 1).wait();
        };
        if ((i + t) % 2 == 0) {
          std::lock_guard guard(lk);
          body();
        } else {
          lk.lock();
          body();
          lk.unlock();
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  barrier(world());
  EXPECT_EQ(overlaps.load(), 0) << "two holders at once";
  EXPECT_EQ(rget(c).wait(), std::int64_t{world().size()} * threads * rounds);
  barrier(world());
  if (world().rank() == counter_owner) deallocate(c);
}

TEST_F(DistLock, OneHolderAtATimeAcrossRanksAndThreads) {
  dist_lock lk;
  EXPECT_EQ(lk.home(), 0);
  contend(lk, size() - 1, 2, 60);
}

TEST_F(DistLock, LockWordOnTheLastRank) {
  dist_lock lk(size() - 1);
  EXPECT_EQ(lk.home(), size() - 1);
  contend(lk, 0, 1, 60);
}

TEST_F(DistLock, TryLockTakesOnlyAFreeLock) {
  dist_lock lk;
  if (rank() == 0) {
    EXPECT_TRUE(lk.try_lock());
    bool other_thread = true;
    std::thread([&] { other_thread = lk.try_lock(); }).join();
    EXPECT_FALSE(other_thread) << "another thread of the holder's rank";
  }
  barrier(world());
  if (rank() != 0) {
    EXPECT_FALSE(lk.try_lock()) << "held by rank 0";
  }
  barrier(world());
  if (rank() == 0) lk.unlock();
  barrier(world());
  for (rank_t r = 0; r < size(); ++r) {
    if (rank() == r) {
      EXPECT_TRUE(lk.try_lock()) << "free";
      lk.unlock();
    }
    barrier(world());
  }
  // lock() blocks; try_lock() does not while the lock is held by lock().
  if (rank() == size() - 1) lk.lock();
  barrier(world());
  if (rank() != size() - 1) {
    EXPECT_FALSE(lk.try_lock());
  }
  barrier(world());
  if (rank() == size() - 1) lk.unlock();
  barrier(world());
}

TEST_F(DistLock, LocksAreIndependent) {
  dist_lock a;
  dist_lock b(size() - 1);
  if (rank() == 0) a.lock();
  barrier(world());
  for (rank_t r = 0; r < size(); ++r) {
    if (rank() == r) {
      EXPECT_TRUE(b.try_lock()) << "b is free while a is held";
      b.unlock();
    }
    barrier(world());
  }
  if (rank() == 0) a.unlock();
  barrier(world());
}

TEST_F(DistLock, MisuseIsRejected) {
  dist_lock lk;
  expect_error(error_class::arg, "unlock", [&] { lk.unlock(); });
  for (rank_t r = 0; r < size(); ++r) {
    if (rank() == r) {
      lk.lock();
      expect_error(error_class::arg, "lock", [&] { lk.lock(); });
      expect_error(error_class::arg, "try_lock", [&] { (void)lk.try_lock(); });
      lk.unlock();
      expect_error(error_class::arg, "unlock", [&] { lk.unlock(); });
    }
    barrier(world());
  }
  // The lock still works.
  contend(lk, 0, 1, 5);
}

TEST_F(DistLock, ABadHomeRankIsRejectedEverywhere) {
  expect_error(error_class::rank, "dist_lock", [&] { dist_lock bad(size()); });
  expect_error(error_class::rank, "dist_lock", [&] { dist_lock bad(-1); });
  dist_lock fine(0);  // nothing was left half-made: the next collective one works
  EXPECT_EQ(fine.home(), 0);
}

}  // namespace
}  // namespace oneside::test
