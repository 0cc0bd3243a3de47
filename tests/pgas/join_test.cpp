// Requests and futures joined (issue 19): an rma window's request-based rput/rget become
// futures (to_future) that then() and when_all take, when_all mixes requests with futures and
// takes a span of requests; async and async_on compute on the rank's arena while requests are in
// flight, and their results join the requests'.
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <span>
#include <thread>
#include <tuple>
#include <vector>

#include <oneside/oneside.hpp>

#include "pgas_test.hpp"

namespace oneside::test {
namespace {

class Join : public PgasTest {
 protected:
  static constexpr std::size_t n = 256;

  // A window of n longs per rank, zeroed, inside lock_all; each rank's block of values is
  // rank * 1000 + i.
  void SetUp() override {
    win_ = rma::window::allocate(world(), n * sizeof(long), sizeof(long));
    std::fill_n(static_cast<long*>(win_.base()), n, 0L);
    mine_.resize(n);
    std::iota(mine_.begin(), mine_.end(), static_cast<long>(rank()) * 1000);
    barrier(world());
    win_.lock_all();
  }
  void TearDown() override {
    win_.unlock_all();
    barrier(world());
    win_.free();
    RankTest::TearDown();
  }
  long expected_from(rank_t r, std::size_t i) const {
    return static_cast<long>(r) * 1000 + static_cast<long>(i);
  }

  rma::window win_;
  std::vector<long> mine_;
};

TEST_F(Join, ARequestBecomesAFuture) {
  // Put this rank's block into the right neighbour's window through a request's future.
  future<> put = to_future(win_.rput(std::span<const long>(mine_), right(), 0));
  put.wait();
  EXPECT_TRUE(put.is_ready());
  win_.flush(right());
  barrier(world());
  const long* window = static_cast<const long*>(win_.base());
  int wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += window[i] != expected_from(left(), i) ? 1 : 0;
  EXPECT_EQ(wrong, 0);

  // Read it back from the right neighbour; a continuation sums it.
  std::vector<long> back(n, -1);
  const future<long> sum = to_future(win_.rget(std::span<long>(back), right(), 0)).then([&back] {
    return std::accumulate(back.begin(), back.end(), 0L);
  });
  EXPECT_EQ(sum.wait(), std::accumulate(mine_.begin(), mine_.end(), 0L));

  // A null request is a ready future.
  EXPECT_TRUE(to_future(rma::request()).is_ready());
  barrier(world());
}

TEST_F(Join, WhenAllMixesRequestsAndFutures) {
  std::vector<long> from_right(n, -1);
  std::vector<long> from_left(n, -1);
  // Put mine to the right, then every rank reads its neighbours' windows once all puts landed.
  when_all(to_future(win_.rput(std::span<const long>(mine_), right(), 0)), make_future()).wait();
  win_.flush_all();
  barrier(world());
  const future<std::tuple<int, double>> all =
      when_all(win_.rget(std::span<long>(from_right), right(), 0), make_future(7),
               win_.rget(std::span<long>(from_left), left(), 0), make_future(2.5));
  const auto [i, d] = all.wait();
  EXPECT_EQ(i, 7);
  EXPECT_EQ(d, 2.5);
  int wrong = 0;
  for (std::size_t k = 0; k < n; ++k) {
    wrong += from_right[k] != expected_from(rank(), k) ? 1 : 0;  // right's window holds mine
    wrong += from_left[k] != expected_from((left() + size() - 1) % size(), k) ? 1 : 0;
  }
  EXPECT_EQ(wrong, 0);

  // Only requests: a future<>.
  std::vector<long> again(n, -1);
  const future<> only = when_all(win_.rget(std::span<long>(again), right(), 0));
  only.wait();
  EXPECT_EQ(again[n - 1], expected_from(rank(), n - 1));
  barrier(world());
}

TEST_F(Join, WhenAllTakesASpanOfRequests) {
  constexpr std::size_t pieces = 8;
  constexpr std::size_t piece = n / pieces;
  std::vector<rma::request> puts;
  for (std::size_t k = 0; k < pieces; ++k) {
    puts.push_back(win_.rput(std::span<const long>(mine_).subspan(k * piece, piece), right(),
                             static_cast<rma::disp_t>(k * piece)));
  }
  when_all(std::span<rma::request>(puts)).wait();
  for (const rma::request& r : puts) EXPECT_TRUE(r.is_null());
  win_.flush_all();
  barrier(world());
  std::vector<long> back(n, -1);
  std::vector<rma::request> gets;
  for (std::size_t k = 0; k < pieces; ++k) {
    gets.push_back(win_.rget(std::span<long>(back).subspan(k * piece, piece), right(),
                             static_cast<rma::disp_t>(k * piece)));
  }
  when_all(gets).wait();
  EXPECT_EQ(back, mine_);
  EXPECT_TRUE(when_all(std::span<rma::request>()).is_ready());
  barrier(world());
}

TEST_F(Join, TasksComputeWhileRequestsFly) {
  // The arena sums a large range while the rget is in flight; both join in one future.
  std::vector<long> halo(n, -1);
  win_.put(std::span<const long>(mine_), right(), 0);
  win_.flush(right());
  barrier(world());
  constexpr long terms = 2000000;
  const future<long> interior = async([] {
    long s = 0;
    for (long k = 0; k < terms; ++k) s += k % 7;
    return s;
  });
  const future<long> border =
      when_all(interior, win_.rget(std::span<long>(halo), left(), 0)).then([&halo](long s) {
        return s + halo[0];
      });
  long expected = 0;
  for (long k = 0; k < terms; ++k) expected += k % 7;
  // left's window holds left's left neighbour's block
  EXPECT_EQ(border.wait(), expected + expected_from((left() + size() - 1) % size(), 0));

  // async_on the rank's arena, from another thread: runs there, joins a request.
  const task_arena_ref arena = this_rank_arena();
  int on_arena = 0;
  std::thread other([&] {
    on_arena = async_on(arena, [] { return 40; }).then([](int v) { return v + 2; }).wait();
  });
  other.join();
  EXPECT_EQ(on_arena, 42);
  std::vector<long> more(n, -1);
  const future<int> joined =
      when_all(async_on(arena, [] { return 5; }), win_.rget(std::span<long>(more), right(), 0));
  EXPECT_EQ(joined.wait(), 5);
  EXPECT_EQ(more[3], expected_from(rank(), 3));
  barrier(world());
}

}  // namespace
}  // namespace oneside::test
