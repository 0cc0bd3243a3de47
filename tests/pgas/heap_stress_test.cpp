// The heaps under random use, checked against a model: every rank allocates and frees at
// random in its own heap and, through allocate_on and remote frees, in every other rank's
// (several requests in flight, two threads per rank), filling each block with a pattern of
// its own through the transport and reading it back before freeing it, so that overlapping
// blocks show; then the symmetric heap under the same random sequence on every rank. At the
// end every block is freed and the heaps must have coalesced completely.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/pgas/symmetric_heap.hpp>

#include "rank_test.hpp"
#include "runtime/transport.hpp"

namespace oneside::test {
namespace {

// Before main opens the runtime: segments of 1 MiB, so that the heaps grow several times.
[[maybe_unused]] const bool configured = ::setenv("ONESIDE_HEAP_SEGMENT_BYTES", "1M", 1) == 0;

constexpr std::size_t mib = std::size_t{1} << 20;

class HeapStress : public RankTest {};

// A live block of the model: where it is, how many words, the word it is filled with.
struct block {
  std::size_t words;
  std::uint64_t fill;
};
using model = std::map<global_ptr<std::uint64_t>, block>;

// Whether every rank is reached through the shm transport (not MPI).
bool on_shm() {
  return transport::current().name() == "shm";
}

// The number of steps of each walk: fewer when ranks outnumber cores or when every message
// crosses MPI over TCP (milliseconds per round trip on an oversubscribed machine).
int steps() {
  if (!on_shm()) return 250;
  return world().size() > 4 ? 600 : 2000;
}

// Fills `p` with `fill` through the transport (the network path for remote owners).
void write_block(global_ptr<std::uint64_t> p, const block& b) {
  const std::vector<std::uint64_t> words(b.words, b.fill);
  transport::backend& t = transport::current();
  t.put(p.where(), p.address(), std::as_bytes(std::span(words)));
  t.flush(p.where());
}

// Whether `p` still holds its fill (no other block was written over it).
bool block_intact(global_ptr<std::uint64_t> p, const block& b) {
  std::vector<std::uint64_t> words(b.words);
  transport::current().get(p.where(), p.address(), std::as_writable_bytes(std::span(words)));
  return std::all_of(words.begin(), words.end(), [&](std::uint64_t w) { return w == b.fill; });
}

// No new block overlaps a block of the model on the same rank.
bool overlaps(const model& live, global_ptr<std::uint64_t> p, std::size_t words) {
  auto next = live.lower_bound(p);
  if (next != live.end() && next->first.where() == p.where() &&
      next->first.address() < p.address() + words * 8) {
    return true;
  }
  if (next != live.begin()) {
    const auto& [q, b] = *std::prev(next);
    if (q.where() == p.where() && q.address() + b.words * 8 > p.address()) return true;
  }
  return false;
}

// One thread's random walk over every rank's heap; returns the number of damaged blocks and
// overlaps seen. Without `with_data` the blocks are not written or read (only the model's
// overlap check runs).
int random_walk(unsigned seed, int n, bool with_data) {
  std::mt19937_64 gen(seed);
  model live;
  int bad = 0;
  std::uint64_t serial = 0;
  const auto fill_of = [&] { return (std::uint64_t{seed} << 32) | ++serial; };
  const auto free_one = [&](bool async, std::vector<future<>>& freeing) {
    auto it = live.begin();
    std::advance(it, static_cast<long>(gen() % live.size()));
    if (with_data && !block_intact(it->first, it->second)) ++bad;
    if (async) {
      freeing.push_back(deallocate_async(it->first));
    } else {
      deallocate(it->first);
    }
    live.erase(it);
  };
  for (int i = 0; i < n; ++i) {
    const auto owner = static_cast<rank_t>(gen() % static_cast<std::uint64_t>(world().size()));
    const std::uint64_t what = gen() % 8;
    if (what < 4 || live.empty()) {
      // A batch of 1 to 6 allocations in flight, on random owners (this rank's own heap
      // through allocate<T> or allocate_on), of 1 word to 8 KiB, one in 16 up to 256 KiB.
      const std::size_t batch = 1 + gen() % 6;
      std::vector<std::pair<future<global_ptr<std::uint64_t>>, std::size_t>> pending;
      for (std::size_t k = 0; k < batch; ++k) {
        const auto o = static_cast<rank_t>((owner + static_cast<rank_t>(k)) % world().size());
        const std::size_t words = 1 + gen() % (gen() % 16 == 0 ? 32768 : 1024);
        const std::size_t align = std::size_t{8} << (gen() % 4);
        if (o == world().rank() && gen() % 2 == 0) {
          pending.emplace_back(make_future(allocate<std::uint64_t>(words, align)), words);
        } else {
          pending.emplace_back(allocate_on<std::uint64_t>(o, words, align), words);
        }
      }
      for (auto& [f, words] : pending) {
        const global_ptr<std::uint64_t> p = f.wait();
        if (overlaps(live, p, words)) ++bad;
        const block b{words, fill_of()};
        if (with_data) write_block(p, b);
        live.emplace(p, b);
      }
    } else if (what < 7) {
      // Frees, synchronous or several in flight.
      std::vector<future<>> freeing;
      const std::size_t batch = std::min<std::size_t>(1 + gen() % 5, live.size());
      const bool async = gen() % 2 == 0;
      for (std::size_t k = 0; k < batch; ++k) free_one(async, freeing);
      for (future<>& f : freeing) f.wait();
    } else {
      // Check a few blocks without freeing them.
      for (const auto& [p, b] : live) {
        if (with_data && gen() % 8 == 0 && !block_intact(p, b)) ++bad;
      }
    }
  }
  std::vector<future<>> freeing;
  while (!live.empty()) free_one(true, freeing);
  for (future<>& f : freeing) f.wait();
  return bad;
}

// Every segment of this rank's heap is one free block again: `segments` blocks of
// largest_free bytes each take a whole segment, leaving no free space and no growth.
void expect_heap_fully_coalesced(const heap_stats_t& s) {
  EXPECT_EQ(s.live_blocks, 0U);
  EXPECT_EQ(s.used, 0U);
  EXPECT_EQ(s.size, s.free + 16 * s.segments);
  if (s.segments == 1) {
    EXPECT_EQ(s.largest_free, s.free - 16);
  }
  std::vector<global_ptr<std::byte>> whole;
  for (std::size_t i = 0; i < s.segments; ++i) {
    whole.push_back(allocate<std::byte>(heap_stats().largest_free));
  }
  const heap_stats_t full = heap_stats();
  EXPECT_EQ(full.segments, s.segments) << "the heap grew: a segment was not one free block";
  EXPECT_EQ(full.free, 0U) << "free space left over: a segment was not one free block";
  for (const auto& p : whole) deallocate(p);
}

TEST_F(HeapStress, RandomAllocationsAndFreesOnEveryRankKeepBlocksDisjoint) {
  barrier(world());
  const heap_stats_t before = heap_stats();
  EXPECT_EQ(before.live_blocks, 0U);
  barrier(world());
  // Two threads per rank, each with a model of its own blocks (on every rank), both writing
  // and checking their blocks' data (under MPI: two threads of a rank in one-sided calls at
  // once, which the MPI transport serializes for osc ucx).
  // 700 KiB of the next rank's first segment: the walks make every heap grow.
  const global_ptr<std::byte> ballast =
      allocate_on<std::byte>((rank() + 1) % size(), 700 * 1024).wait();
  int bad[2] = {0, 0};
  std::thread second(
      [&] { bad[1] = random_walk(static_cast<unsigned>(rank()) * 2 + 2, steps(), true); });
  bad[0] = random_walk(static_cast<unsigned>(rank()) * 2 + 1, steps(), true);
  second.join();
  EXPECT_EQ(bad[0] + bad[1], 0) << "damaged or overlapping blocks";
  deallocate(ballast);
  // Everybody is done with every heap.
  barrier(world());
  const heap_stats_t after = heap_stats();
  EXPECT_GT(after.segments, 1U) << "the heap grew (1 MiB segments)";
  expect_heap_fully_coalesced(after);
  barrier(world());
}

TEST_F(HeapStress, RandomSymmetricAllocationsAgreeAndCoalesce) {
  // The same seed on every rank: the same collective calls everywhere.
  std::mt19937_64 gen(12345);
  std::map<std::uint64_t, std::pair<global_ptr<std::uint64_t>, std::size_t>> live;  // by serial
  std::uint64_t serial = 0;
  int bad = 0;
  const int n = 500;  // collectives only, fast enough on every transport
  for (int i = 0; i < n; ++i) {
    if (live.empty() || gen() % 3 != 0) {
      const std::size_t words = 1 + gen() % (gen() % 16 == 0 ? 40000 : 512);
      const std::size_t align = std::size_t{8} << (gen() % 6);
      const global_ptr<std::uint64_t> p = symmetric_allocate<std::uint64_t>(words, align);
      // Rank r's copy is at p.on(r), the address rank r got (checked on every 16th).
      if (i % 16 == 0) {
        const std::vector<std::uint64_t> at = allgather(world(), std::uint64_t{p.address()});
        for (rank_t r = 0; r < size(); ++r) {
          if (p.on(r).address() != at[static_cast<std::size_t>(r)]) ++bad;
        }
      }
      ++serial;
      std::fill_n(p.local(), words, serial * 1000 + static_cast<std::uint64_t>(rank()));
      live.emplace(serial, std::make_pair(p, words));
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(gen() % live.size()));
      const auto& [p, words] = it->second;
      const std::uint64_t fill = it->first * 1000 + static_cast<std::uint64_t>(rank());
      if (!std::all_of(p.local(), p.local() + words, [&](std::uint64_t w) { return w == fill; })) {
        ++bad;
      }
      symmetric_free(p);
      live.erase(it);
    }
  }
  EXPECT_EQ(bad, 0) << "damaged blocks or pointers that do not agree";
  for (const auto& [serial_of, entry] : live) symmetric_free(entry.first);
  const heap_stats_t s = symmetric_heap_stats();
  EXPECT_EQ(s.live_blocks, 0U);
  EXPECT_EQ(s.used, 0U);
  EXPECT_GT(s.segments, 1U) << "the symmetric heap grew (1 MiB segments)";
  // Full coalescing, as for the global heap (collectively: the stats agree everywhere).
  std::vector<global_ptr<std::byte>> whole;
  for (std::size_t i = 0; i < s.segments; ++i) {
    whole.push_back(symmetric_allocate<std::byte>(symmetric_heap_stats().largest_free));
  }
  EXPECT_EQ(symmetric_heap_stats().segments, s.segments) << "a segment was not one free block";
  EXPECT_EQ(symmetric_heap_stats().free, 0U) << "a segment was not one free block";
  for (const auto& p : whole) symmetric_free(p);
}

}  // namespace
}  // namespace oneside::test
