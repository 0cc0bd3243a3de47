// The symmetric heap (symmetric_heap.hpp): every rank's block at the same offset (p.on(r) is
// the address rank r got), data reachable at p.on(r) from every rank, growth by several
// segments on every rank at once, the budget, arguments that differ between ranks rejected
// on every rank with nothing allocated, symmetric_free's checks (the same block everywhere,
// double free, interior pointers) changing nothing, and full coalescing once all is freed.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/pgas/symmetric_heap.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"
#include "runtime/transport.hpp"

namespace oneside::test {
namespace {

// Before main opens the runtime: segments of 1 MiB and a budget of 16 MiB (each heap).
[[maybe_unused]] const bool configured = ::setenv("ONESIDE_HEAP_MAX_BYTES", "16M", 1) == 0 &&
                                         ::setenv("ONESIDE_HEAP_SEGMENT_BYTES", "1M", 1) == 0;

constexpr std::size_t mib = std::size_t{1} << 20;

class SymmetricHeap : public RankTest {};

bool same(const heap_stats_t& a, const heap_stats_t& b) {
  return a.size == b.size && a.used == b.used && a.free == b.free &&
         a.largest_free == b.largest_free && a.segments == b.segments &&
         a.live_blocks == b.live_blocks;
}

// Every rank's address of its block is what p.on(r) computes, on every rank.
template <class T>
void expect_symmetric(global_ptr<T> p) {
  EXPECT_EQ(p.where(), world().rank());
  const std::vector<std::uint64_t> at = allgather(world(), std::uint64_t{p.address()});
  for (rank_t r = 0; r < world().size(); ++r) {
    const global_ptr<T> there = p.on(r);
    EXPECT_EQ(there.where(), r);
    EXPECT_EQ(there.address(), at[static_cast<std::size_t>(r)]) << "rank " << r;
    // And back: any rank's pointer names the same block on every rank.
    EXPECT_EQ(there.on(world().rank()), p);
  }
}

// The same figures on every rank.
void expect_stats_agree() {
  const heap_stats_t s = symmetric_heap_stats();
  const std::vector<std::uint64_t> used = allgather(world(), std::uint64_t{s.used});
  const std::vector<std::uint64_t> segs = allgather(world(), std::uint64_t{s.segments});
  const std::vector<std::uint64_t> live = allgather(world(), std::uint64_t{s.live_blocks});
  for (std::size_t r = 0; r < used.size(); ++r) {
    EXPECT_EQ(used[r], s.used) << "rank " << r;
    EXPECT_EQ(segs[r], s.segments) << "rank " << r;
    EXPECT_EQ(live[r], s.live_blocks) << "rank " << r;
  }
}

// Every segment is one free block again. A block of largest_free bytes takes the largest free
// block whole, so `segments` of them take all the free space exactly when each segment is one
// free block (a segment split in two free blocks leaves one over, or makes the heap grow).
void expect_fully_coalesced() {
  const heap_stats_t s = symmetric_heap_stats();
  EXPECT_EQ(s.live_blocks, 0U);
  EXPECT_EQ(s.used, 0U);
  EXPECT_EQ(s.size, s.free + 16 * s.segments) << "fence words of each segment's ends";
  if (s.segments == 1) {
    EXPECT_EQ(s.largest_free, s.free - 16) << "one free block";
  }
  std::vector<global_ptr<std::byte>> whole;
  for (std::size_t i = 0; i < s.segments; ++i) {
    whole.push_back(symmetric_allocate<std::byte>(symmetric_heap_stats().largest_free));
  }
  const heap_stats_t full = symmetric_heap_stats();
  EXPECT_EQ(full.segments, s.segments) << "the heap grew: some segment was not one free block";
  EXPECT_EQ(full.free, 0U) << "free space left over: some segment was not one free block";
  EXPECT_EQ(full.live_blocks, s.segments);
  for (const auto& p : whole) symmetric_free(p);
  EXPECT_TRUE(same(symmetric_heap_stats(), s));
}

TEST_F(SymmetricHeap, EveryRankGetsItsBlockAtTheSameOffset) {
  const heap_stats_t before = symmetric_heap_stats();
  // Sizes and alignments in a sequence every rank repeats.
  std::vector<global_ptr<std::byte>> blocks;
  for (int i = 0; i < 40; ++i) {
    const std::size_t bytes = std::size_t{1} << (i % 12);
    const std::size_t align = std::size_t{1} << (i % 13);
    global_ptr<std::byte> p = symmetric_allocate<std::byte>(bytes, align);
    EXPECT_EQ(p.address() % align, 0U);
    expect_symmetric(p);
    blocks.push_back(p);
    if (i % 3 == 2) {  // free some in between
      symmetric_free(blocks[blocks.size() - 2]);
      blocks.erase(blocks.end() - 2);
    }
  }
  expect_stats_agree();
  for (const auto& p : blocks) symmetric_free(p);
  const heap_stats_t after = symmetric_heap_stats();
  EXPECT_EQ(after.live_blocks, before.live_blocks);
  EXPECT_EQ(after.used, before.used);
  expect_stats_agree();
}

TEST_F(SymmetricHeap, BlocksAreReachableAtOnFromEveryRank) {
  // Each rank writes its number into its slot of every rank's copy through the transport and
  // reads the slots back; node peers' copies also through local().
  global_ptr<std::int64_t> p = symmetric_allocate<std::int64_t>(static_cast<std::size_t>(size()));
  std::fill_n(p.local(), size(), std::int64_t{-1});
  barrier(world());
  transport::backend& t = transport::current();
  const std::int64_t me = rank();
  for (rank_t q = 0; q < size(); ++q) {
    t.put(q, (p.on(q) + rank()).address(), std::as_bytes(std::span(&me, 1)));
  }
  t.flush_all();
  barrier(world());
  for (rank_t q = 0; q < size(); ++q) EXPECT_EQ(p.local()[q], q);
  for (rank_t q = 0; q < size(); ++q) {
    std::vector<std::int64_t> there(static_cast<std::size_t>(size()));
    t.get(q, p.on(q).address(), std::as_writable_bytes(std::span(there)));
    for (rank_t r = 0; r < size(); ++r) EXPECT_EQ(there[static_cast<std::size_t>(r)], r);
    if (p.on(q).is_local()) {
      EXPECT_EQ(p.on(q).local()[q], q);
    }
  }
  barrier(world());
  symmetric_free(p);
}

TEST_F(SymmetricHeap, GrowsBySeveralSegmentsOnEveryRank) {
  const heap_stats_t before = symmetric_heap_stats();
  // 700 KiB twice does not fit one 1 MiB segment: a segment each; 3 MiB gets one of its own.
  std::vector<global_ptr<std::uint64_t>> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(symmetric_allocate<std::uint64_t>(700 * 1024 / 8));
  blocks.push_back(symmetric_allocate<std::uint64_t>(3 * mib / 8, 4096));
  const heap_stats_t grown = symmetric_heap_stats();
  EXPECT_GE(grown.segments, before.segments + 4);
  EXPECT_GE(grown.size, before.size + 4 * 700 * 1024 + 3 * mib);
  for (const auto& p : blocks) {
    expect_symmetric(p);
    p.local()[0] = 1;  // the first and last words are this rank's memory
    p.local()[p == blocks.back() ? 3 * mib / 8 - 1 : 700 * 1024 / 8 - 1] = 2;
  }
  expect_stats_agree();
  for (const auto& p : blocks) symmetric_free(p);
  EXPECT_EQ(symmetric_heap_stats().live_blocks, before.live_blocks);
  EXPECT_EQ(symmetric_heap_stats().segments, grown.segments) << "segments stay";
}

TEST_F(SymmetricHeap, ArgumentsThatDifferBetweenRanksAreRejectedEverywhere) {
  const heap_stats_t before = symmetric_heap_stats();
  if (size() > 1) {
    // Another count on rank 0.
    expect_error(error_class::arg, "symmetric_allocate",
                 [&] { (void)symmetric_allocate<int>(rank() == 0 ? 10 : 20); });
    EXPECT_TRUE(same(symmetric_heap_stats(), before));
    // Another alignment on the last rank.
    expect_error(error_class::arg, "symmetric_allocate",
                 [&] { (void)symmetric_allocate<int>(8, rank() == size() - 1 ? 64 : 16); });
    EXPECT_TRUE(same(symmetric_heap_stats(), before));
    // Another type of the same count.
    expect_error(error_class::arg, "symmetric_allocate", [&] {
      if (rank() == 0) {
        (void)symmetric_allocate<std::int64_t>(4);
      } else {
        (void)symmetric_allocate<std::int32_t>(4);
      }
    });
    EXPECT_TRUE(same(symmetric_heap_stats(), before));
  }
  // A bad alignment, the same everywhere.
  expect_error(error_class::arg, "symmetric_allocate",
               [&] { (void)symmetric_allocate<std::byte>(8, 48); });
  expect_error(error_class::arg, "symmetric_allocate",
               [&] { (void)symmetric_allocate<std::byte>(8, 8192); });
  EXPECT_TRUE(same(symmetric_heap_stats(), before));
  // The heaps still agree: the next allocation is symmetric.
  global_ptr<int> p = symmetric_allocate<int>(5);
  expect_symmetric(p);
  symmetric_free(p);
  EXPECT_TRUE(same(symmetric_heap_stats(), before));
}

TEST_F(SymmetricHeap, TheBudgetRaisesNoMemEverywhere) {
  const heap_stats_t before = symmetric_heap_stats();
  expect_error(error_class::no_mem, "symmetric_allocate",
               [&] { (void)symmetric_allocate<std::byte>(17 * mib); });
  EXPECT_TRUE(same(symmetric_heap_stats(), before));
  expect_error(error_class::no_mem, "symmetric_allocate",
               [&] { (void)symmetric_allocate<std::uint64_t>(SIZE_MAX / 2); });
  EXPECT_TRUE(same(symmetric_heap_stats(), before));
  // Up to the budget, block by block, then no_mem; what was freed serves again.
  std::vector<global_ptr<std::byte>> blocks;
  for (;;) {
    try {
      blocks.push_back(symmetric_allocate<std::byte>(mib / 2));
    } catch (const oneside::error& e) {
      EXPECT_EQ(e.error_class(), error_class::no_mem) << e.what();
      break;
    }
    if (blocks.size() > 64) break;
  }
  EXPECT_LE(symmetric_heap_stats().size, 16 * mib);
  EXPECT_GE(blocks.size(), 8U);
  EXPECT_LE(blocks.size(), 32U);
  expect_stats_agree();
  for (const auto& p : blocks) symmetric_free(p);
  global_ptr<std::byte> again = symmetric_allocate<std::byte>(mib / 2);
  expect_symmetric(again);
  symmetric_free(again);
}

TEST_F(SymmetricHeap, FreeChecksTheSameLiveBlockEverywhere) {
  global_ptr<std::int64_t> a = symmetric_allocate<std::int64_t>(8);
  global_ptr<std::int64_t> b = symmetric_allocate<std::int64_t>(8);
  const heap_stats_t s = symmetric_heap_stats();
  if (size() > 1) {
    // Rank 0 names another block than the others.
    expect_error(error_class::arg, "symmetric_free", [&] { symmetric_free(rank() == 0 ? a : b); });
    EXPECT_TRUE(same(symmetric_heap_stats(), s));
    // Null on one rank only.
    expect_error(error_class::arg, "symmetric_free",
                 [&] { symmetric_free(rank() == 1 ? global_ptr<std::int64_t>() : a); });
    EXPECT_TRUE(same(symmetric_heap_stats(), s));
  }
  // An interior pointer, memory outside the symmetric heap, a bad rank.
  expect_error(error_class::arg, "symmetric_free", [&] { symmetric_free(a + 1); });
  global_ptr<std::int64_t> other = allocate<std::int64_t>(8);
  expect_error(error_class::arg, "symmetric_free", [&] { symmetric_free(other); });
  deallocate(other);
  expect_error(error_class::rank, "symmetric_free",
               [&] { symmetric_free(global_ptr<std::int64_t>(size(), a.address())); });
  EXPECT_TRUE(same(symmetric_heap_stats(), s));
  // Another rank's pointer to the block names this rank's copy too.
  symmetric_free(a.on((rank() + 1) % size()));
  EXPECT_EQ(symmetric_heap_stats().live_blocks, s.live_blocks - 1);
  // A double free, everywhere.
  const heap_stats_t t = symmetric_heap_stats();
  expect_error(error_class::arg, "symmetric_free", [&] { symmetric_free(a); });
  EXPECT_TRUE(same(symmetric_heap_stats(), t));
  // Null everywhere: a barrier, nothing else.
  symmetric_free(global_ptr<int>());
  EXPECT_TRUE(same(symmetric_heap_stats(), t));
  symmetric_free(b);
}

TEST_F(SymmetricHeap, OnRejectsWhatIsNotInTheSymmetricHeap) {
  global_ptr<int> heap_block = allocate<int>(4);
  expect_error(error_class::arg, "global_ptr::on", [&] { (void)heap_block.on(0); });
  deallocate(heap_block);
  global_ptr<int> p = symmetric_allocate<int>(4);
  expect_error(error_class::rank, "global_ptr::on", [&] { (void)p.on(size()); });
  expect_error(error_class::rank, "global_ptr::on", [&] { (void)p.on(-1); });
  EXPECT_EQ(global_ptr<int>().on(0), global_ptr<int>()) << "null stays null";
  symmetric_free(p);
}

TEST_F(SymmetricHeap, EverythingFreedCoalescesFully) {
  expect_stats_agree();
  expect_fully_coalesced();
}

}  // namespace
}  // namespace oneside::test
