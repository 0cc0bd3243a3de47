// Tests that check the harness itself (run by expect_collective_failure.cmake, never alone).
// OnlyRankOneFails fails on rank 1 only when ONESIDE_SELFCHECK_FAIL is set in the
// environment; the harness must then fail it on every rank and exit non-zero.
#include <cstdlib>

#include "rank_test.hpp"

namespace oneside::test {
namespace {

class Harness : public RankTest {};

TEST_F(Harness, OnlyRankOneFails) {
  const bool asked = std::getenv("ONESIDE_SELFCHECK_FAIL") != nullptr;
  if (asked && rank() == 1) ADD_FAILURE() << "deliberate failure on rank 1";
  // The ranks stay in step afterwards.
  EXPECT_EQ(allreduce(world(), 1, op::sum), size());
}

TEST_F(Harness, LaterTestsStillRun) {
  EXPECT_EQ(allreduce(world(), rank(), op::max), size() - 1);
}

}  // namespace
}  // namespace oneside::test
