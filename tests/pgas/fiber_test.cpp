// Fibers waiting in every kind of oneside wait: a future, wait_until on a signal word, a flush
// (remote completion of rput), lock acquisition (rma::window::lock) and a barrier. Each test is
// built so that the wait can end only if another fiber of the same thread runs while it waits
// (on this rank or, through it, on another): a wait that held its thread would never end and
// the test would fail by its time limit. Also exceptions crossing fibers.
#include <atomic>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/runtime/fiber.hpp>
#include <oneside/runtime/wait.hpp>

#include "rank_test.hpp"

namespace oneside::test {
namespace {

class FiberWaits : public RankTest {};

TEST_F(FiberWaits, FutureWaitLetsTheFulfillingFiberRun) {
  promise<int> p;
  future<int> f = p.get_future();
  int got = 0;
  fiber waiter = fiber::spawn([&] { got = f.wait(); });
  fiber fulfiller = fiber::spawn([&] {
    p.set_value(41 + 1);
    (void)p.finalize();
  });
  waiter.join();
  fulfiller.join();
  EXPECT_EQ(got, 42);
}

TEST_F(FiberWaits, ManyFibersGetFromEveryRank) {
  const int n = size();
  global_ptr<long> mine = symmetric_allocate<long>(64);
  for (int i = 0; i < 64; ++i) mine.local()[i] = rank() * 1000L + i;
  barrier(world());
  std::vector<fiber> fibers;
  long sum = 0;
  for (int i = 0; i < 64; ++i) {
    fibers.push_back(fiber::spawn([&, i] {
      const int from = (rank() + i) % n;
      sum += rget(mine.on(from) + i).wait();
    }));
  }
  for (fiber& f : fibers) f.join();
  long expect = 0;
  for (int i = 0; i < 64; ++i) expect += ((rank() + i) % n) * 1000L + i;
  EXPECT_EQ(sum, expect);
  barrier(world());
  symmetric_free(mine);
}

// Each rank's waiter waits for a signal from its left neighbour's sender fiber, which only
// runs once that neighbour's waiter is suspended.
TEST_F(FiberWaits, SignalWaitLetsTheSendingFiberRun) {
  const int n = size();
  const int right = (rank() + 1) % n;
  global_ptr<std::uint64_t> words = symmetric_allocate<std::uint64_t>(2);  // data, signal
  words.local()[0] = 0;
  words.local()[1] = 0;
  barrier(world());
  bool waiting = false;
  fiber waiter = fiber::spawn([&] {
    waiting = true;
    EXPECT_EQ(signal_wait_until(words.local() + 1, cmp::eq, std::uint64_t{1}), 1U);
    EXPECT_EQ(words.local()[0], static_cast<std::uint64_t>((rank() + n - 1) % n + 100));
  });
  fiber sender = fiber::spawn([&] {
    EXPECT_TRUE(waiting);  // the waiter ran first and is suspended
    rput(static_cast<std::uint64_t>(rank() + 100), words.on(right), words.on(right) + 1,
         std::uint64_t{1})
        .wait();
  });
  waiter.join();
  sender.join();
  barrier(world());
  symmetric_free(words);
}

// Remote completion of puts (a flush of their target on the paths that need one) from many
// fibers at once, with rgets checking what arrived.
TEST_F(FiberWaits, FlushesFromManyFibers) {
  const int n = size();
  const int right = (rank() + 1) % n;
  global_ptr<long> slots = symmetric_allocate<long>(32);
  barrier(world());
  std::vector<fiber> fibers;
  int checked = 0;
  for (int i = 0; i < 32; ++i) {
    fibers.push_back(fiber::spawn([&, i] {
      const long v = rank() * 100L + i;
      rput(v, slots.on(right) + i).wait();
      this_fiber::yield();
      if (rget(slots.on(right) + i).wait() == v) ++checked;
    }));
  }
  for (fiber& f : fibers) f.join();
  quiet();
  EXPECT_EQ(checked, 32);
  barrier(world());
  const int left = (rank() + n - 1) % n;
  for (int i = 0; i < 32; ++i) EXPECT_EQ(slots.local()[i], left * 100L + i);
  barrier(world());
  symmetric_free(slots);
}

// Rank 0 holds an exclusive lock on itself until every other rank's notifier fiber said that
// its rank's locker fiber is waiting for it.
TEST_F(FiberWaits, LockAcquisitionLetsTheNotifyingFiberRun) {
  namespace rma = oneside::rma;
  rma::window w = rma::window::allocate(world(), sizeof(long), sizeof(long));
  global_ptr<std::uint64_t> notes = symmetric_allocate<std::uint64_t>(2);
  notes.local()[0] = 0;
  notes.local()[1] = 0;
  if (rank() == 0) w.lock(rma::lock_type::exclusive, 0);
  barrier(world());
  if (rank() == 0) {
    signal_wait_until(notes.local() + 1, cmp::eq, static_cast<std::uint64_t>(size() - 1));
    w.unlock(0);
  } else {
    bool locked = false;
    fiber locker = fiber::spawn([&] {
      w.lock(rma::lock_type::exclusive, 0);
      locked = true;
      w.unlock(0);
    });
    fiber notifier = fiber::spawn([&] {
      EXPECT_FALSE(locked);
      rput(std::uint64_t{0}, notes.on(0), notes.on(0) + 1, std::uint64_t{1}, signal_op::add).wait();
    });
    locker.join();
    notifier.join();
    EXPECT_TRUE(locked);
  }
  barrier(world());
  symmetric_free(notes);
}

// Rank 0's barrier fiber waits in the barrier; the other ranks reach it only after rank 0's
// second fiber signalled them.
TEST_F(FiberWaits, BarrierLetsTheOtherFibersRun) {
  global_ptr<std::uint64_t> words = symmetric_allocate<std::uint64_t>(2);
  words.local()[0] = 0;
  words.local()[1] = 0;
  barrier(world());
  if (rank() == 0) {
    bool in_barrier = false;
    fiber waiter = fiber::spawn([&] {
      in_barrier = true;
      barrier(world());
    });
    fiber releaser = fiber::spawn([&] {
      EXPECT_TRUE(in_barrier);
      for (int r = 1; r < size(); ++r) {
        rput(std::uint64_t{1}, words.on(r), words.on(r) + 1, std::uint64_t{1}).wait();
      }
    });
    waiter.join();
    releaser.join();
  } else {
    signal_wait_until(words.local() + 1, cmp::eq, std::uint64_t{1});
    barrier(world());
  }
  barrier(world());
  symmetric_free(words);
}

TEST_F(FiberWaits, ExceptionsCrossFibers) {
  future<int> failed =
      make_exception_future<int>(std::make_exception_ptr(std::runtime_error("the future failed")));
  fiber f = fiber::spawn([&] { (void)failed.wait(); });
  EXPECT_THROW(f.join(), std::runtime_error);
  // A fiber joining a failed fiber gets its exception, and passes it on.
  fiber outer = fiber::spawn([] {
    fiber inner = fiber::spawn([] { throw std::out_of_range("inner"); });
    inner.join();
  });
  EXPECT_THROW(outer.join(), std::out_of_range);
}

}  // namespace
}  // namespace oneside::test
