// The GUPS app's random stream and table layout (apps/gups/gups_stream.hpp): starts(k) equals k
// steps of the generator from 1, checked by stepping for small k and, for k beyond 2^40, against
// a second way of jumping (squaring as a linear map whose columns come from stepping alone) and
// by stepping on from the jump; the stream's period; the table layout against a walk of every
// word; and each rank's share of the updates against the global stream.
#include "gups_stream.hpp"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace oneside::test {
namespace {

namespace gu = oneside::apps::gups;

// a stepped n times.
std::uint64_t stepped(std::uint64_t a, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) a = gu::step(a);
  return a;
}

// x^k without gu::multiply: squaring a polynomial maps bit j to x^(2j), whose values come
// from stepping 1 up to 126 times; then left-to-right binary exponentiation.
std::uint64_t reference_power(std::uint64_t k) {
  std::uint64_t square_of_bit[64];
  for (std::uint64_t j = 0; j < 64; ++j) square_of_bit[j] = stepped(1, 2 * j);
  auto square = [&](std::uint64_t a) {
    std::uint64_t r = 0;
    for (int j = 0; j < 64; ++j) {
      if ((a >> j) & 1) r ^= square_of_bit[j];
    }
    return r;
  };
  std::uint64_t r = 1;
  for (int i = 63; i >= 0; --i) {
    r = square(r);
    if ((k >> i) & 1) r = gu::step(r);
  }
  return r;
}

TEST(GupsStream, StartsEqualsStepping) {
  EXPECT_EQ(gu::starts(0), 1u);
  EXPECT_EQ(gu::starts(1), 2u);
  std::uint64_t a = 1;
  std::uint64_t k = 0;
  for (const std::uint64_t target :
       {1u, 2u, 63u, 64u, 65u, 127u, 1000u, 4096u, 123457u, 1u << 20}) {
    a = stepped(a, target - k);
    k = target;
    EXPECT_EQ(gu::starts(static_cast<std::int64_t>(k)), a) << "k = " << k;
  }
}

TEST(GupsStream, StartsBeyondTwoToTheFortyMatchesSecondJumpAndStepping) {
  const std::uint64_t ks[] = {(std::uint64_t{1} << 40) + 1,
                              (std::uint64_t{1} << 40) + 12345,
                              (std::uint64_t{1} << 43) - 7,
                              3 * (std::uint64_t{1} << 50) + 99,
                              (std::uint64_t{1} << 60) + 0x0123456789,
                              12 * (std::uint64_t{1} << 36)};
  for (const std::uint64_t k : ks) {
    const std::uint64_t at = gu::starts(static_cast<std::int64_t>(k));
    EXPECT_EQ(at, reference_power(k)) << "k = " << k;
    // 1000 more steps from there land where a jump of k + 1000 does.
    EXPECT_EQ(stepped(at, 1000), gu::starts(static_cast<std::int64_t>(k + 1000))) << "k = " << k;
  }
}

TEST(GupsStream, PeriodWrapsAround) {
  EXPECT_EQ(gu::starts(gu::period), 1u);
  EXPECT_EQ(gu::starts(gu::period + 5), gu::starts(5));
  EXPECT_EQ(gu::step(gu::starts(gu::period - 1)), 1u);
  EXPECT_EQ(gu::starts(-1), gu::starts(gu::period - 1));
  EXPECT_EQ(gu::starts(-3), gu::starts(gu::period - 3));
}

TEST(GupsStream, MultiplyAddsExponents) {
  for (const std::int64_t i : {0, 1, 77, 1 << 20}) {
    for (const std::int64_t j : {0, 3, 64, 99999}) {
      EXPECT_EQ(gu::multiply(gu::starts(i), gu::starts(j)), gu::starts(i + j)) << i << " + " << j;
    }
  }
}

TEST(GupsStream, LayoutCoversEveryWordOnce) {
  for (const int log2 : {3, 4, 10}) {
    for (int ranks = 1; ranks <= 9 && (1 << log2) >= ranks; ++ranks) {
      const gu::table_layout t(log2, ranks);
      std::uint64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(t.start(r), next);
        // Sizes differ by at most one, the larger first.
        EXPECT_LE(t.local_size(r), t.max_local_size());
        EXPECT_GE(t.local_size(r) + 1, t.max_local_size());
        for (std::uint64_t i = 0; i < t.local_size(r); ++i) {
          EXPECT_EQ(t.owner(next + i), r) << "word " << next + i << " of " << ranks << " ranks";
        }
        next += t.local_size(r);
      }
      EXPECT_EQ(next, t.size()) << log2 << " " << ranks;
    }
  }
}

TEST(GupsStream, SharesConcatenateToTheGlobalStream) {
  for (const int ranks : {1, 3, 4}) {
    const gu::table_layout t(8, ranks);
    gu::update_stream all(0, 4 * t.size());
    std::uint64_t expected = 1;
    std::uint64_t a = 0;
    for (int r = 0; r < ranks; ++r) {
      gu::update_stream share = gu::update_stream::share(t, r, 4);
      std::uint64_t made = 0;
      while (share.next(a)) {
        expected = gu::step(expected);
        EXPECT_EQ(a, expected);
        std::uint64_t b = 0;
        EXPECT_TRUE(all.next(b));
        EXPECT_EQ(a, b);
        ++made;
      }
      EXPECT_EQ(made, 4 * t.local_size(r));
    }
    EXPECT_FALSE(all.next(a));
  }
}

TEST(GupsStream, SkipLeavesOutEveryKth) {
  gu::update_stream skipping(0, 100, 10);
  gu::update_stream full(0, 100);
  std::vector<std::uint64_t> kept;
  std::vector<std::uint64_t> every;
  for (std::uint64_t a = 0; skipping.next(a);) kept.push_back(a);
  for (std::uint64_t a = 0; full.next(a);) every.push_back(a);
  ASSERT_EQ(kept.size(), 90u);
  ASSERT_EQ(every.size(), 100u);
  EXPECT_EQ(kept[8], every[8]);
  EXPECT_EQ(kept[9], every[10]);  // the 10th value (index 9) is left out
  EXPECT_EQ(kept.back(), every[98]);
}

}  // namespace
}  // namespace oneside::test
