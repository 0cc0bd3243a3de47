// The table behind the transport's reach table and the rma layer's region views
// (runtime/interface/runtime/seqlock_table.hpp): readers see what the writer assigned, a read
// that overlaps a write is told so and never passes off a mixture as a version, and the storage
// stays bounded however many times the contents are replaced (issue 18: every replaced copy used
// to be kept until close).
#include "runtime/seqlock_table.hpp"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

using oneside::detail::seqlock_table;

struct item {
  std::uint64_t a;
  std::uint64_t b;
  std::uint64_t c;
};
using table = seqlock_table<item>;

// `n` entries of version `v`: every word of every entry says v and its index.
std::vector<item> version(std::uint64_t v, std::size_t n) {
  std::vector<item> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(item{v, v * 1000 + i, ~v});
  return out;
}

TEST(SeqlockTable, AnEmptyTableReadsAsEmptyWithTagZero) {
  const table t;
  const table::reader r(t);
  EXPECT_EQ(r.size(), 0U);
  EXPECT_EQ(r.tag(), 0U);
  EXPECT_TRUE(r.valid());
}

TEST(SeqlockTable, ReadersSeeWhatWasAssigned) {
  table t;
  t.assign(version(7, 3), 70);
  {
    const table::reader r(t);
    ASSERT_EQ(r.size(), 3U);
    EXPECT_EQ(r.tag(), 70U);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(r[i].a, 7U);
      EXPECT_EQ(r[i].b, 7000 + i);
      EXPECT_EQ(r[i].c, ~std::uint64_t{7});
    }
    EXPECT_TRUE(r.valid());
  }
  // Smaller, then larger than the storage so far, then empty: each read sees exactly that.
  for (const std::size_t n : {1U, 40U, 0U}) {
    t.assign(version(n + 100, n), n + 1);
    const table::reader r(t);
    ASSERT_EQ(r.size(), n);
    EXPECT_EQ(r.tag(), n + 1);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(r[i].b, (n + 100) * 1000 + i);
    EXPECT_TRUE(r.valid());
  }
}

TEST(SeqlockTable, AReadThatAWriteOverlapsIsNotValid) {
  table t;
  t.assign(version(1, 2), 1);
  const table::reader r(t);
  EXPECT_TRUE(r.valid());
  t.assign(version(2, 2), 2);
  EXPECT_FALSE(r.valid());  // whatever r copied may mix the two versions
  EXPECT_TRUE(table::reader(t).valid());
}

TEST(SeqlockTable, StorageStaysBoundedOverManyReplacements) {
  table t;
  std::size_t largest = 0;
  for (std::uint64_t v = 1; v <= 100000; ++v) {
    const std::size_t n = (v * 7919) % 300;  // sizes up and down
    largest = std::max(largest, n);
    t.assign(version(v, n), v);
  }
  // Each block is at least twice the one before and the old ones are kept: less than twice the
  // last block, which is less than twice the largest table (plus the blocks' header words).
  EXPECT_LT(t.footprint(), 4 * largest * sizeof(item) + 64 * sizeof(std::uint64_t));
}

// Readers on other threads while a writer replaces the contents over and over: every read that
// says it is valid saw one whole version (size, tag and every word agree).
TEST(SeqlockTable, ConcurrentReadersNeverAcceptAMixture) {
  table t;
  t.assign(version(1, 2), 1);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> rejected{0};
  std::atomic<std::uint64_t> wrong{0};
  std::vector<std::thread> readers;
  for (int k = 0; k < 3; ++k) {
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        const table::reader r(t);
        const std::uint64_t v = r.tag();
        const std::size_t n = r.size();
        bool same = n == v % 50 + 1;
        for (std::size_t i = 0; i < n; ++i) {
          const item e = r[i];
          same = same && e.a == v && e.b == v * 1000 + i && e.c == ~v;
        }
        if (!r.valid()) {
          rejected.fetch_add(1, std::memory_order_relaxed);
        } else {
          accepted.fetch_add(1, std::memory_order_relaxed);
          if (!same) wrong.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (std::uint64_t v = 2; v < 200000; ++v) t.assign(version(v, v % 50 + 1), v);
  stop.store(true);
  for (std::thread& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0U) << accepted.load() << " reads accepted, " << rejected.load()
                              << " rejected";
  EXPECT_GT(accepted.load(), 0U);
}

}  // namespace
