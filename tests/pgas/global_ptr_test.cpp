// global_ptr<T>: null, arithmetic in units of T, comparison and hashing on (rank, address),
// conversions and casts, and is_local()/local() matching what the transport maps (this rank
// and its node peers; nobody else with ONESIDE_SHM_LOAD_STORE=0 or over MPI).
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"
#include "runtime/transport.hpp"

namespace oneside::test {
namespace {

class GlobalPtr : public RankTest {};

// Writes through global_ptr<const T> do not compile: no conversion drops const.
static_assert(std::is_convertible_v<global_ptr<int>, global_ptr<const int>>);
static_assert(!std::is_convertible_v<global_ptr<const int>, global_ptr<int>>);
static_assert(std::is_convertible_v<global_ptr<int>, global_ptr<void>>);
static_assert(!std::is_convertible_v<global_ptr<int>, global_ptr<long>>);
static_assert(std::is_same_v<decltype(global_ptr<const int>().local()), const int*>);
static_assert(std::is_trivially_copyable_v<global_ptr<double>>);

TEST_F(GlobalPtr, NullIsTheDefaultAndIsLocal) {
  const global_ptr<int> p;
  EXPECT_TRUE(p.is_null());
  EXPECT_FALSE(p);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(p, global_ptr<int>(3, 0)) << "every null pointer is the same";
  EXPECT_TRUE(p.is_local());
  EXPECT_EQ(p.local(), nullptr);
  EXPECT_EQ(std::hash<global_ptr<int>>{}(p), std::hash<global_ptr<int>>{}(global_ptr<int>()));
  std::ostringstream os;
  os << p;
  EXPECT_EQ(os.str(), "global_ptr(null)");
}

TEST_F(GlobalPtr, ArithmeticIsInUnitsOfT) {
  global_ptr<double> p = allocate<double>(10);
  ASSERT_TRUE(p);
  EXPECT_EQ(p.where(), rank());
  EXPECT_EQ((p + 3).address(), p.address() + 3 * sizeof(double));
  EXPECT_EQ((3 + p), p + 3);
  EXPECT_EQ((p + 7) - p, 7);
  EXPECT_EQ(p - (p + 2), -2);
  global_ptr<double> q = p;
  EXPECT_EQ(++q, p + 1);
  EXPECT_EQ(q++, p + 1);
  EXPECT_EQ(q, p + 2);
  EXPECT_EQ(--q, p + 1);
  q -= 1;
  EXPECT_EQ(q, p);
  EXPECT_EQ((p + 9).local(), p.local() + 9);
  deallocate(p);
}

TEST_F(GlobalPtr, OrderIsByRankThenAddress) {
  const global_ptr<int> a(1, 0x2000), b(1, 0x3000), c(2, 0x1000);
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_NE(a, global_ptr<int>(2, 0x2000));
  EXPECT_EQ(a, global_ptr<int>(1, 0x2000));
  EXPECT_EQ(b - a, static_cast<std::ptrdiff_t>(0x1000 / sizeof(int)));
  expect_error(error_class::arg, "operator-", [&] { (void)(c - a); });
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(), "global_ptr(rank 1, 0x2000)");
}

TEST_F(GlobalPtr, HashingSeparatesRanksAndAddresses) {
  std::unordered_set<global_ptr<int>> set;
  for (rank_t r = 0; r < 8; ++r) {
    for (std::uintptr_t a = 0x1000; a < 0x1000 + 64 * sizeof(int); a += sizeof(int)) {
      set.insert(global_ptr<int>(r, a));
    }
  }
  EXPECT_EQ(set.size(), 8U * 64U);
  EXPECT_EQ(set.count(global_ptr<int>(3, 0x1000 + 5 * sizeof(int))), 1U);
}

TEST_F(GlobalPtr, ConversionsAndCastsKeepRankAndAddress) {
  global_ptr<int> p = allocate<int>(4);
  const global_ptr<const int> cp = p;
  EXPECT_EQ(cp.where(), p.where());
  EXPECT_EQ(cp.address(), p.address());
  const global_ptr<void> v = p;
  EXPECT_EQ(static_pointer_cast<int>(v), p);
  EXPECT_EQ(const_pointer_cast<int>(cp), p);
  const global_ptr<char> bytes = reinterpret_pointer_cast<char>(p);
  EXPECT_EQ((bytes + 4).address(), (p + 1).address());
  EXPECT_EQ(global_ptr<int>::from_local(p.local()), p);
  EXPECT_EQ(global_ptr<int>::from_local(nullptr), nullptr);
  deallocate(p);
}

TEST_F(GlobalPtr, IsLocalAndLocalFollowWhatTheTransportMaps) {
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(static_cast<std::size_t>(size()));
  std::fill_n(mine.local(), size(), std::int64_t{-1});
  const std::vector<std::uint64_t> addresses = allgather(world(), std::uint64_t{mine.address()});
  barrier(world());
  const auto node = transport::current().node_ranks();
  for (rank_t q = 0; q < size(); ++q) {
    const global_ptr<std::int64_t> there(q, addresses[static_cast<std::size_t>(q)]);
    const bool on_node = std::binary_search(node.begin(), node.end(), q);
    EXPECT_EQ(there.is_local(), on_node) << "rank " << q;
    if (on_node) {
      // Each rank stores its number into its slot of every node peer's block.
      std::int64_t* slots = there.local();
      ASSERT_NE(slots, nullptr);
      slots[rank()] = rank();
    } else {
      expect_error(error_class::arg, "local", [&] { (void)there.local(); });
    }
  }
  barrier(world());
  for (rank_t q = 0; q < size(); ++q) {
    const bool on_node = std::binary_search(node.begin(), node.end(), q);
    EXPECT_EQ(mine.local()[q], on_node ? q : -1) << "slot of rank " << q;
  }
  barrier(world());
  deallocate(mine);
}

}  // namespace
}  // namespace oneside::test
