// Element-wise atomicity and ordering of the accumulate family under contention (SEM-3 …
// SEM-6, COM-14, COM-16 … COM-19): every rank hammering one element with fetch_and_op,
// accumulate and compare_and_swap ends with the exact count (no lost update); derived-type
// accumulates, fetch_and_op and no_op readers agree on one element; replace never tears an
// 8-byte value; one origin's accumulates apply in issue order without a flush. On a window from
// allocate (CPU atomics on mapped memory), a create window over a std::vector and a dynamic
// window over attached std::vector memory (where the owner's agent applies them when the
// memory is not load/store reachable).
#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

using rma::flavor;

class Atomicity : public RankTest, public ::testing::WithParamInterface<flavor> {
 protected:
  flavor kind() const { return GetParam(); }
  // A window of `words` int64 per rank, zeroed everywhere before anyone uses it.
  test_window zeroed_window(std::size_t words) const {
    test_window tw = make_window(kind(), world(), words * sizeof(std::int64_t), 8);
    std::fill_n(tw.local_as<std::int64_t>(), words, std::int64_t{0});
    settle(tw.win);
    return tw;
  }
};

const datatype& i64() {
  return datatype::of<std::int64_t>();
}

TEST_P(Atomicity, EveryRankHammeringOneElementLosesNoUpdate) {
  covers("SEM-3", "COM-11", "COM-17", "COM-18", "WIN-26");
  const int n = scaled(10000);     // operations per rank and phase
  const int n_cas = scaled(1000);  // CAS increments per rank
  test_window tw = make_window(kind(), world(), 8 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, 8, std::int64_t{0});
  settle(tw.win);
  rma::window& w = tw.win;
  const std::int64_t one = 1;
  const disp_t tickets_at = tw.disp(0, 0), mixed_at = tw.disp(0, 1), cas_at = tw.disp(0, 2),
               double_at = tw.disp(0, 3);

  // fetch_and_op(sum) alone: every ticket handed out once.
  std::vector<std::int64_t> tickets(static_cast<std::size_t>(n), -1);
  w.lock_all();
  for (int i = 0; i < n; ++i) {
    w.fetch_and_op(&one, &tickets[static_cast<std::size_t>(i)], i64(), 0, tickets_at, op::sum);
    w.flush(0);
  }
  w.unlock_all();
  std::vector<std::int64_t> all(tickets.size() * static_cast<std::size_t>(size()));
  allgather(world(), tickets, all);
  std::sort(all.begin(), all.end());
  int wrong = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    wrong += all[i] == static_cast<std::int64_t>(i) ? 0 : 1;
  EXPECT_EQ(wrong, 0) << "fetch_and_op tickets are not exactly 0 … " << all.size() - 1;

  // fetch_and_op(sum) and accumulate(sum) mixed on one element (same op: allowed at once).
  std::vector<std::int64_t> ignored(static_cast<std::size_t>(n), 0);
  w.lock_all();
  for (int i = 0; i < n; ++i) {
    if ((i + rank()) % 2 == 0) {
      w.fetch_and_op(&one, &ignored[static_cast<std::size_t>(i)], i64(), 0, mixed_at, op::sum);
    } else {
      w.accumulate(&one, 1, i64(), 0, mixed_at, 1, i64(), op::sum);
    }
    if (i % 8 == 7) w.flush(0);
  }
  w.unlock_all();
  barrier(world());

  // compare_and_swap as a spin-increment.
  int successes = 0;
  w.lock_all();
  std::int64_t guess = 0;
  while (successes < n_cas) {
    const std::int64_t next = guess + 1;
    std::int64_t seen = -1;
    w.compare_and_swap(&next, &guess, &seen, i64(), 0, cas_at);
    w.flush(0);
    if (seen == guess) {
      ++successes;
      guess = next;
    } else {
      guess = seen;
    }
  }
  w.unlock_all();
  barrier(world());

  // accumulate(sum) of doubles (no native integer atomic).
  const double one_d = 1.0;
  w.lock_all();
  for (int i = 0; i < n; ++i)
    w.accumulate(&one_d, 1, datatype::of<double>(), 0, double_at, 1, datatype::of<double>(),
                 op::sum);
  w.unlock_all();
  settle(w);
  if (rank() == 0) {
    const std::int64_t p = size();
    EXPECT_EQ(mine[0], p * n) << "fetch_and_op(sum)";
    EXPECT_EQ(mine[1], p * n) << "fetch_and_op(sum) mixed with accumulate(sum)";
    EXPECT_EQ(mine[2], p * n_cas) << "compare_and_swap increments";
    double d = 0;
    std::memcpy(&d, &mine[3], sizeof d);
    EXPECT_EQ(d, static_cast<double>(p * n)) << "accumulate(sum) of doubles";
  }
}

TEST_P(Atomicity, IndexedAccumulateFetchAndOpAndNoOpReadersAgreeOnOneElement) {
  covers("SEM-5", "SEM-3", "COM-12", "COM-16");
  const int n = scaled(10000);
  test_window tw = make_window(kind(), world(), 16 * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, 16, std::int64_t{0});
  settle(tw.win);
  rma::window& w = tw.win;
  const int role = rank() % 3;  // 0: indexed accumulate, 1: fetch_and_op, 2: reader
  const count_t lens[3] = {1, 1, 1};
  const count_t displs[3] = {1, 5, 9};
  const datatype three = datatype::indexed(lens, displs, i64());
  const std::int64_t ones[3] = {1, 1, 1};
  const std::int64_t one = 1;
  std::int64_t last = -1;
  int backwards = 0;
  w.lock_all();
  for (int i = 0; i < n; ++i) {
    if (role == 0) {
      w.accumulate(ones, 3, i64(), 0, tw.disp(0, 0), 1, three, op::sum);
    } else if (role == 1) {
      std::int64_t old = 0;
      w.fetch_and_op(&one, &old, i64(), 0, tw.disp(0, 5), op::sum);
    } else {
      std::int64_t seen = -1;
      w.get_accumulate(nullptr, 0, i64(), &seen, 1, i64(), 0, tw.disp(0, 5), 1, i64(), op::no_op);
      w.flush(0);
      backwards += seen < last ? 1 : 0;
      last = seen;
    }
    w.flush(0);
  }
  w.unlock_all();
  EXPECT_EQ(backwards, 0) << "a no_op reader saw element 5 go backwards";
  const std::vector<int> roles = allgather(world(), role);
  const auto indexed_writers = std::count(roles.begin(), roles.end(), 0);
  const auto fetch_writers = std::count(roles.begin(), roles.end(), 1);
  const std::int64_t final5 = (indexed_writers + fetch_writers) * n;
  if (role == 2) {
    EXPECT_LE(last, final5);
  }
  settle(w);
  if (rank() == 0) {
    EXPECT_EQ(mine[5], final5);
    EXPECT_EQ(mine[1], indexed_writers * n);
    EXPECT_EQ(mine[9], indexed_writers * n);
    EXPECT_EQ(mine[0] + mine[2] + mine[4] + mine[6] + mine[8] + mine[10], 0);
  }
}

std::uint64_t pattern(rank_t r) {
  return std::uint64_t{0x0101010101010101} * static_cast<std::uint64_t>(r % 255 + 1);
}

bool is_pattern_or_zero(std::uint64_t v, int ranks) {
  if (v == 0) return true;
  for (rank_t r = 0; r < ranks; ++r) {
    if (v == pattern(r)) return true;
  }
  return false;
}

TEST_P(Atomicity, ReplaceNeverTearsAnElement) {
  covers("COM-19", "SEM-4", "COM-14", "COM-15");
  constexpr std::size_t big = 1024;
  const int n = scaled(5000), rounds = scaled(100);
  const datatype& u64 = datatype::of<std::uint64_t>();
  test_window tw = make_window(kind(), world(), (1 + big) * sizeof(std::uint64_t), 8);
  auto* mine = tw.local_as<std::uint64_t>();
  std::fill_n(mine, 1 + big, std::uint64_t{0});
  settle(tw.win);
  rma::window& w = tw.win;
  const std::uint64_t mark = pattern(rank());
  int torn = 0;
  w.lock_all();
  for (int i = 0; i < n; ++i) {
    w.accumulate(&mark, 1, u64, 0, tw.disp(0, 0), 1, u64, op::replace);
    std::uint64_t seen = 1;
    w.get_accumulate(nullptr, 0, u64, &seen, 1, u64, 0, tw.disp(0, 0), 1, u64, op::no_op);
    w.flush(0);
    torn += is_pattern_or_zero(seen, size()) ? 0 : 1;
  }
  w.unlock_all();
  EXPECT_EQ(torn, 0) << "get_accumulate(no_op) saw a value no rank wrote";
  barrier(world());
  // Whole arrays: elements may come from different ranks, but each is one rank's value.
  const std::vector<std::uint64_t> mine_all(big, mark);
  std::vector<std::uint64_t> seen(big);
  int torn_elements = 0;
  w.lock_all();
  for (int i = 0; i < rounds; ++i) {
    w.accumulate(mine_all.data(), static_cast<count_t>(big), u64, 0, tw.disp(0, 1),
                 static_cast<count_t>(big), u64, op::replace);
    w.get_accumulate(nullptr, 0, u64, seen.data(), static_cast<count_t>(big), u64, 0, tw.disp(0, 1),
                     static_cast<count_t>(big), u64, op::no_op);
    w.flush(0);
    for (std::uint64_t v : seen) torn_elements += is_pattern_or_zero(v, size()) ? 0 : 1;
  }
  w.unlock_all();
  EXPECT_EQ(torn_elements, 0) << "array reads saw torn elements";
  settle(w);
  if (rank() == 0) {
    EXPECT_TRUE(is_pattern_or_zero(mine[0], size()) && mine[0] != 0) << std::hex << mine[0];
    int bad = 0;
    for (std::size_t e = 1; e <= big; ++e)
      bad += mine[e] != 0 && is_pattern_or_zero(mine[e], size()) ? 0 : 1;
    EXPECT_EQ(bad, 0) << "final array elements that are no rank's pattern";
  }
}

TEST_P(Atomicity, OneOriginsAccumulatesApplyInIssueOrderWithoutFlush) {
  covers("SEM-6", "WIN-25", "COM-14", "COM-15");
  constexpr int n = 100;
  // A large array: on windows over user memory it spans whole pages and partial ones, which
  // may be reached by different paths (load/store, cross-memory attach, the owner's agent).
  constexpr std::size_t big_at = 8, big = 2048;
  constexpr std::size_t probes[3] = {big_at, big_at + big / 2, big_at + big - 1};
  test_window tw =
      make_window(kind(), world(), (big_at + big) * sizeof(std::int64_t), sizeof(std::int64_t));
  std::int64_t* mine = tw.local_as<std::int64_t>();
  std::fill_n(mine, big_at + big, std::int64_t{0});
  settle(tw.win);
  rma::window& w = tw.win;
  const rank_t t = (rank() + 1) % size();  // one origin per target
  const auto d = [&](std::size_t k) { return tw.disp(t, static_cast<disp_t>(k)); };
  const std::int64_t one = 1;  // the (ignored) origin of the no_op fetches
  w.lock_all();
  // waw + raw: replace 1, replace 2, then a no_op fetch sees 2.
  std::vector<std::int64_t> after_two(10, -1);
  std::vector<std::int64_t> values(20);
  for (std::size_t r = 0; r < after_two.size(); ++r) {
    values[2 * r] = static_cast<std::int64_t>(10 * r + 1);
    values[2 * r + 1] = static_cast<std::int64_t>(10 * r + 2);
    w.accumulate(&values[2 * r], 1, i64(), t, d(0), 1, i64(), op::replace);
    w.accumulate(&values[2 * r + 1], 1, i64(), t, d(0), 1, i64(), op::replace);
    w.fetch_and_op(&one, &after_two[r], i64(), t, d(0), op::no_op);
  }
  // raw: alternating sum(+1) and a no_op fetch see the number of sums before them.
  std::vector<std::int64_t> counts(n, -1);
  for (int i = 0; i < n; ++i) {
    w.accumulate(&one, 1, i64(), t, d(1), 1, i64(), op::sum);
    w.fetch_and_op(&one, &counts[static_cast<std::size_t>(i)], i64(), t, d(1), op::no_op);
  }
  // A large (possibly chunked or queued) replace, then small ops on its first, middle and last
  // elements.
  const std::vector<std::int64_t> threes(big, 3);
  std::int64_t before_add[3] = {-1, -1, -1}, after_add[3] = {-1, -1, -1};
  w.accumulate(threes.data(), static_cast<count_t>(big), i64(), t, d(big_at),
               static_cast<count_t>(big), i64(), op::replace);
  for (std::size_t k = 0; k < 3; ++k) {
    w.fetch_and_op(&one, &before_add[k], i64(), t, d(probes[k]), op::sum);
    w.get_accumulate(nullptr, 0, i64(), &after_add[k], 1, i64(), t, d(probes[k]), 1, i64(),
                     op::no_op);
  }
  // Rounds of a 600-element replace that starts at the window's first page, then a fetch of
  // its last element (which lies a page further on): whatever path each takes, the fetch sees
  // the round's value.
  constexpr std::size_t span600 = 600, rounds = 30;
  std::vector<std::int64_t> round_seen(rounds, -1);
  std::vector<std::vector<std::int64_t>> round_src(rounds);
  for (std::size_t r = 0; r < rounds; ++r) {
    round_src[r].assign(span600, static_cast<std::int64_t>(1000 + r));
    w.accumulate(round_src[r].data(), static_cast<count_t>(span600), i64(), t, d(big_at),
                 static_cast<count_t>(span600), i64(), op::replace);
    w.fetch_and_op(&one, &round_seen[r], i64(), t, d(big_at + span600 - 1), op::no_op);
  }
  // A derived-type accumulate, then a fetch of its element.
  const count_t len[1] = {1};
  const count_t at2[1] = {2};
  const datatype just2 = datatype::indexed(len, at2, i64());
  const std::int64_t five = 5;
  std::int64_t after_indexed = -1;
  w.accumulate(&five, 1, i64(), t, d(0), 1, just2, op::sum);
  w.fetch_and_op(&one, &after_indexed, i64(), t, d(2), op::no_op);
  w.flush(t);  // only now may the results be read (ordering is not completion)
  w.unlock_all();
  for (std::size_t r = 0; r < after_two.size(); ++r) {
    EXPECT_EQ(after_two[r], values[2 * r + 1]) << "round " << r;
  }
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += counts[static_cast<std::size_t>(i)] == i + 1 ? 0 : 1;
  EXPECT_EQ(wrong, 0) << "no_op fetches that did not see every earlier sum";
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(before_add[k], 3) << "fetch_and_op overtook the large replace, element " << probes[k];
    EXPECT_EQ(after_add[k], 4) << "get_accumulate overtook the fetch_and_op, element " << probes[k];
  }
  EXPECT_EQ(after_indexed, 5) << "fetch overtook the indexed accumulate";
  int overtaken = 0;
  for (std::size_t r = 0; r < rounds; ++r) {
    overtaken += round_seen[r] == static_cast<std::int64_t>(1000 + r) ? 0 : 1;
  }
  EXPECT_EQ(overtaken, 0) << "rounds whose no_op fetch overtook the replace before it";
  settle(w);
  EXPECT_EQ(mine[0], values.back());
  EXPECT_EQ(mine[1], n);
  EXPECT_EQ(mine[2], 5);
  const std::int64_t last_round = static_cast<std::int64_t>(1000 + rounds - 1);
  EXPECT_EQ(mine[big_at], last_round);
  EXPECT_EQ(mine[big_at + span600 - 1], last_round);
  EXPECT_EQ(mine[big_at + span600], 3);
  EXPECT_EQ(mine[probes[1]], 4);
  EXPECT_EQ(mine[probes[2]], 4);
}

// One element updated by calls that may take different paths: a 600-element accumulate that
// starts on the window's first (partial) page and a fetch_and_op on its last element, a page
// further on (rule 1 of the checklist's list: every path to a location is mutually atomic).
TEST_P(Atomicity, AccumulatesThroughDifferentPathsStayAtomic) {
  covers("SEM-5", "SEM-3");
  constexpr std::size_t span = 600, words = 4096;
  constexpr int n = 300;
  test_window tw = zeroed_window(words);
  std::int64_t* mine = tw.local_as<std::int64_t>();
  rma::window& w = tw.win;
  const std::vector<std::int64_t> ones(span, 1);
  const std::int64_t one = 1;
  const bool wide = rank() % 2 == 0;
  w.lock_all();
  for (int i = 0; i < n; ++i) {
    if (wide) {
      w.accumulate(ones.data(), static_cast<count_t>(span), i64(), 0, tw.disp(0, 0),
                   static_cast<count_t>(span), i64(), op::sum);
    } else {
      std::int64_t old = -1;
      w.fetch_and_op(&one, &old, i64(), 0, tw.disp(0, span - 1), op::sum);
    }
    if (i % 16 == 15) w.flush(0);
  }
  w.unlock_all();
  const std::vector<int> kinds = allgather(world(), wide ? 1 : 0);
  const auto wide_ranks = std::count(kinds.begin(), kinds.end(), 1);
  settle(w);
  if (rank() == 0) {
    EXPECT_EQ(mine[span - 1], static_cast<std::int64_t>(size()) * n) << "the shared element";
    EXPECT_EQ(mine[0], wide_ranks * n) << "an element only the wide accumulates touch";
    EXPECT_EQ(mine[span], 0);
  }
}

// Accumulates of thousands of elements span several accumulate stripes and are applied stripe
// by stripe; overlapping ones from every rank (at displacements not aligned to stripes or pages)
// and single-element fetch_and_ops on an element in their overlap must still lose nothing:
// every element ends with exactly the number of updates that covered it (SEM-3, SEM-4).
TEST_P(Atomicity, OverlappingAccumulatesAcrossStripesLoseNoUpdate) {
  covers("SEM-3", "SEM-4");
  constexpr std::size_t span = 1500, words = 4096;
  constexpr int n = 60;
  const std::vector<std::int64_t> ones(span, 1);
  std::vector<std::int64_t> old(span);
  const std::int64_t one = 1;
  test_window tw = zeroed_window(words);
  rma::window& w = tw.win;
  // Even ranks cover [3, 1503), odd ranks [700, 2200); both cover element 1000.
  const disp_t first = rank() % 2 == 0 ? 3 : 700;
  w.lock_all();
  for (int i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      w.accumulate(ones.data(), static_cast<count_t>(span), i64(), 0, tw.disp(0, first),
                   static_cast<count_t>(span), i64(), op::sum);
    } else {
      w.get_accumulate(ones.data(), static_cast<count_t>(span), i64(), old.data(),
                       static_cast<count_t>(span), i64(), 0, tw.disp(0, first),
                       static_cast<count_t>(span), i64(), op::sum);
    }
    std::int64_t fetched = -1;
    w.fetch_and_op(&one, &fetched, i64(), 0, tw.disp(0, 1000), op::sum);
    if (i % 8 == 7) w.flush(0);
  }
  w.unlock_all();
  settle(w);
  const std::int64_t* mine = tw.local_as<std::int64_t>();
  if (rank() == 0) {
    const std::int64_t even = (size() + 1) / 2, odd = size() / 2;
    int wrong = 0;
    for (std::size_t e = 0; e < words; ++e) {
      std::int64_t want = 0;
      if (e >= 3 && e < 3 + span) want += even * n;
      if (e >= 700 && e < 700 + span) want += odd * n;
      if (e == 1000) want += static_cast<std::int64_t>(size()) * n;
      if (mine[e] != want && ++wrong <= 5) {
        ADD_FAILURE() << "element " << e << ": " << mine[e] << ", want " << want;
      }
    }
    EXPECT_EQ(wrong, 0) << "elements with lost or extra updates";
  }
}

// Types without a portable hardware atomic (16-byte value_index, long double, complex) must
// still be updated atomically: exact sums, and maxloc pairs never read torn.
TEST_P(Atomicity, WideTypesStayAtomic) {
  covers("SEM-3", "SEM-4", "COM-13", "COM-11");
  constexpr int n = 2000;
  using pair = value_index<double>;
  using cplx = std::complex<double>;
  // [0]: pair (maxloc), [1]: complex (sum), [2]: long double (sum); one 32-byte slot each.
  constexpr std::size_t slot = 32;
  test_window tw = make_window(kind(), world(), 3 * slot, 1);
  std::byte* mine = tw.local();
  const pair start{-1.0, -1};
  const cplx zero{0.0, 0.0};
  const long double zero_ld = 0;
  std::memcpy(mine, &start, sizeof start);
  std::memcpy(mine + slot, &zero, sizeof zero);
  std::memcpy(mine + 2 * slot, &zero_ld, sizeof zero_ld);
  settle(tw.win);
  rma::window& w = tw.win;
  const datatype& pt = datatype::of<pair>();
  const datatype& ct = datatype::of<cplx>();
  const datatype& lt = datatype::of<long double>();
  const int p = size();
  int torn = 0;
  w.lock_all();
  for (int i = 0; i < n; ++i) {
    const pair mine_pair{static_cast<double>(i * p + rank()), rank()};
    w.accumulate(&mine_pair, 1, pt, 0, tw.disp(0, 0), 1, pt, op::maxloc);
    const cplx c{1.0, 2.0};
    w.accumulate(&c, 1, ct, 0, tw.disp(0, slot), 1, ct, op::sum);
    const long double one = 1;
    w.accumulate(&one, 1, lt, 0, tw.disp(0, 2 * slot), 1, lt, op::sum);
    if (i % 16 == 0) {
      pair seen{0, 0};
      w.get_accumulate(nullptr, 0, pt, &seen, 1, pt, 0, tw.disp(0, 0), 1, pt, op::no_op);
      w.flush(0);
      // Every pair ever written has index == value mod P (or is the start value).
      const bool whole =
          (seen.value == -1.0 && seen.index == -1) ||
          (seen.index >= 0 && seen.index < p && static_cast<long>(seen.value) % p == seen.index);
      torn += whole ? 0 : 1;
    }
  }
  w.unlock_all();
  EXPECT_EQ(torn, 0) << "get_accumulate(no_op) saw a torn value_index<double>";
  settle(w);
  if (rank() == 0) {
    pair final_pair{};
    cplx final_c{};
    long double final_ld = 0;
    std::memcpy(&final_pair, mine, sizeof final_pair);
    std::memcpy(&final_c, mine + slot, sizeof final_c);
    std::memcpy(&final_ld, mine + 2 * slot, sizeof final_ld);
    EXPECT_EQ(final_pair.value, static_cast<double>((n - 1) * p + p - 1));
    EXPECT_EQ(final_pair.index, p - 1);
    EXPECT_EQ(final_c, cplx(1.0 * n * p, 2.0 * n * p));
    EXPECT_EQ(final_ld, static_cast<long double>(n) * p);
  }
}

TEST_P(Atomicity, SwapsKeepTheMultisetOfValues) {
  covers("COM-14", "SEM-3");
  const int n = scaled(5000);
  test_window tw = make_window(kind(), world(), sizeof(std::int64_t), sizeof(std::int64_t));
  *tw.local_as<std::int64_t>() = 0;
  settle(tw.win);
  rma::window& w = tw.win;
  std::vector<std::int64_t> fetched(static_cast<std::size_t>(n), -1);
  w.lock_all();
  for (int i = 0; i < n; ++i) {
    const std::int64_t mine = static_cast<std::int64_t>(rank()) * n + i + 1;
    w.fetch_and_op(&mine, &fetched[static_cast<std::size_t>(i)], i64(), 0, tw.disp(0, 0),
                   op::replace);
    w.flush(0);
  }
  w.unlock_all();
  std::vector<std::int64_t> all(fetched.size() * static_cast<std::size_t>(size()));
  allgather(world(), fetched, all);
  settle(w);
  // Every value written (1 … P*n) plus the initial 0 = every value fetched plus the final one.
  const std::int64_t final_value =
      broadcast(world(), rank() == 0 ? *tw.local_as<std::int64_t>() : 0, 0);
  all.push_back(final_value);
  std::sort(all.begin(), all.end());
  int wrong = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    wrong += all[i] == static_cast<std::int64_t>(i) ? 0 : 1;
  EXPECT_EQ(wrong, 0) << "a swap was lost or duplicated";
}

// Attached regions reach their memory by different paths: one under a page through the owner's
// agent, one of a page or more by CPU atomics on shared memory (node peers), one inside pages
// another window holds in shared memory through the agent again, and one sharing a page with a
// region its owner keeps detaching and attaching (that page moving each time) through the
// agent too (on the remote and MPI paths: the agent for all). Every rank hammers one element of
// each of rank 0's regions at once with fetch_and_op: the tickets of each element are exactly
// 0 … P*n-1, and the elements end at P*n.
class AttachedAtomicity : public RankTest {};

TEST_F(AttachedAtomicity, FetchAndOpOnEveryKindOfRegionLosesNoUpdate) {
  covers("SEM-3", "COM-17", "WIN-14", "WIN-16");
  const auto n = static_cast<std::size_t>(scaled(2000));  // fetch_and_op per rank and element
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::vector<std::int64_t> small(4, 0);
  std::vector<std::int64_t> large(2048, 0);
  std::vector<std::int64_t> host(2048, 0);  // a create window's memory
  constexpr std::size_t half = 700;         // 5600 bytes: `coming` and `staying` share a page
  std::vector<std::int64_t> pair(2 * half + 1, 0);
  std::int64_t* const coming =
      (reinterpret_cast<std::uintptr_t>(pair.data() + half) & (page - 1)) == 0 ? pair.data() + 1
                                                                               : pair.data();
  std::int64_t* const staying = coming + half;
  rma::window outer = rma::window::create(world(), host.data(), host.size() * 8, 8);
  rma::window w = rma::window::create_dynamic(world());
  std::int64_t* const element[4] = {&small[1], &large[1000], &host[700], staying};
  w.attach(small.data(), small.size() * 8);
  w.attach(large.data(), large.size() * 8);
  w.attach(host.data() + 512, 1024 * 8);
  w.attach(coming, half * 8);
  w.attach(staying, half * 8);
  std::vector<std::uint64_t> at;
  for (const std::int64_t* e : element) at.push_back(reinterpret_cast<std::uintptr_t>(e));
  broadcast(world(), at, 0);
  barrier(world());  // rank 0's regions are attached
  std::vector<std::int64_t> tickets(4 * n, -1);
  const std::int64_t one = 1;
  w.lock_all();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < 4; ++k) {
      w.fetch_and_op(&one, &tickets[k * n + i], i64(), 0, static_cast<disp_t>(at[k]), op::sum);
    }
    w.flush(0);
    if (rank() == 0 && i % 50 == 0) {
      w.detach(coming);
      w.attach(coming, half * 8);
    }
  }
  w.unlock_all();
  std::vector<std::int64_t> all(tickets.size() * static_cast<std::size_t>(size()));
  allgather(world(), tickets, all);
  const auto total = static_cast<std::int64_t>(n) * size();
  for (std::size_t k = 0; k < 4; ++k) {
    std::vector<std::int64_t> mine;
    for (rank_t r = 0; r < size(); ++r) {
      const auto from = all.begin() + static_cast<std::ptrdiff_t>(tickets.size()) * r +
                        static_cast<std::ptrdiff_t>(k * n);
      mine.insert(mine.end(), from, from + static_cast<std::ptrdiff_t>(n));
    }
    std::sort(mine.begin(), mine.end());
    int wrong = 0;
    for (std::size_t i = 0; i < mine.size(); ++i)
      wrong += mine[i] == static_cast<std::int64_t>(i) ? 0 : 1;
    EXPECT_EQ(wrong, 0) << "region " << k << ": tickets are not exactly 0 … " << total - 1;
  }
  settle(w);
  if (rank() == 0) {
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(*element[k], total) << "region " << k;
  }
  w.free();
  outer.free();
}

INSTANTIATE_TEST_SUITE_P(AllocateAndUserMemory, Atomicity,
                         ::testing::Values(flavor::allocate, flavor::create, flavor::dynamic),
                         [](const ::testing::TestParamInfo<flavor>& i) {
                           return flavor_name(i.param);
                         });

}  // namespace
}  // namespace oneside::test
