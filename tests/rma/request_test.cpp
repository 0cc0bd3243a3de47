// Request-based operations (REQ-1 … REQ-12): only in passive-target epochs; the same results
// and rules as the blocking-initiation calls; what completing each kind of request means
// (local completion for rput and raccumulate, data for rget and rget_accumulate); the
// multiple-completion calls over mixed kinds; requests completed by unlock and flush; proc_null
// requests; and completion while the target computes without calling oneside.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

using rma::flavor;
using rma::mode;

const datatype& i64() {
  return datatype::of<std::int64_t>();
}

class Requests : public RankTest, public ::testing::WithParamInterface<flavor> {
 protected:
  flavor kind() const { return GetParam(); }
};

TEST_P(Requests, OnlyInsidePassiveTargetEpochs) {
  covers("REQ-1", "SYN-34", "ERR-11");
  test_window tw = make_window(kind(), world(), 8 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, 8, std::int64_t{-1});
  settle(tw.win);
  rma::window& w = tw.win;
  const rank_t t = right();
  const std::int64_t v = 10 + rank();
  std::int64_t r = 0;
  // No epoch at all.
  expect_error(error_class::rma_sync, "rput",
               [&] { (void)w.rput(&v, 1, i64(), t, tw.disp(t, 0), 1, i64()); });
  // A fence epoch is active target: no request-based calls there.
  w.fence();
  expect_error(error_class::rma_sync, "rput",
               [&] { (void)w.rput(&v, 1, i64(), t, tw.disp(t, 0), 1, i64()); });
  expect_error(error_class::rma_sync, "rget",
               [&] { (void)w.rget(&r, 1, i64(), t, tw.disp(t, 0), 1, i64()); });
  expect_error(error_class::rma_sync, "raccumulate",
               [&] { (void)w.raccumulate(&v, 1, i64(), t, tw.disp(t, 0), 1, i64(), op::sum); });
  expect_error(error_class::rma_sync, "rget_accumulate", [&] {
    (void)w.rget_accumulate(&v, 1, i64(), &r, 1, i64(), t, tw.disp(t, 0), 1, i64(), op::sum);
  });
  w.fence(mode::nosucceed);
  barrier(world());
  EXPECT_EQ(r, 0) << "a rejected rget wrote its buffer";
  // lock(shared, t): fine for t, an error for another rank.
  w.lock(rma::lock_type::shared, t);
  expect_ok("rput under lock", [&] { w.rput(&v, 1, i64(), t, tw.disp(t, 1), 1, i64()).wait(); });
  if (size() >= 2) {
    expect_error(error_class::rma_sync, "rput",
                 [&] { (void)w.rput(&v, 1, i64(), rank(), tw.disp(rank(), 2), 1, i64()); });
  }
  w.unlock(t);
  // lock_all: every target.
  w.lock_all();
  expect_ok("rput under lock_all",
            [&] { w.rput(&v, 1, i64(), t, tw.disp(t, 3), 1, i64()).wait(); });
  w.unlock_all();
  settle(w);
  const std::int64_t from_left = 10 + left();
  const std::int64_t want[8] = {-1, from_left, -1, from_left, -1, -1, -1, -1};
  for (int k = 0; k < 8; ++k) EXPECT_EQ(mine[k], want[k]) << "element " << k;
}

TEST_P(Requests, SameResultsAndRulesAsTheBlockingCalls) {
  covers("REQ-2", "REQ-6", "COM-11", "COM-16", "COM-15");
  constexpr int n = 20;
  test_window tw = make_window(kind(), world(), 4 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, 4, std::int64_t{0});
  settle(tw.win);
  rma::window& w = tw.win;
  const std::int64_t three[3] = {rank(), rank(), rank()};
  const std::int64_t one = 1;
  std::vector<std::int64_t> tickets(n, -1);
  std::vector<rma::request> reqs;
  w.lock_all();
  reqs.push_back(w.raccumulate(three, 3, i64(), 0, tw.disp(0, 0), 3, i64(), op::sum));
  for (int i = 0; i < n; ++i) {
    reqs.push_back(w.rget_accumulate(&one, 1, i64(), &tickets[static_cast<std::size_t>(i)], 1,
                                     i64(), 0, tw.disp(0, 3), 1, i64(), op::sum));
  }
  rma::wait_all(reqs);
  for (const rma::request& q : reqs) EXPECT_TRUE(q.is_null());
  // The same op rules: no_op is not an accumulate op, band is not a double op.
  expect_error(error_class::op, "raccumulate", [&] {
    (void)w.raccumulate(three, 1, i64(), 0, tw.disp(0, 0), 1, i64(), op::no_op);
  });
  expect_error(error_class::op, "rget_accumulate", [&] {
    const double x = 1;
    double y = 0;
    (void)w.rget_accumulate(&x, 1, datatype::of<double>(), &y, 1, datatype::of<double>(), 0,
                            tw.disp(0, 0), 1, datatype::of<double>(), op::band);
  });
  w.unlock_all();
  std::vector<std::int64_t> all(tickets.size() * static_cast<std::size_t>(size()));
  allgather(world(), tickets, all);
  std::sort(all.begin(), all.end());
  int wrong = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    wrong += all[i] == static_cast<std::int64_t>(i) ? 0 : 1;
  EXPECT_EQ(wrong, 0) << "rget_accumulate tickets are not exactly 0 … " << all.size() - 1;
  settle(w);
  if (rank() == 0) {
    const std::int64_t p = size();
    const std::int64_t sum = p * (p - 1) / 2;
    EXPECT_EQ(mine[0], sum);
    EXPECT_EQ(mine[1], sum);
    EXPECT_EQ(mine[2], sum);
    EXPECT_EQ(mine[3], p * n);
  }
}

TEST_P(Requests, CompletedRputAndRaccumulateOnlyFreeTheOriginBuffer) {
  covers("REQ-3", "REQ-5", "MEM-10", "SYN-24");
  test_window tw = make_window(kind(), world(), 8 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, 8, std::int64_t{100});
  settle(tw.win);
  rma::window& w = tw.win;
  const rank_t t = right();
  std::int64_t buf[3] = {rank() + 1, rank() + 2, rank() + 3};
  std::int64_t add[3] = {1, 2, 3};
  w.lock(rma::lock_type::shared, t);
  rma::request put = w.rput(buf, 3, i64(), t, tw.disp(t, 0), 3, i64());
  put.wait();
  std::fill_n(buf, 3, std::int64_t{-99});  // the buffer is ours again
  rma::request acc = w.raccumulate(add, 3, i64(), t, tw.disp(t, 4), 3, i64(), op::sum);
  acc.wait();
  std::fill_n(add, 3, std::int64_t{1000});
  w.flush(t);
  w.unlock(t);
  barrier(world());  // the notification: the data is at every target now
  // A rank other than the writer (when there are three) reads what the target got.
  std::int64_t got[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const rank_t probe = (rank() + 2) % size();
  const rank_t writer = (probe + size() - 1) % size();
  w.lock(rma::lock_type::shared, probe);
  w.get(std::span<std::int64_t>(got, 8), probe, tw.disp(probe, 0));
  w.unlock(probe);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(got[k], writer + 1 + k) << "rput element " << k;
  for (int k = 4; k < 7; ++k) EXPECT_EQ(got[k], 100 + (k - 3)) << "raccumulate element " << k;
  EXPECT_EQ(got[3], 100);
  EXPECT_EQ(got[7], 100);
  settle(w);
}

TEST_P(Requests, CompletedRgetHasTheDataWithoutAFlush) {
  covers("REQ-4", "REQ-11");
  constexpr std::size_t words = (std::size_t{1} << 20) / sizeof(std::uint64_t);  // 1 MiB
  test_window tw = make_window(kind(), world(), words * sizeof(std::uint64_t), 8);
  auto* mine = tw.local_as<std::uint64_t>();
  const auto value = [](rank_t r, std::size_t i) {
    return (static_cast<std::uint64_t>(r) << 40) ^ (i * 0x9E3779B97F4A7C15ULL);
  };
  for (std::size_t i = 0; i < words; ++i) mine[i] = value(rank(), i);
  settle(tw.win);
  std::vector<std::uint64_t> got(words, 0);
  tw.win.lock_all();
  rma::request r = tw.win.rget(std::span<std::uint64_t>(got), right(), tw.disp(right(), 0));
  r.wait();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < words; ++i) wrong += got[i] == value(right(), i) ? 0U : 1U;
  EXPECT_EQ(wrong, 0U) << "words of the 1 MiB rget not yet in the buffer after wait";
  tw.win.unlock_all();
  settle(tw.win);
}

TEST_P(Requests, CompletionCallsOverMixedKinds) {
  covers("REQ-8", "REQ-3", "REQ-4", "REQ-5", "REQ-6");
  constexpr int per_kind = 3;
  constexpr int kinds = 4;
  constexpr std::size_t slots = 4 * per_kind;  // rput, raccumulate, rget, rget_accumulate areas
  test_window tw = make_window(kind(), world(), slots * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  rma::window& w = tw.win;
  const rank_t t = right();
  // Issues one request of each kind per index, on disjoint locations; checks their effects.
  const auto issue = [&](std::vector<rma::request>& reqs, std::vector<std::int64_t>& out,
                         std::vector<std::int64_t>& src) {
    reqs.clear();
    for (int i = 0; i < per_kind; ++i) {
      const auto u = static_cast<std::size_t>(i);
      reqs.push_back(w.rput(&src[u], 1, i64(), t, tw.disp(t, i), 1, i64()));
      reqs.push_back(
          w.raccumulate(&src[u], 1, i64(), t, tw.disp(t, per_kind + i), 1, i64(), op::sum));
      reqs.push_back(w.rget(&out[u], 1, i64(), t, tw.disp(t, 2 * per_kind + i), 1, i64()));
      reqs.push_back(w.rget_accumulate(&src[u], 1, i64(), &out[per_kind + u], 1, i64(), t,
                                       tw.disp(t, 3 * per_kind + i), 1, i64(), op::sum));
    }
    // Each call hands back an active request (MPI never returns MPI_REQUEST_NULL from an
    // r-call, even when the operation is already complete): wait/test complete it and make it
    // null, and wait_any/wait_some report it (EX-21 relies on that).
    const auto null_ones =
        std::count_if(reqs.begin(), reqs.end(), [](const rma::request& q) { return q.is_null(); });
    EXPECT_EQ(null_ones, 0) << "r-calls returned null requests";
  };
  const auto reset = [&] {
    for (std::size_t k = 0; k < slots; ++k) mine[k] = static_cast<std::int64_t>(k) * 10;
    settle(w);
  };
  const auto check = [&](const std::vector<std::int64_t>& out, const std::string& how) {
    SCOPED_TRACE(how);
    for (int i = 0; i < per_kind; ++i) {
      const auto u = static_cast<std::size_t>(i);
      EXPECT_EQ(out[u], (2 * per_kind + i) * 10) << "rget " << i;
      EXPECT_EQ(out[per_kind + u], (3 * per_kind + i) * 10) << "rget_accumulate " << i;
    }
    settle(w);
    const std::int64_t src_left = (left() + 1) * 1000;
    for (int i = 0; i < per_kind; ++i) {
      const auto u = static_cast<std::size_t>(i);
      EXPECT_EQ(mine[u], src_left + i) << "rput " << i;
      EXPECT_EQ(mine[per_kind + u], (per_kind + i) * 10 + src_left + i) << "raccumulate " << i;
      EXPECT_EQ(mine[3 * per_kind + u], (3 * per_kind + i) * 10 + src_left + i)
          << "rget_accumulate target " << i;
    }
  };
  std::vector<std::int64_t> src(per_kind);
  for (int i = 0; i < per_kind; ++i) src[static_cast<std::size_t>(i)] = (rank() + 1) * 1000 + i;
  std::vector<rma::request> reqs;
  constexpr std::size_t total = per_kind * kinds;

  {  // wait_any until nothing is left: every index exactly once
    reset();
    std::vector<std::int64_t> out(2 * per_kind, -1);
    w.lock_all();
    issue(reqs, out, src);
    std::vector<int> seen(total, 0);
    std::size_t rounds = 0;
    while (auto i = rma::wait_any(reqs)) {
      ++seen[*i];
      EXPECT_TRUE(reqs[*i].is_null());
      if (++rounds > total) break;
    }
    for (std::size_t i = 0; i < total; ++i) EXPECT_EQ(seen[i], 1) << "wait_any index " << i;
    w.unlock_all();
    check(out, "wait_any");
  }
  {  // wait_some
    reset();
    std::vector<std::int64_t> out(2 * per_kind, -1);
    w.lock_all();
    issue(reqs, out, src);
    std::vector<int> seen(total, 0);
    std::vector<std::size_t> idx(total);
    std::size_t rounds = 0;
    for (std::size_t k = rma::wait_some(reqs, idx); k > 0; k = rma::wait_some(reqs, idx)) {
      for (std::size_t j = 0; j < k; ++j) ++seen[idx[j]];
      if (++rounds > total) break;
    }
    for (std::size_t i = 0; i < total; ++i) EXPECT_EQ(seen[i], 1) << "wait_some index " << i;
    w.unlock_all();
    check(out, "wait_some");
  }
  {  // test_all until true, then every request is null
    reset();
    std::vector<std::int64_t> out(2 * per_kind, -1);
    w.lock_all();
    issue(reqs, out, src);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool done = false;
    while (!(done = rma::test_all(reqs)) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    EXPECT_TRUE(done);
    for (const rma::request& q : reqs) EXPECT_TRUE(q.is_null());
    w.unlock_all();
    check(out, "test_all");
  }
  {  // test_some and test_any until nothing is left
    reset();
    std::vector<std::int64_t> out(2 * per_kind, -1);
    w.lock_all();
    issue(reqs, out, src);
    std::vector<int> seen(total, 0);
    std::vector<std::size_t> idx(total);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool use_any = false;
    while (
        std::chrono::steady_clock::now() < deadline &&
        std::any_of(reqs.begin(), reqs.end(), [](const rma::request& q) { return !q.is_null(); })) {
      if (use_any) {
        if (auto i = rma::test_any(reqs)) ++seen[*i];
      } else {
        const std::size_t k = rma::test_some(reqs, idx);
        for (std::size_t j = 0; j < k; ++j) ++seen[idx[j]];
      }
      use_any = !use_any;
      std::this_thread::yield();
    }
    for (std::size_t i = 0; i < total; ++i) EXPECT_EQ(seen[i], 1) << "test_some/any index " << i;
    EXPECT_EQ(rma::test_any(reqs), std::nullopt);
    EXPECT_EQ(rma::test_some(reqs, idx), 0U);
    EXPECT_EQ(rma::wait_any(reqs), std::nullopt) << "only null requests are left";
    EXPECT_EQ(rma::wait_some(reqs, idx), 0U);
    w.unlock_all();
    check(out, "test_some/test_any");
  }
}

TEST_P(Requests, UnlockAndFlushCompleteRequests) {
  covers("REQ-10", "REQ-3");
  test_window tw = make_window(kind(), world(), 4 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, 4, std::int64_t{0});
  settle(tw.win);
  rma::window& w = tw.win;
  const rank_t t = right();
  const std::int64_t v = 7 + rank();
  std::int64_t back = 0;
  w.lock(rma::lock_type::exclusive, t);
  rma::request put = w.rput(&v, 1, i64(), t, tw.disp(t, 0), 1, i64());
  rma::request get = w.rget(&back, 1, i64(), t, tw.disp(t, 1), 1, i64());
  w.unlock(t);
  // The epoch completed both: the first test reports it, a wait returns at once.
  EXPECT_TRUE(put.test()) << "rput not complete after unlock";
  EXPECT_TRUE(get.test()) << "rget not complete after unlock";
  get.wait();
  EXPECT_EQ(back, 0);
  // flush completes them as well; many cycles leave nothing behind.
  w.lock_all();
  for (int i = 0; i < 2000; ++i) {
    const std::int64_t x = i;
    rma::request r = w.rput(&x, 1, i64(), t, tw.disp(t, 2), 1, i64());
    w.flush(t);
    EXPECT_TRUE(r.test());
  }
  w.unlock_all();
  settle(w);
  EXPECT_EQ(mine[0], 7 + left());
  EXPECT_EQ(mine[2], 1999);
}

TEST_P(Requests, ProcNullRequestsCompleteAtOnceAndMoveNothing) {
  covers("REQ-12", "COM-4", "SYN-35");
  test_window tw = make_window(kind(), world(), 2 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::fill_n(tw.local_as<std::int64_t>(), 2, std::int64_t{-3});
  settle(tw.win);
  rma::window& w = tw.win;
  std::int64_t sentinel = 424242, result = 515151;
  const std::int64_t v = 1;
  w.lock_all();
  rma::request g = w.rget(&sentinel, 1, i64(), proc_null, 0, 1, i64());
  EXPECT_TRUE(g.test());
  rma::request p = w.rput(&v, 1, i64(), proc_null, 0, 1, i64());
  EXPECT_TRUE(p.test());
  rma::request a = w.raccumulate(&v, 1, i64(), proc_null, 0, 1, i64(), op::sum);
  EXPECT_TRUE(a.test());
  rma::request ga =
      w.rget_accumulate(&v, 1, i64(), &result, 1, i64(), proc_null, 0, 1, i64(), op::sum);
  EXPECT_TRUE(ga.test());
  w.unlock_all();
  EXPECT_EQ(sentinel, 424242);
  EXPECT_EQ(result, 515151);
  settle(w);
  EXPECT_EQ(tw.local_as<std::int64_t>()[0], -3);
  EXPECT_EQ(tw.local_as<std::int64_t>()[1], -3);
}

TEST_P(Requests, RequestsCompleteWhileTheTargetComputes) {
  covers("REQ-11", "SEM-11", "SEM-12");
  ONESIDE_SKIP_UNLESS_ALL(size() >= 2, "needs a target and an origin");
  // Rank 0 computes without calling oneside until every origin says it finished (a flag in
  // slots [48, 48 + P)), at most 20 s: requests that needed the target would finish only then.
  constexpr std::size_t flags = 48;
  test_window tw = make_window(kind(), world(), 64 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  for (int i = 0; i < 64; ++i) mine[i] = i < 48 ? 1000 + i : 0;
  settle(tw.win);
  rma::window& w = tw.win;
  computed busy;
  std::int64_t finished = 0;
  std::int64_t got[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t old = -1;
  barrier(world());
  if (rank() == 0) {
    busy = compute_until_origins_done(mine + flags, static_cast<std::size_t>(size()),
                                      std::chrono::seconds(20));
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the target computes by now
    w.lock_all();
    const std::int64_t one = 1;
    rma::request r = w.rget(got, 8, i64(), 0, tw.disp(0, 0), 8, i64());
    r.wait();
    rma::request f = w.rget_accumulate(&one, 1, i64(), &old, 1, i64(), 0, tw.disp(0, 8 + rank()), 1,
                                       i64(), op::sum);
    f.wait();
    w.unlock_all();
    finished = now_ns();
    w.lock(rma::lock_type::shared, 0);
    w.put(one, 0, tw.disp(0, static_cast<disp_t>(flags) + rank()));
    w.unlock(0);
  }
  const std::int64_t end0 = broadcast(world(), busy.end_ns, 0);
  const bool origins_done = broadcast(world(), busy.origins_done ? 1 : 0, 0) != 0;
  EXPECT_TRUE(origins_done) << "the target computed 20 s without every origin finishing";
  if (rank() != 0) {
    EXPECT_LT(finished, end0) << "the requests completed only after the target stopped computing";
    for (int i = 0; i < 8; ++i) EXPECT_EQ(got[i], 1000 + i);
    EXPECT_EQ(old, 1008 + rank());
  }
  settle(w);
  if (rank() == 0) {
    for (int r = 1; r < size() && r + 8 < 48; ++r) EXPECT_EQ(mine[8 + r], 1009 + r);
  }
}

INSTANTIATE_TEST_SUITE_P(AllocateAndUserMemory, Requests,
                         ::testing::Values(flavor::allocate, flavor::create, flavor::dynamic),
                         [](const ::testing::TestParamInfo<flavor>& i) {
                           return flavor_name(i.param);
                         });

}  // namespace
}  // namespace oneside::test
