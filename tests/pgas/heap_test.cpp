// The global heap through its public calls: allocate/deallocate with alignments, new_/delete_
// and new_array/delete_array running constructors and destructors, growth by segments,
// heap_stats adding up, blocks reachable from every rank, concurrent use by threads, and bad
// input (double free, foreign and interior pointers, another rank's block) rejected with the
// heap left exactly as it was.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"
#include "runtime/transport.hpp"
#include "shm_space.hpp"

namespace oneside::test {
namespace {

class Heap : public RankTest {};

bool same(const heap_stats_t& a, const heap_stats_t& b) {
  return a.size == b.size && a.used == b.used && a.free == b.free &&
         a.largest_free == b.largest_free && a.segments == b.segments &&
         a.live_blocks == b.live_blocks;
}

TEST_F(Heap, BlocksAreAlignedDisjointAndReturnedWhole) {
  const heap_stats_t before = heap_stats();
  std::mt19937 gen(static_cast<unsigned>(rank()) * 7919U + 1U);
  struct block {
    global_ptr<std::byte> p;
    std::size_t bytes;
    std::byte fill;
  };
  std::vector<block> blocks;
  for (int i = 0; i < 2000; ++i) {
    const std::size_t bytes = std::size_t{1} << (gen() % 14);  // 1 B … 8 KiB
    const std::size_t align = std::size_t{1} << (gen() % 13);  // 1 … 4096
    global_ptr<std::byte> p = allocate<std::byte>(bytes, align);
    ASSERT_TRUE(p);
    EXPECT_EQ(p.where(), rank());
    EXPECT_EQ(p.address() % align, 0U) << "align " << align;
    const auto fill = static_cast<std::byte>(i & 0xff);
    std::memset(p.local(), static_cast<int>(fill), bytes);
    blocks.push_back({p, bytes, fill});
  }
  // No block overlaps another: every fill is intact.
  int damaged = 0;
  for (const block& b : blocks) {
    const std::byte* at = b.p.local();
    damaged += std::all_of(at, at + b.bytes, [&](std::byte x) { return x == b.fill; }) ? 0 : 1;
  }
  EXPECT_EQ(damaged, 0);
  EXPECT_EQ(heap_stats().live_blocks, before.live_blocks + blocks.size());
  std::shuffle(blocks.begin(), blocks.end(), gen);
  for (const block& b : blocks) deallocate(b.p);
  const heap_stats_t after = heap_stats();
  EXPECT_EQ(after.used, before.used) << "everything given back";
  EXPECT_EQ(after.live_blocks, before.live_blocks);
  if (after.segments == 1) {
    EXPECT_EQ(after.largest_free, after.free - 16) << "the segment coalesced into one block";
  }
}

TEST_F(Heap, StatsAddUp) {
  global_ptr<int> p = allocate<int>(1000);
  const heap_stats_t s = heap_stats();
  EXPECT_GE(s.segments, 1U);
  EXPECT_EQ(s.size, s.used + s.free + 16 * s.segments) << "tags of each segment's ends";
  EXPECT_GE(s.used, 1000 * sizeof(int));
  EXPECT_LE(s.largest_free, s.free);
  deallocate(p);
}

struct counted {
  static inline std::atomic<int> alive{0};
  explicit counted(int v = 7) : value(v) { alive.fetch_add(1); }
  ~counted() { alive.fetch_sub(1); }
  counted(const counted&) = delete;
  counted& operator=(const counted&) = delete;
  int value;
  double pad[3] = {};
};

TEST_F(Heap, NewAndDeleteRunConstructorsAndDestructors) {
  const int alive = counted::alive.load();
  global_ptr<counted> one = new_<counted>(42);
  EXPECT_EQ(one.local()->value, 42);
  EXPECT_EQ(counted::alive.load(), alive + 1);
  global_ptr<counted> many = new_array<counted>(5);
  EXPECT_EQ(counted::alive.load(), alive + 6);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(many.local()[i].value, 7);
  EXPECT_EQ(many.address() % alignof(counted), 0U);
  delete_array(many);
  delete_(one);
  EXPECT_EQ(counted::alive.load(), alive);
  delete_(global_ptr<counted>());  // null is ignored
  delete_array(global_ptr<counted>());
  global_ptr<std::uint64_t> zeroed = new_array<std::uint64_t>(64);
  EXPECT_TRUE(std::all_of(zeroed.local(), zeroed.local() + 64, [](auto v) { return v == 0; }));
  delete_array(zeroed);
}

TEST_F(Heap, GrowsBySegmentsAndLargeRequestsGetTheirOwn) {
  const heap_stats_t before = heap_stats();
  // Larger than a default segment (64 MiB): a segment of its own size.
  const std::size_t big = std::size_t{80} << 20;
  global_ptr<std::byte> p = allocate<std::byte>(big);
  const heap_stats_t grown = heap_stats();
  EXPECT_EQ(grown.segments, before.segments + 1);
  EXPECT_GE(grown.size, before.size + big);
  p.local()[0] = std::byte{1};
  p.local()[big - 1] = std::byte{2};
  deallocate(p);
  EXPECT_EQ(heap_stats().used, before.used);
}

TEST_F(Heap, BlocksAreReachableFromEveryRank) {
  // Every rank writes its number into its slot of every rank's block, through the transport
  // (the network path for ranks that are not node peers), and reads the slots back.
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(static_cast<std::size_t>(size()));
  std::fill_n(mine.local(), size(), std::int64_t{-1});
  const std::vector<std::uint64_t> at = allgather(world(), std::uint64_t{mine.address()});
  barrier(world());
  transport::backend& t = transport::current();
  const std::int64_t me = rank();
  for (rank_t q = 0; q < size(); ++q) {
    t.put(q, at[static_cast<std::size_t>(q)] + static_cast<std::size_t>(rank()) * sizeof me,
          std::as_bytes(std::span(&me, 1)));
  }
  t.flush_all();
  barrier(world());
  for (rank_t q = 0; q < size(); ++q) EXPECT_EQ(mine.local()[q], q);
  barrier(world());
  deallocate(mine);
}

TEST_F(Heap, ThreadsAllocateAndFreeConcurrently) {
  const heap_stats_t before = heap_stats();
  std::vector<std::thread> threads;
  std::atomic<int> damaged{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 gen(static_cast<unsigned>(t) + 11U);
      std::vector<std::pair<global_ptr<std::uint32_t>, std::uint32_t>> live;
      for (int i = 0; i < 3000; ++i) {
        if (live.empty() || gen() % 3 != 0) {
          const std::uint32_t n = 1 + gen() % 64;
          global_ptr<std::uint32_t> p = allocate<std::uint32_t>(n);
          std::fill_n(p.local(), n, static_cast<std::uint32_t>(t * 100000 + i));
          live.emplace_back(p, n);
        } else {
          const std::size_t k = gen() % live.size();
          auto [p, n] = live[k];
          const std::uint32_t v = p.local()[0];
          if (!std::all_of(p.local(), p.local() + n, [&](std::uint32_t x) { return x == v; })) {
            damaged.fetch_add(1);
          }
          deallocate(p);
          live[k] = live.back();
          live.pop_back();
        }
      }
      for (auto& [p, n] : live) deallocate(p);
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(damaged.load(), 0);
  EXPECT_EQ(heap_stats().used, before.used);
  EXPECT_EQ(heap_stats().live_blocks, before.live_blocks);
}

TEST_F(Heap, BadInputIsRejectedAndChangesNothing) {
  global_ptr<std::int64_t> p = allocate<std::int64_t>(8);
  global_ptr<std::int64_t> keep = allocate<std::int64_t>(8);
  deallocate(p);
  const heap_stats_t s = heap_stats();
  // Double free.
  expect_error(error_class::arg, "deallocate", [&] { deallocate(p); });
  EXPECT_TRUE(same(heap_stats(), s));
  // An interior pointer.
  expect_error(error_class::arg, "deallocate", [&] { deallocate(keep + 1); });
  EXPECT_TRUE(same(heap_stats(), s));
  // Memory that is not the heap's.
  std::int64_t stack_value = 0;
  expect_error(error_class::arg, "deallocate",
               [&] { deallocate(global_ptr<std::int64_t>::from_local(&stack_value)); });
  EXPECT_TRUE(same(heap_stats(), s));
  // Another rank's memory that starts no block there (8 bytes into a block: never a block's
  // start): its owner rejects it and says so here.
  const rank_t other = (rank() + 1) % size();
  if (other != rank()) {
    expect_error(error_class::arg, "deallocate",
                 [&] { deallocate(global_ptr<std::int64_t>(other, keep.address() + 8)); });
    EXPECT_TRUE(same(heap_stats(), s));
  }
  // A destructor never runs for a rejected delete_.
  const int alive = counted::alive.load();
  global_ptr<counted> c = new_<counted>();
  expect_error(error_class::arg, "deallocate", [&] { delete_(c + 1); });
  EXPECT_EQ(counted::alive.load(), alive + 1);
  delete_(c);
  // Bad alignments.
  expect_error(error_class::arg, "allocate", [&] { (void)allocate<std::byte>(8, 3); });
  expect_error(error_class::arg, "allocate", [&] { (void)allocate<std::byte>(8, 8192); });
  EXPECT_TRUE(same(heap_stats(), s));
  deallocate(keep);
}

// Heap memory is reserved in shared memory as blocks are handed out (issue 18): a block larger
// than what /dev/shm has free raises no_mem naming the free space, instead of being handed out
// and killing the rank with SIGBUS when it is first touched. The heap is left as it was (no
// segment kept for it), and it goes on serving what fits.
TEST_F(Heap, ABlockBeyondTheFreeSharedMemoryRaisesNoMemAndChangesNothing) {
  const std::size_t free = shm_free_bytes();
  ONESIDE_SKIP_UNLESS_ALL(free > 0, "/dev/shm has no size limit");
  global_ptr<std::byte> keep = allocate<std::byte>(100);
  const heap_stats_t before = heap_stats();
  barrier(world());
  const std::vector<std::string> objects = job_shm_objects();
  barrier(world());
  const std::size_t too_much = free + (std::size_t{64} << 20);
  for (const auto& [call, make] :
       {std::pair<std::string_view, std::function<void()>>{
            "allocate", [&] { (void)allocate<std::byte>(too_much); }},
        {"allocate_on", [&] { (void)allocate_on<std::byte>(rank(), too_much).wait(); }}}) {
    expect_no_shared_memory(call, make);
    EXPECT_TRUE(same(heap_stats(), before));
    barrier(world());
    EXPECT_EQ(job_shm_objects(), objects);
    barrier(world());
  }
  global_ptr<std::byte> more = allocate<std::byte>(std::size_t{1} << 20);
  more.local()[(std::size_t{1} << 20) - 1] = std::byte{1};
  deallocate(more);
  deallocate(keep);
}

// The same for the symmetric heap, whose allocations are collective: every rank raises.
TEST_F(Heap, ASymmetricBlockBeyondTheFreeSharedMemoryRaisesNoMemOnEveryRank) {
  const std::size_t free = broadcast(world(), std::uint64_t{shm_free_bytes()}, 0);
  ONESIDE_SKIP_UNLESS_ALL(free > 0, "/dev/shm has no size limit");
  const heap_stats_t before = symmetric_heap_stats();
  expect_no_shared_memory(
      "symmetric_allocate",
      [&] { (void)symmetric_allocate<std::byte>(free + (std::size_t{64} << 20)); }, true);
  EXPECT_TRUE(same(symmetric_heap_stats(), before));
  global_ptr<int> p = symmetric_allocate<int>(5);
  EXPECT_TRUE(p);
  symmetric_free(p);
}

TEST_F(Heap, NullIsIgnoredAndZeroBytesGetABlock) {
  deallocate(global_ptr<int>());
  global_ptr<int> a = allocate<int>(0), b = allocate<int>(0);
  EXPECT_TRUE(a);
  EXPECT_NE(a, b);
  deallocate(a);
  deallocate(b);
}

}  // namespace
}  // namespace oneside::test
