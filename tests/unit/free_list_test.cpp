// The global heap's free-list allocator on private memory: alignment, splitting and
// coalescing, first fit in heap order, growth by arenas, rejected misuse that changes
// nothing, determinism across arena addresses, and randomized stress against a model
// (single- and multi-threaded).
#include "pgas/free_list.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/runtime/error.hpp>

#include "runtime/check.hpp"

namespace oneside::pgas::detail {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t overhead = free_list::arena_overhead + free_list::block_overhead;

// Page-aligned private memory from std::aligned_alloc, handed to a free_list as an arena.
class arena_memory {
 public:
  explicit arena_memory(std::size_t bytes)
      : data_(static_cast<std::byte*>(std::aligned_alloc(4096, bytes))), bytes_(bytes) {
    std::memset(data_.get(), 0xee, bytes);
  }
  std::byte* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return bytes_; }
  std::byte* end() const noexcept { return data_.get() + bytes_; }
  bool holds(const void* p) const noexcept {
    const auto* b = static_cast<const std::byte*>(p);
    return std::less_equal<>()(data(), b) && std::less<>()(b, end());
  }

 private:
  struct release {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte, release> data_;
  std::size_t bytes_;
};

std::uintptr_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

std::string hex(const void* p) {
  char digits[2 * sizeof(std::uintptr_t)];
  const auto end = std::to_chars(digits, digits + sizeof digits, address(p), 16);
  return "0x" + std::string(digits, end.ptr);
}

// Runs `call`, which must throw error(ec) whose message contains `says`.
void expect_error(const std::function<void()>& call, error_class ec, const std::string& says) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one saying \"" << says << "\"";
  } catch (const error& e) {
    EXPECT_EQ(e.error_class(), ec) << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos)
        << "message \"" << e.what() << "\" does not say \"" << says << "\"";
  }
}

// Runs `call`, which must throw error(arg) whose message contains `says`, and checks that
// nothing changed: stats, the consistency walk, and every byte of `arenas`.
void expect_rejected(const free_list& list, const std::vector<const arena_memory*>& arenas,
                     const std::function<void()>& call, const std::string& says) {
  const free_list_stats before = list.stats();
  std::vector<std::vector<std::byte>> bytes;
  for (const arena_memory* a : arenas) bytes.emplace_back(a->data(), a->end());
  expect_error(call, error_class::arg, says);
  EXPECT_EQ(list.stats(), before);
  EXPECT_NO_THROW(list.check_consistency());
  for (std::size_t i = 0; i < arenas.size(); ++i) {
    EXPECT_EQ(std::memcmp(bytes[i].data(), arenas[i]->data(), bytes[i].size()), 0)
        << "arena " << i << " changed";
  }
}

// Everything freed: one free block per arena, all the memory but the fixed overhead free.
void expect_fully_coalesced(const free_list& list, std::size_t total, std::size_t arenas,
                            std::size_t largest_arena) {
  EXPECT_NO_THROW(list.check_consistency());
  const free_list_stats s = list.stats();
  EXPECT_EQ(s.total_bytes, total);
  EXPECT_EQ(s.arena_count, arenas);
  EXPECT_EQ(s.used_bytes, 0U);
  EXPECT_EQ(s.live_blocks, 0U);
  EXPECT_EQ(s.free_blocks, arenas);
  EXPECT_EQ(s.free_bytes, total - arenas * free_list::arena_overhead);
  EXPECT_EQ(s.largest_free, largest_arena - overhead);
}

// A free_list over one arena of 1 MiB.
class FreeList : public ::testing::Test {
 protected:
  FreeList() { list.add_arena(m.data(), m.size()); }

  arena_memory m{1024 * kib};
  free_list list;
};

TEST_F(FreeList, AFreshArenaIsOneFreeBlock) {
  expect_fully_coalesced(list, m.size(), 1, m.size());
  // The whole arena in one block, then nothing more.
  void* all = list.allocate(m.size() - overhead);
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(list.block_size(all), m.size() - overhead);
  EXPECT_EQ(list.allocate(0), nullptr);
  EXPECT_EQ(list.stats().free_blocks, 0U);
  EXPECT_EQ(list.stats().largest_free, 0U);
  list.deallocate(all);
  expect_fully_coalesced(list, m.size(), 1, m.size());
}

TEST_F(FreeList, ZeroBytesGetsAUniqueBlockAndNullIsIgnored) {
  void* a = list.allocate(0);
  void* b = list.allocate(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(list.stats().used_bytes, 2 * free_list::min_block);
  list.deallocate(nullptr);
  list.deallocate(a);
  list.deallocate(b);
  expect_fully_coalesced(list, m.size(), 1, m.size());
}

TEST_F(FreeList, AlignmentsFrom1To4096AreHonouredAndBlocksNeverOverlap) {
  std::vector<std::pair<std::byte*, std::size_t>> blocks;  // start, usable bytes
  for (int round = 0; round < 3; ++round) {
    for (std::size_t align = 1; align <= 4096; align *= 2) {
      for (const std::size_t bytes :
           {std::size_t{0}, std::size_t{1}, std::size_t{24}, std::size_t{100}, std::size_t{5000}}) {
        auto* p = static_cast<std::byte*>(list.allocate(bytes, align));
        ASSERT_NE(p, nullptr) << bytes << " bytes, align " << align;
        EXPECT_EQ(address(p) % align, 0U) << bytes << " bytes, align " << align;
        EXPECT_EQ(address(p) % 16, 0U);
        EXPECT_TRUE(m.holds(p));
        const std::size_t usable = list.block_size(p);
        EXPECT_GE(usable, bytes);
        EXPECT_LE(p + usable, m.end());
        blocks.emplace_back(p, usable);
      }
    }
    // Free every third block so that later rounds fit into holes.
    for (std::size_t i = blocks.size(); i-- > 0;) {
      if (i % 3 == 0) {
        list.deallocate(blocks[i].first);
        blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    EXPECT_NO_THROW(list.check_consistency());
  }
  std::sort(blocks.begin(), blocks.end());
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    // Tags lie between payloads: the next payload starts at least 16 bytes later.
    EXPECT_LE(blocks[i - 1].first + blocks[i - 1].second + free_list::block_overhead,
              blocks[i].first);
  }
  for (const auto& [p, usable] : blocks) list.deallocate(p);
  expect_fully_coalesced(list, m.size(), 1, m.size());
}

TEST_F(FreeList, SplitsOnAllocateAndCoalescesBothNeighboursOnFree) {
  void* b[5];
  for (void*& p : b) {
    p = list.allocate(100);
    ASSERT_NE(p, nullptr);
  }
  // Split: each block 128 bytes (100 + 16 rounded up to 16), the rest one free block.
  for (int i = 1; i < 5; ++i) {
    EXPECT_EQ(static_cast<std::byte*>(b[i]) - static_cast<std::byte*>(b[i - 1]), 128);
  }
  EXPECT_EQ(list.stats().free_blocks, 1U);
  EXPECT_EQ(list.stats().used_bytes, 5 * 128U);
  list.deallocate(b[2]);  // the middle: no free neighbour
  EXPECT_EQ(list.stats().free_blocks, 2U);
  list.deallocate(b[1]);  // merges with the block after it
  EXPECT_EQ(list.stats().free_blocks, 2U);
  list.deallocate(b[3]);  // merges with the block before it
  EXPECT_EQ(list.stats().free_blocks, 2U);
  EXPECT_EQ(list.stats().largest_free, m.size() - overhead - 5 * 128);
  EXPECT_NO_THROW(list.check_consistency());
  void* again = list.allocate(3 * 128 - free_list::block_overhead);  // exactly the hole
  EXPECT_EQ(again, b[1]);
  list.deallocate(again);
  list.deallocate(b[4]);  // merges with both neighbours
  EXPECT_EQ(list.stats().free_blocks, 1U);
  list.deallocate(b[0]);
  expect_fully_coalesced(list, m.size(), 1, m.size());
}

TEST_F(FreeList, FirstFitChoosesTheLowestFittingBlock) {
  // Holes of 512, 256, 1024 and 256 bytes (blocks), separated by live blocks.
  std::vector<void*> holes;
  std::vector<void*> walls;
  for (const std::size_t hole : {512U, 256U, 1024U, 256U}) {
    holes.push_back(list.allocate(hole - free_list::block_overhead));
    walls.push_back(list.allocate(0));
  }
  for (void* h : holes) list.deallocate(h);
  EXPECT_EQ(list.stats().free_blocks, 5U);
  // 200 usable bytes fit the first hole although the second fits better.
  EXPECT_EQ(list.allocate(200), holes[0]);
  // 600 bytes skip the rest of the first hole and the second, and land in the third.
  EXPECT_EQ(list.allocate(600), holes[2]);
  // 230 bytes: the first hole's remainder (512 - 224 = 288) comes first.
  auto* rest = static_cast<std::byte*>(holes[0]) + 224;
  EXPECT_EQ(list.allocate(230), rest);
  // 240 bytes fit nothing before the second hole.
  EXPECT_EQ(list.allocate(240), holes[1]);
  EXPECT_NO_THROW(list.check_consistency());
}

TEST_F(FreeList, DoubleFreeIsRejectedAndChangesNothing) {
  void* a = list.allocate(64);
  void* b = list.allocate(64);
  void* c = list.allocate(64);
  void* d = list.allocate(64);
  list.deallocate(b);
  const std::vector<const arena_memory*> arenas{&m};
  // Freed, not merged.
  expect_rejected(
      list, arenas, [&] { list.deallocate(b); }, "deallocate: " + hex(b) + " was freed already");
  // Freed, then merged into its neighbours on both sides.
  list.deallocate(c);
  list.deallocate(a);
  EXPECT_EQ(list.stats().free_blocks, 2U);  // a to c, and the rest after d
  for (void* p : {a, b, c}) {
    expect_rejected(
        list, arenas, [&] { list.deallocate(p); }, "deallocate: " + hex(p) + " was freed already");
    expect_rejected(
        list, arenas, [&] { (void)list.block_size(p); },
        "block_size: " + hex(p) + " was freed already");
  }
  list.deallocate(d);
  expect_rejected(
      list, arenas, [&] { list.deallocate(d); }, "was freed already");
  expect_fully_coalesced(list, m.size(), 1, m.size());
}

TEST_F(FreeList, PointersThatAreNoBlockAreRejectedAndChangeNothing) {
  arena_memory other(4 * kib);
  auto* a = static_cast<std::byte*>(list.allocate(256));
  void* b = list.allocate(256);
  std::memset(a, 0, 256);
  const std::vector<const arena_memory*> arenas{&m};
  const std::string not_a_block = " is not a block of this heap";
  for (void* p :
       {static_cast<void*>(a + 1), static_cast<void*>(a + 16), static_cast<void*>(a + 128),
        static_cast<void*>(a - 8), static_cast<void*>(m.data()), static_cast<void*>(m.data() + 8),
        static_cast<void*>(m.end() - 16), static_cast<void*>(m.end() - 1)}) {
    expect_rejected(
        list, arenas, [&] { list.deallocate(p); }, "deallocate: " + hex(p) + not_a_block);
    expect_rejected(
        list, arenas, [&] { (void)list.block_size(p); }, "block_size: " + hex(p) + not_a_block);
  }
  // Outside every arena: just past it, and in other memory.
  for (void* p : {static_cast<void*>(m.end()), static_cast<void*>(other.data() + 16)}) {
    expect_rejected(
        list, arenas, [&] { list.deallocate(p); },
        "deallocate: " + hex(p) + not_a_block + " (it lies in no arena)");
  }
  expect_rejected(
      list, arenas, [&] { (void)list.block_size(nullptr); }, "null");
  // A header word copied to another place is not a header there (the cookie is the
  // address's): a block's first 8 bytes forged to look like a's header.
  std::memcpy(a + 64 - 8, a - 8, 8);
  expect_rejected(
      list, arenas, [&] { list.deallocate(a + 64); }, not_a_block);
  std::memset(a, 0, 256);
  list.deallocate(a);
  list.deallocate(b);
  expect_fully_coalesced(list, m.size(), 1, m.size());
}

TEST_F(FreeList, DamagedTagsAreReportedNotFollowed) {
  auto* a = static_cast<std::byte*>(list.allocate(100));
  void* b = list.allocate(100);
  // Writing past the end of a's usable bytes hits its footer.
  std::byte* const footer = a + list.block_size(a);
  std::byte saved[8];
  std::memcpy(saved, footer, 8);
  std::memset(footer, 0x5a, 8);
  expect_error([&] { list.check_consistency(); }, error_class::intern, "header and footer differ");
  const free_list_stats before = list.stats();
  expect_error([&] { list.deallocate(a); }, error_class::arg, "damaged or forged");
  EXPECT_EQ(list.stats(), before);
  std::memcpy(footer, saved, 8);
  EXPECT_NO_THROW(list.check_consistency());
  list.deallocate(a);
  list.deallocate(b);
  expect_fully_coalesced(list, m.size(), 1, m.size());
}

TEST_F(FreeList, BadAlignmentsAndArenasAreRejectedAndChangeNothing) {
  arena_memory spare(16 * kib);
  void* a = list.allocate(10);
  const std::vector<const arena_memory*> arenas{&m, &spare};
  for (const std::size_t align :
       {std::size_t{0}, std::size_t{3}, std::size_t{24}, std::size_t{8192}, std::size_t{1} << 40}) {
    expect_rejected(
        list, arenas, [&] { (void)list.allocate(8, align); },
        "allocate (8 bytes): alignment " + std::to_string(align));
  }
  expect_rejected(
      list, arenas, [&] { list.add_arena(nullptr, 4096); },
      "add_arena (4096 bytes): the base is null");
  expect_rejected(
      list, arenas, [&] { list.add_arena(spare.data() + 16, 4096); }, "is not 4096-aligned");
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{100}, std::size_t{4097}}) {
    expect_rejected(
        list, arenas, [&] { list.add_arena(spare.data(), bytes); },
        std::to_string(bytes) + " bytes");
  }
  expect_rejected(
      list, arenas, [&] { list.add_arena(spare.data(), std::size_t{1} << 41); }, "at most 2^40");
  expect_rejected(
      list, arenas, [&] { list.add_arena(m.data(), 4096); }, "overlaps");
  expect_rejected(
      list, arenas, [&] { list.add_arena(m.data() + 8 * kib, 16 * kib); }, "overlaps");
  list.deallocate(a);
  expect_fully_coalesced(list, m.size(), 1, m.size());
}

TEST(FreeListArenas, ReturnsNullWhenNothingFitsThenSucceedsAfterAddArena) {
  arena_memory first(8 * kib);
  arena_memory second(8 * kib);
  free_list list;
  EXPECT_EQ(list.allocate(1), nullptr);  // no arena at all
  list.add_arena(first.data(), first.size());
  std::vector<void*> live;
  while (void* p = list.allocate(1000)) live.push_back(p);
  EXPECT_EQ(live.size(), 7U);  // 1024-byte blocks in 8192 - 16 bytes
  EXPECT_EQ(list.allocate(5000), nullptr);
  EXPECT_EQ(list.allocate(8 * kib - overhead + 1), nullptr);  // larger than any arena
  list.add_arena(second.data(), second.size());
  void* big = list.allocate(5000);
  ASSERT_NE(big, nullptr);
  EXPECT_TRUE(second.holds(big));
  // The first arena's remainder still comes first for what fits it.
  void* small = list.allocate(0);
  EXPECT_TRUE(first.holds(small));
  EXPECT_EQ(list.allocate(std::size_t{1} << 62), nullptr);
  EXPECT_EQ(list.allocate(~std::size_t{0}), nullptr);
  list.deallocate(big);
  list.deallocate(small);
  for (void* p : live) list.deallocate(p);
  expect_fully_coalesced(list, 16 * kib, 2, 8 * kib);
}

TEST(FreeListArenas, ArenasAddedOutOfAddressOrderAreServedInOrderOfAddition) {
  // One allocation carved into three arenas, added middle, high, low: adjacent arenas stay
  // apart (each keeps its own fences) and first fit goes by order of addition.
  arena_memory m(3 * 16 * kib);
  std::byte* const low = m.data();
  std::byte* const middle = low + 16 * kib;
  std::byte* const high = middle + 16 * kib;
  free_list list;
  list.add_arena(middle, 16 * kib);
  list.add_arena(high, 16 * kib);
  list.add_arena(low, 16 * kib);
  EXPECT_EQ(list.stats().free_blocks, 3U);
  EXPECT_EQ(list.stats().largest_free, 16 * kib - overhead);
  EXPECT_EQ(list.allocate(16 * kib), nullptr);  // no block spans two arenas
  void* a = list.allocate(10 * kib);
  void* b = list.allocate(10 * kib);
  void* c = list.allocate(10 * kib);
  void* d = list.allocate(1 * kib);
  EXPECT_EQ(a, middle + 16);
  EXPECT_EQ(b, high + 16);
  EXPECT_EQ(c, low + 16);
  EXPECT_EQ(d, middle + 16 + 10 * kib + 16);  // the first arena's remainder is first
  EXPECT_NO_THROW(list.check_consistency());
  // Each pointer is found in its arena, whatever the order of the bases.
  EXPECT_EQ(list.block_size(c), 10 * kib);
  list.deallocate(b);
  list.deallocate(a);
  EXPECT_NO_THROW(list.check_consistency());
  list.deallocate(c);
  list.deallocate(d);
  expect_fully_coalesced(list, 48 * kib, 3, 16 * kib);
}

// Where a block lies: its arena's index among `bases` and its offset there.
std::optional<std::pair<std::size_t, std::size_t>> locate(const std::vector<std::byte*>& bases,
                                                          std::size_t arena_bytes, void* p) {
  if (p == nullptr) return std::nullopt;
  for (std::size_t i = 0; i < bases.size(); ++i) {
    const auto* b = static_cast<std::byte*>(p);
    if (b >= bases[i] && b < bases[i] + arena_bytes) {
      return std::pair(i, static_cast<std::size_t>(b - bases[i]));
    }
  }
  ADD_FAILURE() << hex(p) << " lies in no arena";
  return std::nullopt;
}

TEST(FreeListArenas, IdenticalCallsGiveIdenticalOffsetsOnArenasAtOtherAddresses) {
  // Two lists of three arenas each; the second list's arenas are added in reverse address
  // order, so address order and order of addition disagree there.
  constexpr std::size_t arena_bytes = 64 * kib;
  arena_memory one(3 * arena_bytes);
  arena_memory two(3 * arena_bytes + 4096);
  const std::vector<std::byte*> bases_one{one.data(), one.data() + arena_bytes,
                                          one.data() + 2 * arena_bytes};
  const std::vector<std::byte*> bases_two{two.data() + 2 * arena_bytes + 4096,
                                          two.data() + arena_bytes, two.data()};
  free_list first;
  free_list second;
  for (std::size_t i = 0; i < 3; ++i) {
    first.add_arena(bases_one[i], arena_bytes);
    second.add_arena(bases_two[i], arena_bytes);
  }
  std::mt19937_64 rng(7);
  std::vector<std::pair<void*, void*>> live;
  for (int op = 0; op < 20000; ++op) {
    if (live.empty() || rng() % 5 < 3) {
      const std::size_t bytes = rng() % 2048;
      const std::size_t align = std::size_t{1} << (rng() % 13);
      void* p = first.allocate(bytes, align);
      void* q = second.allocate(bytes, align);
      ASSERT_EQ(locate(bases_one, arena_bytes, p), locate(bases_two, arena_bytes, q))
          << "operation " << op;
      if (p != nullptr) live.emplace_back(p, q);
    } else {
      const std::size_t i = rng() % live.size();
      first.deallocate(live[i].first);
      second.deallocate(live[i].second);
      live[i] = live.back();
      live.pop_back();
    }
  }
  EXPECT_EQ(first.stats(), second.stats());
  EXPECT_NO_THROW(first.check_consistency());
  EXPECT_NO_THROW(second.check_consistency());
}

// A live block of the model: its requested size and the byte it is filled with.
struct model_block {
  std::size_t bytes;
  std::uint8_t fill;
};

void fill(void* p, const model_block& m) {
  std::memset(p, m.fill, m.bytes);
}

bool is_intact(const void* p, const model_block& m) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  return std::all_of(b, b + m.bytes, [&](std::uint8_t x) { return x == m.fill; });
}

TEST(FreeListArenas, RandomOperationsAgreeWithAModel) {
  // Three arenas of different sizes, added out of address order; 200k random operations,
  // mostly small blocks, some large and some over-aligned.
  arena_memory m(4 * 1024 * kib);
  struct part {
    std::byte* base;
    std::size_t bytes;
  };
  const part parts[] = {{m.data() + 2 * 1024 * kib, 2 * 1024 * kib},
                        {m.data(), 256 * kib},
                        {m.data() + 1024 * kib, 1024 * kib}};
  free_list list;
  for (const part& p : parts) list.add_arena(p.base, p.bytes);
  std::map<std::uintptr_t, model_block> live;  // by address
  std::vector<void*> order;                    // live blocks, for picking one at random
  std::mt19937_64 rng(2024);
  std::size_t failed = 0;
  const auto release = [&](std::size_t i) {
    void* p = order[i];
    const auto it = live.find(address(p));
    ASSERT_NE(it, live.end());
    EXPECT_TRUE(is_intact(p, it->second)) << "block " << hex(p) << " was overwritten";
    list.deallocate(p);
    live.erase(it);
    order[i] = order.back();
    order.pop_back();
  };
  for (int op = 0; op < 200000; ++op) {
    const bool grow = order.size() < 64 || rng() % 100 < 52;
    if (grow) {
      const std::uint64_t r = rng() % 100;
      const std::size_t bytes = r < 80 ? rng() % 257 : r < 97 ? rng() % 4096 : rng() % 65536;
      const std::size_t align = rng() % 8 == 0 ? std::size_t{1} << (rng() % 13) : 16;
      void* p = list.allocate(bytes, align);
      if (p == nullptr) {
        ++failed;
        for (int k = 0; k < 16 && !order.empty(); ++k) release(rng() % order.size());
        continue;
      }
      ASSERT_EQ(address(p) % align, 0U);
      ASSERT_GE(list.block_size(p), bytes);
      // No overlap with the live neighbours, payloads and tags included.
      const auto next = live.lower_bound(address(p));
      if (next != live.end()) {
        ASSERT_GE(next->first, address(p) + list.block_size(p) + free_list::block_overhead);
      }
      if (next != live.begin()) {
        const auto prev = std::prev(next);
        ASSERT_LE(prev->first + list.block_size(reinterpret_cast<void*>(prev->first)) +
                      free_list::block_overhead,
                  address(p));
      }
      const model_block b{bytes, static_cast<std::uint8_t>(rng())};
      fill(p, b);
      live.emplace(address(p), b);
      order.push_back(p);
    } else {
      release(rng() % order.size());
    }
    if (op % 20000 == 0) {
      ASSERT_NO_THROW(list.check_consistency()) << "after operation " << op;
      ASSERT_EQ(list.stats().live_blocks, live.size());
    }
  }
  EXPECT_GT(failed, 0U) << "the heap never filled up: the stress misses the full case";
  while (!order.empty()) release(order.size() - 1);
  expect_fully_coalesced(list, 3328 * kib, 3, 2048 * kib);
}

TEST(FreeListArenas, ThreadsAllocatingAndFreeingConcurrentlyLeaveItConsistent) {
  arena_memory m(4 * 1024 * kib);
  free_list list;
  list.add_arena(m.data() + 1024 * kib, 3 * 1024 * kib);
  list.add_arena(m.data(), 1024 * kib);
  constexpr int threads = 4;
  constexpr int ops = 20000;
  std::vector<std::thread> pool;
  std::vector<int> damaged(threads, 0);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&list, &damaged, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 1);
      std::vector<std::pair<void*, model_block>> mine;
      const auto release = [&](std::size_t i) {
        if (!is_intact(mine[i].first, mine[i].second)) ++damaged[static_cast<std::size_t>(t)];
        list.deallocate(mine[i].first);
        mine[i] = mine.back();
        mine.pop_back();
      };
      for (int op = 0; op < ops; ++op) {
        if (mine.empty() || rng() % 2 == 0) {
          const model_block b{rng() % 512, static_cast<std::uint8_t>(t * 64 + op % 64)};
          const std::size_t align = std::size_t{1} << (rng() % 8);
          if (void* p = list.allocate(b.bytes, align)) {
            fill(p, b);
            mine.emplace_back(p, b);
          }
        } else {
          release(rng() % mine.size());
        }
      }
      while (!mine.empty()) release(mine.size() - 1);
    });
  }
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(damaged, std::vector<int>(threads, 0));
  expect_fully_coalesced(list, m.size(), 2, 3 * 1024 * kib);
}

// ---- reservation ---------------------------------------------------------------------

// A free list over one arena of 8 MiB whose first page and last page only are reserved. The
// rest is inaccessible (PROT_NONE) until the reserve function makes it accessible: a touch of
// unreserved memory by the list is a crash, as a store to an unbacked page of a full /dev/shm
// is a SIGBUS. The reserve function records its calls and refuses what lies beyond `limit`
// (error no_mem, nothing made accessible).
class guarded_list {
 public:
  static constexpr std::size_t bytes = 8 * 1024 * kib;

  explicit guarded_list(std::size_t limit) : mem_(bytes), limit_(limit) {
    protect(4096, bytes - 2 * 4096, PROT_NONE);
    list.set_reserve(reserve());
    list.add_arena(mem_.data(), bytes, 4096);
  }
  ~guarded_list() { protect(0, bytes, PROT_READ | PROT_WRITE); }
  guarded_list(const guarded_list&) = delete;
  guarded_list& operator=(const guarded_list&) = delete;

  free_list list;
  std::vector<std::pair<std::size_t, std::size_t>> calls;  // (offset, bytes) reserved

 private:
  free_list::reserve_fn reserve() {
    return [this](void* base, std::size_t offset, std::size_t len, std::string_view call) {
      EXPECT_EQ(base, static_cast<void*>(mem_.data()));
      EXPECT_EQ(offset % 4096, 0U);
      EXPECT_EQ(len % 4096, 0U);
      if (offset + len > limit_) {
        oneside::detail::raise(error_class::no_mem, {.call = call},
                               "no room past " + std::to_string(limit_));
      }
      protect(offset, len, PROT_READ | PROT_WRITE);
      calls.emplace_back(offset, len);
    };
  }
  void protect(std::size_t offset, std::size_t len, int prot) {
    if (len > 0) {
      ASSERT_EQ(::mprotect(mem_.data() + offset, len, prot), 0);
    }
  }
  arena_memory mem_;
  std::size_t limit_;
};

TEST(FreeListReservation, BlocksAreReservedBeforeUseAheadOfFirstFitsClimb) {
  constexpr std::size_t mib = 1024 * kib;
  guarded_list g(guarded_list::bytes);
  free_list& list = g.list;
  EXPECT_TRUE(g.calls.empty()) << "adding the arena touched only its first and last page";
  std::vector<void*> blocks;
  for (int i = 0; i < 20000; ++i) {
    auto* p = static_cast<std::byte*>(list.allocate(100));
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, 100);  // every byte handed out is usable
    blocks.push_back(p);
  }
  // About 2.6 MiB climbed: a reservation per reserve_ahead bytes, each where the last ended.
  ASSERT_GE(g.calls.size(), 2U);
  EXPECT_LE(g.calls.size(), 4U);
  std::size_t reserved = 4096;
  for (const auto& [offset, bytes] : g.calls) {
    EXPECT_EQ(offset, reserved);
    EXPECT_LE(bytes, free_list::reserve_ahead);
    reserved += bytes;
  }
  EXPECT_NO_THROW(list.check_consistency());
  // Freed and allocated again below what is reserved: nothing more to reserve.
  for (void* p : blocks) list.deallocate(p);
  const std::size_t calls = g.calls.size();
  void* again = list.allocate(mib);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(g.calls.size(), calls);
  list.deallocate(again);
  expect_fully_coalesced(list, guarded_list::bytes, 1, guarded_list::bytes);
}

TEST(FreeListReservation, ABlockThatCannotBeReservedFailsAndChangesNothing) {
  constexpr std::size_t mib = 1024 * kib;
  guarded_list g(2 * mib);  // room for 2 MiB of the 8
  free_list& list = g.list;
  const free_list_stats empty = list.stats();
  expect_error([&] { (void)list.allocate(3 * mib); }, error_class::no_mem, "allocate: no room");
  EXPECT_EQ(list.stats(), empty);
  EXPECT_NO_THROW(list.check_consistency());
  // What fits is served, reserving only what it needs once reserving ahead has no room.
  void* a = list.allocate(mib + mib / 2, 16, "named_call");
  ASSERT_NE(a, nullptr);
  std::memset(a, 1, mib + mib / 2);
  void* b = list.allocate(100);
  ASSERT_NE(b, nullptr);
  std::memset(b, 1, 100);
  const free_list_stats s = list.stats();
  expect_error([&] { (void)list.allocate(mib, 16, "named_call"); }, error_class::no_mem,
               "named_call: no room");
  EXPECT_EQ(list.stats(), s);
  EXPECT_NO_THROW(list.check_consistency());
  // try_allocate never reserves: null where allocate would reserve first.
  EXPECT_EQ(list.try_allocate(mib / 2), nullptr);
  EXPECT_EQ(list.stats(), s);
  list.deallocate(a);
  list.deallocate(b);
  expect_fully_coalesced(list, guarded_list::bytes, 1, guarded_list::bytes);
}

TEST(FreeListReservation, ArenasWithoutTheirFirstPageOrAReserveFunctionAreRejected) {
  arena_memory a(16 * kib);
  free_list list;
  expect_error([&] { list.add_arena(a.data(), a.size(), 8192); }, error_class::arg,
               "unless the list has a reserve function");
  list.set_reserve([](void*, std::size_t, std::size_t, std::string_view) {});
  expect_error([&] { list.add_arena(a.data(), a.size(), 100); }, error_class::arg,
               "first page must be reserved");
  EXPECT_EQ(list.stats(), free_list_stats{});
}

}  // namespace
}  // namespace oneside::pgas::detail
