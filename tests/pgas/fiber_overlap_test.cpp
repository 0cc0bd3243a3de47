// Remote accesses that stay in flight inside a fiber (the MPI transport's gets and puts): the
// fiber's wait suspends it and the thread's other fibers run and issue theirs, so that one
// flush completes many (apps/chase). On the shared-memory path the same calls complete at once;
// what every path must show is the right data and errors that reach the joiner with nothing
// changed. (Checked: with the fiber-aware get of pgas/comm/communication.cpp disabled, the
// mpi variants fail: get(p) and a span rget's wait then hold the thread.)
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/runtime/fiber.hpp>

#include "rank_test.hpp"

namespace oneside::test {
namespace {

class FiberOverlap : public RankTest {
 protected:
  // Whether remote gets stay in flight until a flush here (every peer through MPI).
  static bool gets_are_deferred() {
    const char* t = std::getenv("ONESIDE_TRANSPORT");
    return t != nullptr && std::string_view(t) == "mpi";
  }
};

// A value get (rget(p).wait(), get(p)) that is in flight suspends its fiber: the second fiber
// runs before the first one's get returns.
TEST_F(FiberOverlap, ValueGetLetsTheOtherFibersRun) {
  const int n = size();
  global_ptr<std::uint64_t> mine = symmetric_allocate<std::uint64_t>(2);
  mine.local()[0] = 7U * static_cast<std::uint64_t>(rank()) + 1U;
  mine.local()[1] = 7U * static_cast<std::uint64_t>(rank()) + 2U;
  barrier(world());
  const int target = (rank() + 1) % n;
  bool other_ran = false;
  bool other_ran_first = false;
  bool other_ran_first_get = false;
  bool reader_done = false;
  std::uint64_t got = 0;
  std::uint64_t got_get = 0;
  fiber reader = fiber::spawn([&] {
    got = rget(mine.on(target)).wait();
    other_ran_first = other_ran;
    other_ran = false;
    got_get = get(mine.on(target) + 1);
    other_ran_first_get = other_ran;
    reader_done = true;
  });
  fiber other = fiber::spawn([&] {
    while (!reader_done) {
      other_ran = true;
      this_fiber::yield();
    }
  });
  reader.join();
  other.join();
  EXPECT_EQ(got, 7U * static_cast<std::uint64_t>(target) + 1U);
  EXPECT_EQ(got_get, 7U * static_cast<std::uint64_t>(target) + 2U);
  if (gets_are_deferred() && target != rank()) {
    EXPECT_TRUE(other_ran_first) << "rget(p).wait() in a fiber held its thread";
    EXPECT_TRUE(other_ran_first_get) << "get(p) in a fiber held its thread";
  }
  barrier(world());
  symmetric_free(mine);
}

// A future<>'s wait (span get, put) in flight suspends its fiber too.
TEST_F(FiberOverlap, FutureWaitLetsTheOtherFibersRun) {
  const int n = size();
  global_ptr<std::uint64_t> mine = symmetric_allocate<std::uint64_t>(4);
  for (int i = 0; i < 4; ++i)
    mine.local()[i] = 100U * static_cast<std::uint64_t>(rank()) + static_cast<std::uint64_t>(i);
  barrier(world());
  const int target = (rank() + 1) % n;
  bool other_ran = false;
  bool other_ran_first = false;
  std::vector<std::uint64_t> got(2);
  fiber reader = fiber::spawn([&] {
    rget(mine.on(target), std::span<std::uint64_t>(got)).wait();
    other_ran_first = other_ran;
  });
  fiber other = fiber::spawn([&] { other_ran = true; });
  reader.join();
  other.join();
  EXPECT_EQ(got[0], 100U * static_cast<std::uint64_t>(target));
  EXPECT_EQ(got[1], 100U * static_cast<std::uint64_t>(target) + 1U);
  if (gets_are_deferred() && target != rank()) {
    EXPECT_TRUE(other_ran_first);
  }
  // Puts from fibers: visible at the target once their futures are ready.
  const std::uint64_t mark = 5000U + static_cast<std::uint64_t>(rank());
  fiber writer = fiber::spawn([&] { rput(mark, mine.on(target) + 3).wait(); });
  writer.join();
  barrier(world());
  const int left = (rank() + n - 1) % n;
  EXPECT_EQ(mine.local()[3], 5000U + static_cast<std::uint64_t>(left));
  barrier(world());
  symmetric_free(mine);
}

// Many fibers, many hops each, over every rank: every value right (a chase in miniature).
TEST_F(FiberOverlap, ManyFibersChaseOverEveryRank) {
  const int n = size();
  constexpr int per_rank = 257;
  global_ptr<std::uint64_t> mine = symmetric_allocate<std::uint64_t>(per_rank);
  const auto total = static_cast<std::uint64_t>(per_rank) * static_cast<std::uint64_t>(n);
  // Global slot g holds g * 3 + 1 mod total: the next slot to visit.
  for (int i = 0; i < per_rank; ++i) {
    const std::uint64_t g =
        static_cast<std::uint64_t>(rank()) * per_rank + static_cast<std::uint64_t>(i);
    mine.local()[i] = (g * 3U + 1U) % total;
  }
  barrier(world());
  auto at = [&](std::uint64_t g) {
    return mine.on(static_cast<rank_t>(g / per_rank)) + static_cast<std::ptrdiff_t>(g % per_rank);
  };
  constexpr int fibers = 64;
  constexpr int hops = 40;
  std::vector<std::uint64_t> ends(fibers);
  std::vector<fiber> walkers;
  for (int f = 0; f < fibers; ++f) {
    walkers.push_back(fiber::spawn([&, f] {
      std::uint64_t g =
          (static_cast<std::uint64_t>(rank()) * 31U + static_cast<std::uint64_t>(f)) % total;
      for (int h = 0; h < hops; ++h) g = rget(at(g)).wait();
      ends[static_cast<std::size_t>(f)] = g;
    }));
  }
  for (fiber& w : walkers) w.join();
  for (int f = 0; f < fibers; ++f) {
    std::uint64_t g =
        (static_cast<std::uint64_t>(rank()) * 31U + static_cast<std::uint64_t>(f)) % total;
    for (int h = 0; h < hops; ++h) g = (g * 3U + 1U) % total;
    EXPECT_EQ(ends[static_cast<std::size_t>(f)], g) << "fiber " << f;
  }
  barrier(world());
  symmetric_free(mine);
}

// A rejected get in a fiber reaches the joiner with its class and message; the destination
// and the other fibers' gets are untouched.
TEST_F(FiberOverlap, RejectedGetInAFiberReachesTheJoiner) {
  global_ptr<std::uint64_t> mine = symmetric_allocate<std::uint64_t>(1);
  mine.local()[0] = 11;
  barrier(world());
  std::uint64_t dst = 99;
  std::uint64_t good = 0;
  fiber bad =
      fiber::spawn([&] { dst = rget(global_ptr<std::uint64_t>(size(), mine.address())).wait(); });
  fiber fine = fiber::spawn([&] { good = rget(mine.on((rank() + 1) % size())).wait(); });
  try {
    bad.join();
    ADD_FAILURE() << "a get from rank " << size() << " was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.error_class(), error_class::rank);
    EXPECT_NE(std::string_view(e.what()).find("rget"), std::string_view::npos) << e.what();
  }
  fine.join();
  EXPECT_EQ(dst, 99U);
  EXPECT_EQ(good, 11U);
  fiber null_get = fiber::spawn([&] { dst = rget(global_ptr<std::uint64_t>()).wait(); });
  try {
    null_get.join();
    ADD_FAILURE() << "a get through a null pointer was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.error_class(), error_class::arg);
  }
  EXPECT_EQ(dst, 99U);
  barrier(world());
  symmetric_free(mine);
}

}  // namespace
}  // namespace oneside::test
