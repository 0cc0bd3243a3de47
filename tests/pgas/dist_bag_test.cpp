// dist_bag (dist_bag.hpp): pushes from every rank to every rank arrive once each, intact;
// pop_local/drain; is_done() is false while an item is anywhere (a part, an unflushed
// aggregator buffer) and true on every rank at once when the work is over; a worked example
// that spawns work recursively to random ranks until depth d and terminates with exactly the
// tree's items processed; bad input refused with nothing pushed.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "pgas_test.hpp"

namespace oneside::test {
namespace {

class DistBag : public PgasTest {};

struct item {  // trivially copyable
  std::int32_t from;
  std::int32_t seq;
};

TEST_F(DistBag, PushesFromEveryRankArriveOnceEachAndDrainEmptiesThePart) {
  dist_bag<item> bag(world(), {.buffer_bytes = 256, .buffers = 2});  // ships while filling
  const int n = 50;
  for (int i = 0; i < n; ++i) {
    for (rank_t r = 0; r < size(); ++r) bag.push(r, item{rank(), i});
  }
  bag.flush();
  barrier(world());
  EXPECT_EQ(bag.local_size(), static_cast<std::size_t>(n * size()));
  std::vector<std::int64_t> seq_sum(static_cast<std::size_t>(size()), 0);
  std::vector<int> count(static_cast<std::size_t>(size()), 0);
  const std::optional<item> first = bag.pop_local();
  ASSERT_TRUE(first.has_value());
  const auto take = [&](item it) {
    count[static_cast<std::size_t>(it.from)] += 1;
    seq_sum[static_cast<std::size_t>(it.from)] += it.seq;
  };
  take(*first);
  EXPECT_EQ(bag.drain(take), static_cast<std::size_t>(n * size() - 1));
  EXPECT_EQ(bag.local_size(), 0U);
  EXPECT_FALSE(bag.pop_local().has_value());
  for (rank_t r = 0; r < size(); ++r) {
    EXPECT_EQ(count[static_cast<std::size_t>(r)], n) << "items from rank " << r;
    EXPECT_EQ(seq_sum[static_cast<std::size_t>(r)], n * (n - 1) / 2) << "from rank " << r;
  }
  EXPECT_TRUE(bag.is_done());
}

TEST_F(DistBag, IsDoneIsFalseWhileAnItemIsInAPartOrInFlight) {
  dist_bag<std::string> bag;
  EXPECT_TRUE(bag.is_done()) << "an empty bag";
  // One item in rank 0's part, pushed by the last rank through its (unflushed) aggregator: is_done
  // flushes it there and must see it.
  if (rank() == size() - 1) bag.push(0, "payload from the last rank");
  EXPECT_FALSE(bag.is_done());
  EXPECT_FALSE(bag.is_done()) << "is_done took the item away";
  if (rank() == 0) {
    const std::optional<std::string> got = bag.pop_local();
    EXPECT_EQ(got, std::optional<std::string>("payload from the last rank"));
  }
  EXPECT_TRUE(bag.is_done());
  // An item only in this rank's part.
  if (rank() == size() / 2) bag.push_local("local");
  EXPECT_FALSE(bag.is_done());
  EXPECT_EQ(bag.drain([](const std::string& s) { EXPECT_EQ(s, "local"); }),
            rank() == size() / 2 ? 1U : 0U);
  EXPECT_TRUE(bag.is_done());
}

// The worked example: a tree spawned to random ranks. An item (depth, id) has two children
// (depth + 1, 2 id + 1 / 2 id + 2) until depth d, each pushed to a rank chosen from its id.
struct task {
  std::int32_t depth;
  std::uint64_t id;
};

TEST_F(DistBag, WorkSpawnedRecursivelyToRandomRanksTerminatesWithEveryItemProcessedOnce) {
  const int depth = 9;  // 2^10 - 1 items
  dist_bag<task> bag(world(), {.buffer_bytes = 512, .buffers = 2});
  if (rank() == 0) bag.push_local(task{0, 0});
  std::uint64_t id_sum = 0;
  std::uint64_t leaves = 0;
  const std::size_t mine = bag.process_all([&](task t) {
    id_sum += t.id;
    if (t.depth == depth) {
      ++leaves;
      return;
    }
    for (std::uint64_t c : {2 * t.id + 1, 2 * t.id + 2}) {
      std::mt19937_64 g(c);
      bag.push(static_cast<rank_t>(g() % static_cast<std::uint64_t>(size())), task{t.depth + 1, c});
    }
  });
  const std::uint64_t items = (std::uint64_t{1} << (depth + 1)) - 1;
  EXPECT_EQ(allreduce(world(), static_cast<std::uint64_t>(mine), op::sum), items);
  EXPECT_EQ(allreduce(world(), leaves, op::sum), std::uint64_t{1} << depth);
  // The ids are 0 .. items - 1, each once.
  EXPECT_EQ(allreduce(world(), id_sum, op::sum), items * (items - 1) / 2);
  EXPECT_EQ(bag.local_size(), 0U);
}

TEST_F(DistBag, BadInputIsRefusedAndNothingIsPushed) {
  dist_bag<std::string> bag(world(), {.buffer_bytes = 256, .buffers = 2});
  expect_error(error_class::rank, "dist_bag::push", [&] { bag.push(size(), "x"); });
  expect_error(error_class::rank, "dist_bag::push", [&] { bag.push(-1, "x"); });
  if (size() > 1) {
    expect_error(error_class::arg, "dist_bag::push",
                 [&] { bag.push(right(), std::string(1000, 'x')); });
  }
  expect_error(error_class::comm, "dist_bag", [] { dist_bag<int> bad(team{}); });
  EXPECT_TRUE(bag.is_done()) << "a refused push left an item or a count";
}

}  // namespace
}  // namespace oneside::test
