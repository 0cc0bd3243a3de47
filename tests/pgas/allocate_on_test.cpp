// Allocation in another rank's heap and freeing another rank's block (heap.hpp): allocate_on
// from every rank to every rank with the blocks written by their origins through the transport
// and checked by their owners, requests that grow the owner's heap (its heap thread, not its
// agent), many requests in flight, continuations that wait for other remote calls, and
// errors: a bad rank raised at once, bad alignment and the owner's no_mem failing the future,
// remote double frees, interior and foreign pointers rejected by the owner with its message
// and its heap left exactly as it was, delete_ of another rank's object raising error(rank).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/runtime/wait.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"
#include "runtime/transport.hpp"

namespace oneside::test {
namespace {

// Before main opens the runtime: segments of 1 MiB, at most 8 MiB of heap per rank, so that
// growing and the cap are cheap to reach.
[[maybe_unused]] const bool configured = ::setenv("ONESIDE_HEAP_MAX_BYTES", "8M", 1) == 0 &&
                                         ::setenv("ONESIDE_HEAP_SEGMENT_BYTES", "1M", 1) == 0;

constexpr std::size_t mib = std::size_t{1} << 20;

class AllocateOn : public RankTest {};

bool same(const heap_stats_t& a, const heap_stats_t& b) {
  return a.size == b.size && a.used == b.used && a.free == b.free &&
         a.largest_free == b.largest_free && a.segments == b.segments &&
         a.live_blocks == b.live_blocks;
}

rank_t next_rank() {
  return (world().rank() + 1) % world().size();
}
rank_t previous_rank() {
  return (world().rank() + world().size() - 1) % world().size();
}

// The owner's heap, the same after `f` as before it (every rank runs f; barriers keep other
// ranks' requests out of the measurement).
template <class F>
void expect_owner_heap_unchanged(F&& f) {
  barrier(world());
  const heap_stats_t before = heap_stats();
  barrier(world());
  f();
  barrier(world());
  EXPECT_TRUE(same(heap_stats(), before)) << "this rank's heap changed";
  barrier(world());
}

TEST_F(AllocateOn, EveryRankAllocatesOnEveryRankAndWritesItsBlocks) {
  barrier(world());
  const heap_stats_t before = heap_stats();
  barrier(world());
  // 16 words on every rank (this one included); all requests in flight at once.
  constexpr std::size_t words = 16;
  std::vector<future<global_ptr<std::uint64_t>>> pending;
  for (rank_t q = 0; q < size(); ++q) pending.push_back(allocate_on<std::uint64_t>(q, words));
  std::vector<global_ptr<std::uint64_t>> mine;
  for (auto& f : pending) mine.push_back(f.wait());
  transport::backend& t = transport::current();
  for (rank_t q = 0; q < size(); ++q) {
    const global_ptr<std::uint64_t> p = mine[static_cast<std::size_t>(q)];
    EXPECT_EQ(p.where(), q);
    EXPECT_NE(p.address(), 0U);
    EXPECT_EQ(p.address() % alignof(std::uint64_t), 0U);
    // The origin writes its block through the transport (the network path where the owner
    // is no node peer).
    std::vector<std::uint64_t> pattern(words);
    for (std::size_t i = 0; i < words; ++i) {
      pattern[i] =
          static_cast<std::uint64_t>(rank()) << 32 | static_cast<std::uint64_t>(q) << 16 | i;
    }
    t.put(q, p.address(), std::as_bytes(std::span(pattern)));
  }
  t.flush_all();
  // Every owner learns where its blocks are and checks them in its own memory.
  std::vector<std::uint64_t> out(static_cast<std::size_t>(size())), in(out.size());
  for (rank_t q = 0; q < size(); ++q)
    out[static_cast<std::size_t>(q)] = mine[static_cast<std::size_t>(q)].address();
  alltoall(world(), out, in);
  EXPECT_EQ(heap_stats().live_blocks, before.live_blocks + static_cast<std::size_t>(size()));
  std::vector<std::uint64_t> sorted = in;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    EXPECT_GE(sorted[i] - sorted[i - 1], words * sizeof(std::uint64_t)) << "blocks overlap";
  }
  for (rank_t r = 0; r < size(); ++r) {
    const auto* block = reinterpret_cast<const std::uint64_t*>(in[static_cast<std::size_t>(r)]);
    for (std::size_t i = 0; i < words; ++i) {
      EXPECT_EQ(block[i],
                static_cast<std::uint64_t>(r) << 32 | static_cast<std::uint64_t>(rank()) << 16 | i)
          << "block of rank " << r << ", word " << i;
    }
  }
  barrier(world());
  // Every origin frees its blocks: this rank's at once, the others' by their owners.
  for (const auto& p : mine) deallocate(p);
  barrier(world());
  const heap_stats_t after = heap_stats();
  EXPECT_EQ(after.live_blocks, before.live_blocks);
  EXPECT_EQ(after.used, before.used);
}

TEST_F(AllocateOn, ThisRankGetsAReadyFutureFromItsOwnHeap) {
  const heap_stats_t before = heap_stats();
  future<global_ptr<int>> f = allocate_on<int>(rank(), 4);
  EXPECT_TRUE(f.is_ready());
  const global_ptr<int> p = f.wait();
  EXPECT_EQ(p.where(), rank());
  EXPECT_EQ(heap_stats().live_blocks, before.live_blocks + 1);
  p.local()[3] = 7;
  future<> freed = deallocate_async(p);
  EXPECT_TRUE(freed.is_ready());
  freed.wait();
  EXPECT_TRUE(same(heap_stats(), before));
}

TEST_F(AllocateOn, GrowsTheOwnersHeapOffItsAgent) {
  // 3 MiB does not fit a 1 MiB segment: the owner's heap thread adds a segment of its own
  // size (attaching it to the window, which under MPI or without load/store talks to peers).
  barrier(world());
  const heap_stats_t before = heap_stats();
  barrier(world());
  const global_ptr<std::byte> p = allocate_on<std::byte>(next_rank(), 3 * mib, 4096).wait();
  EXPECT_EQ(p.where(), next_rank());
  EXPECT_EQ(p.address() % 4096, 0U);
  transport::backend& t = transport::current();
  const std::uint64_t first = 0x1111, last = 0x2222;
  t.put(p.where(), p.address(), std::as_bytes(std::span(&first, 1)));
  t.put(p.where(), p.address() + 3 * mib - sizeof last, std::as_bytes(std::span(&last, 1)));
  t.flush_all();
  std::uint64_t back[2] = {};
  t.get(p.where(), p.address(), std::as_writable_bytes(std::span(&back[0], 1)));
  t.get(p.where(), p.address() + 3 * mib - sizeof last,
        std::as_writable_bytes(std::span(&back[1], 1)));
  t.flush_all();
  EXPECT_EQ(back[0], first);
  EXPECT_EQ(back[1], last);
  barrier(world());
  const heap_stats_t grown = heap_stats();
  EXPECT_GE(grown.segments, before.segments + 1);
  EXPECT_GE(grown.size, before.size + 3 * mib);
  EXPECT_EQ(grown.live_blocks, before.live_blocks + 1);
  barrier(world());
  deallocate(p);
  barrier(world());
  EXPECT_EQ(heap_stats().live_blocks, before.live_blocks);
  EXPECT_EQ(heap_stats().used, before.used);
}

TEST_F(AllocateOn, ManyRequestsInFlightGetDisjointBlocks) {
  barrier(world());
  const heap_stats_t before = heap_stats();
  barrier(world());
  constexpr int rounds = 4, per_round = 24;
  std::vector<global_ptr<std::uint32_t>> got;
  for (int round = 0; round < rounds; ++round) {
    std::vector<future<global_ptr<std::uint32_t>>> pending;
    for (int i = 0; i < per_round; ++i) {
      const auto owner = static_cast<rank_t>((rank() + i) % size());
      pending.push_back(
          allocate_on<std::uint32_t>(owner, 1 + static_cast<std::size_t>(i % 7) * 50));
    }
    for (auto& f : pending) got.push_back(f.wait());
  }
  std::vector<global_ptr<std::uint32_t>> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a block twice";
  // Freed all at once, without waiting in between.
  std::vector<future<>> freed;
  for (const auto& p : got) freed.push_back(deallocate_async(p));
  for (auto& f : freed) f.wait();
  barrier(world());
  EXPECT_EQ(heap_stats().live_blocks, before.live_blocks);
  EXPECT_EQ(heap_stats().used, before.used);
}

TEST_F(AllocateOn, ContinuationsMayWaitForOtherRemoteCalls) {
  // The continuation runs on the thread that completes the future (here, inside wait()),
  // never on the agent: a deallocate that waits for the owner's agent inside it completes.
  std::atomic<int> ran{0};
  const bool freed = allocate_on<std::int64_t>(next_rank(), 8)
                         .then([&](global_ptr<std::int64_t> p) {
                           ran.fetch_add(1);
                           deallocate(p);
                           return true;
                         })
                         .wait();
  EXPECT_TRUE(freed);
  EXPECT_EQ(ran.load(), 1);
  barrier(world());
}

TEST_F(AllocateOn, IsReadyAloneCompletesTheFutures) {
  // The futures are polled: is_ready() drives them, no wait() or progress() needed.
  future<global_ptr<int>> f = allocate_on<int>(next_rank(), 3);
  wait_until([&] { return f.is_ready(); });
  const global_ptr<int> p = f.result();
  EXPECT_EQ(p.where(), next_rank());
  future<> freed = deallocate_async(p);
  wait_until([&] { return freed.is_ready(); });
  EXPECT_NO_THROW(freed.result());
  barrier(world());
}

TEST_F(AllocateOn, ABadRankIsRaisedAtOnce) {
  expect_owner_heap_unchanged([&] {
    expect_error(error_class::rank, "allocate_on", [&] { (void)allocate_on<int>(size()); });
    expect_error(error_class::rank, "allocate_on", [&] { (void)allocate_on<int>(-1, 4); });
    expect_error(error_class::rank, "deallocate",
                 [&] { deallocate(global_ptr<int>(size(), 4096)); });
    expect_error(error_class::rank, "deallocate",
                 [&] { (void)deallocate_async(global_ptr<int>(size() + 3, 4096)); });
  });
}

TEST_F(AllocateOn, BadAlignmentFailsTheFuture) {
  expect_owner_heap_unchanged([&] {
    future<global_ptr<std::byte>> odd, huge;
    EXPECT_NO_THROW(odd = allocate_on<std::byte>(next_rank(), 8, 3));
    EXPECT_NO_THROW(huge = allocate_on<std::byte>(next_rank(), 8, 8192));
    expect_error(error_class::arg, "allocate_on", [&] { (void)odd.wait(); });
    expect_error(error_class::arg, "allocate_on", [&] { (void)huge.wait(); });
  });
}

TEST_F(AllocateOn, NoMemAtTheOwnerFailsTheFutureWithItsMessage) {
  expect_owner_heap_unchanged([&] {
    // Beyond the owner's cap of 8 MiB.
    future<global_ptr<std::byte>> f = allocate_on<std::byte>(next_rank(), 9 * mib);
    try {
      (void)f.wait();
      ADD_FAILURE() << "no error";
    } catch (const oneside::error& e) {
      EXPECT_EQ(e.error_class(), error_class::no_mem) << e.what();
      EXPECT_TRUE(names_call(e.what(), "allocate_on")) << e.what();
      // The owner's message, naming the owner.
      const std::string owner = "rank " + std::to_string(next_rank()) + ":";
      EXPECT_NE(std::string(e.what()).find(owner), std::string::npos) << e.what();
    }
    // An overflowing count is no_mem too, from the owner's heap.
    expect_error(error_class::no_mem, "allocate_on",
                 [&] { (void)allocate_on<std::uint64_t>(next_rank(), SIZE_MAX / 4).wait(); });
  });
  // The owner's heap still serves what fits.
  const global_ptr<std::byte> p = allocate_on<std::byte>(next_rank(), mib / 2).wait();
  EXPECT_TRUE(p);
  deallocate(p);
  barrier(world());
}

TEST_F(AllocateOn, RemoteFreesOfWhatIsNoLiveBlockAreRejectedByTheOwner) {
  const global_ptr<std::int64_t> keep = allocate_on<std::int64_t>(next_rank(), 8).wait();
  const global_ptr<std::int64_t> gone = allocate_on<std::int64_t>(next_rank(), 8).wait();
  deallocate(gone);
  const std::string owner = "rank " + std::to_string(next_rank()) + ":";
  expect_owner_heap_unchanged([&] {
    // A double free, raised here with the owner's message.
    try {
      deallocate(gone);
      ADD_FAILURE() << "no error";
    } catch (const oneside::error& e) {
      EXPECT_EQ(e.error_class(), error_class::arg) << e.what();
      EXPECT_TRUE(names_call(e.what(), "deallocate")) << e.what();
      EXPECT_NE(std::string(e.what()).find("freed already"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(owner), std::string::npos) << e.what();
    }
    // Through the future.
    future<> again = deallocate_async(gone);
    expect_error(error_class::arg, "deallocate", [&] { again.wait(); });
    // An interior pointer, and memory that is no block of the owner's heap.
    expect_error(error_class::arg, "deallocate", [&] { deallocate(keep + 1); });
    expect_error(error_class::arg, "deallocate",
                 [&] { deallocate(global_ptr<std::int64_t>(next_rank(), 4096)); });
    expect_error(error_class::arg, "deallocate",
                 [&] { deallocate_async(global_ptr<std::int64_t>(next_rank(), 4096)).wait(); });
  });
  // The owner's heap is consistent: the live block is freed normally, once.
  deallocate(keep);
  expect_error(error_class::arg, "deallocate", [&] { deallocate(keep); });
  barrier(world());
}

struct counted {
  static inline std::atomic<int> alive{0};
  counted() { alive.fetch_add(1); }
  ~counted() { alive.fetch_sub(1); }
  counted(const counted&) = delete;
  counted& operator=(const counted&) = delete;
  std::int64_t value = 5;
};

TEST_F(AllocateOn, DeleteOfAnotherRanksObjectRaisesRank) {
  // Destructors run at the owner: delete_ and delete_array of another rank's object raise
  // error(rank) and leave it alone.
  const global_ptr<counted> one = new_<counted>();
  const global_ptr<counted> many = new_array<counted>(3);
  const std::vector<std::uint64_t> ones = allgather(world(), std::uint64_t{one.address()});
  const std::vector<std::uint64_t> manys = allgather(world(), std::uint64_t{many.address()});
  const auto at = static_cast<std::size_t>(previous_rank());
  barrier(world());
  const int alive = counted::alive.load();
  if (size() > 1) {
    expect_error(error_class::rank, "deallocate",
                 [&] { delete_(global_ptr<counted>(previous_rank(), ones[at])); });
    expect_error(error_class::rank, "deallocate",
                 [&] { delete_array(global_ptr<counted>(previous_rank(), manys[at])); });
  }
  barrier(world());
  EXPECT_EQ(counted::alive.load(), alive);
  EXPECT_EQ(one.local()->value, 5);
  delete_array(many);
  delete_(one);
  EXPECT_EQ(counted::alive.load(), alive - 4);
  barrier(world());
}

}  // namespace
}  // namespace oneside::test
