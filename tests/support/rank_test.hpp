// The fixture of multi-rank tests. Every rank runs the same tests in the same order; after
// each test the ranks compare verdicts, so a failure on any rank fails the test on all ranks
// (the others report "failed on rank(s) …"). Use EXPECT_* for per-rank checks: an ASSERT_
// that returns on one rank leaves the others waiting in the next collective.
#pragma once

#include <gtest/gtest.h>

#include <oneside/oneside.hpp>

#include "covers.hpp"

namespace oneside::test {

class RankTest : public ::testing::Test {
 protected:
  void TearDown() override;

  static rank_t rank() { return world().rank(); }
  static int size() { return world().size(); }
};

// True on every rank when `cond` holds on every rank (for collective skips).
bool on_all_ranks(bool cond);

// Repetitions of a loop whose every step is a round trip: n, or n / 4 (at least 1) when ranks
// outnumber the cores by far (more than 4) or the job runs under mpirun (peers of other nodes
// reached over TCP, where oversubscribed round trips cost hundreds of microseconds). The protocol a
// test checks stays the same; the run stays within CI's time budget.
int scaled(int n);

}  // namespace oneside::test

// Skips the test on every rank unless `cond` holds on every rank.
#define ONESIDE_SKIP_UNLESS_ALL(cond, why)                         \
  do {                                                             \
    if (!::oneside::test::on_all_ranks(static_cast<bool>(cond))) { \
      GTEST_SKIP() << (why);                                       \
    }                                                              \
  } while (false)
