// The global heap with a cap (ONESIDE_HEAP_MAX_BYTES=4M, segments of 1 MiB, set before the
// runtime opens): it grows segment by segment up to the cap, an allocation beyond it raises
// no_mem and leaves the heap as it was, and what was freed can be allocated again.
#include <cstdlib>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

// Before main opens the runtime.
[[maybe_unused]] const bool configured = ::setenv("ONESIDE_HEAP_MAX_BYTES", "4M", 1) == 0 &&
                                         ::setenv("ONESIDE_HEAP_SEGMENT_BYTES", "1M", 1) == 0;

class HeapCap : public RankTest {};

constexpr std::size_t mib = std::size_t{1} << 20;

TEST_F(HeapCap, GrowsUpToTheCapThenRaisesNoMemAndChangesNothing) {
  std::vector<global_ptr<std::byte>> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(allocate<std::byte>(mib / 4));
  const heap_stats_t s = heap_stats();
  EXPECT_LE(s.size, 4 * mib);
  EXPECT_GE(s.segments, 2U);
  // 3 MiB more cannot fit under the cap.
  expect_error(error_class::no_mem, "allocate", [&] { (void)allocate<std::byte>(3 * mib); });
  const heap_stats_t t = heap_stats();
  EXPECT_EQ(t.size, s.size);
  EXPECT_EQ(t.used, s.used);
  EXPECT_EQ(t.segments, s.segments);
  // Fill up to the cap, then free and allocate again.
  while (true) {
    try {
      blocks.push_back(allocate<std::byte>(mib / 4));
    } catch (const oneside::error& e) {
      EXPECT_EQ(e.error_class(), error_class::no_mem);
      break;
    }
  }
  EXPECT_LE(heap_stats().size, 4 * mib);
  for (global_ptr<std::byte> p : blocks) deallocate(p);
  blocks.clear();
  global_ptr<std::byte> again = allocate<std::byte>(mib / 2);
  EXPECT_TRUE(again);
  deallocate(again);
  EXPECT_EQ(heap_stats().live_blocks, 0U);
}

}  // namespace
}  // namespace oneside::test
