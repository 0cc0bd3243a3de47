// global_ref<T> (global_ref.hpp), what *p and p[i] give: reads and writes of another rank's
// elements and of structs, a write visible at the owner when it returns, assignment between
// references copying the value, the atomic members and atomic compound assignments (exact
// totals under contention), read-only references from const pointers (writes do not
// compile), and null references raising.
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/pgas/global_ref.hpp>

#include "expect_error.hpp"
#include "pgas_test.hpp"

namespace oneside::test {
namespace {

// ---- what compiles and what does not -----------------------------------------------------

template <class R>
concept assignable_from_one = requires(R r) {
  r = 1;
};
template <class R>
concept has_put = requires(R r) {
  r.put(1);
};
template <class R>
concept has_plus_assign = requires(R r) {
  r += 1;
};
template <class R>
concept has_increment = requires(R r) {
  ++r;
};
template <class R>
concept has_fetch_and = requires(R r) {
  r.fetch_and(1);
};
template <class R>
concept has_load = requires(R r) {
  r.load();
};
template <class P>
concept dereferenceable = requires(P p) {
  *p;
};

static_assert(std::is_same_v<decltype(*std::declval<global_ptr<int>>()), global_ref<int>>);
static_assert(std::is_same_v<decltype(std::declval<global_ptr<const int>>()[std::size_t{3}]),
                             global_ref<const int>>);
static_assert(assignable_from_one<global_ref<int>> && has_put<global_ref<int>>);
static_assert(!assignable_from_one<global_ref<const int>> && !has_put<global_ref<const int>>,
              "a reference through a const pointer is read-only");
static_assert(!std::is_copy_assignable_v<global_ref<const int>>);
static_assert(!has_plus_assign<global_ref<const std::int64_t>>);
static_assert(has_load<global_ref<const std::int64_t>>, "atomic reads through const pointers");
static_assert(has_plus_assign<global_ref<double>> && !has_increment<global_ref<double>> &&
              !has_fetch_and<global_ref<double>>);
static_assert(has_increment<global_ref<std::uint32_t>> && has_fetch_and<global_ref<long long>>);
static_assert(assignable_from_one<global_ref<std::int16_t>> &&
                  !has_plus_assign<global_ref<std::int16_t>>,
              "compound assignments only where they are atomic");
static_assert(!dereferenceable<global_ptr<void>> && !dereferenceable<global_ptr<const void>>);
static_assert(std::is_convertible_v<global_ref<const double>, double>);

// ---- helpers -----------------------------------------------------------------------------

class GlobalRef : public PgasTest {};

struct point {
  std::int32_t id;
  double x;
  std::array<char, 3> tag;
};

// ---- reading and writing -----------------------------------------------------------------

TEST_F(GlobalRef, ReadsAndWritesReachTheOwnersElements) {
  constexpr std::size_t n = 8;
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(n);
  global_ptr<point> my_point = allocate<point>(1);
  for (std::size_t i = 0; i < n; ++i) mine.local()[i] = -1;
  *my_point.local() = point{-1, -1.0, {'-', '-', '-'}};
  const auto all = everyones(mine);
  const auto points = everyones(my_point);
  barrier(world());

  const global_ptr<std::int64_t> q = all[static_cast<std::size_t>(right())];
  for (std::size_t i = 0; i < n; ++i) q[i] = rank() * 100 + static_cast<std::int64_t>(i);
  (*(q + 7)).put(rank() * 100 + 77);
  *points[static_cast<std::size_t>(right())] = point{rank(), rank() * 0.5, {'a', 'b', 'c'}};
  // Reading back through the references, plain and const.
  const global_ptr<const std::int64_t> cq = q;
  EXPECT_EQ(q[3].get(), rank() * 100 + 3);
  const std::int64_t via_conversion = cq[5];
  EXPECT_EQ(via_conversion, rank() * 100 + 5);
  EXPECT_EQ(static_cast<std::int64_t>(*(cq + 7)), rank() * 100 + 77);
  const point p = *points[static_cast<std::size_t>(right())];
  EXPECT_EQ(p.id, rank());
  EXPECT_EQ(p.x, rank() * 0.5);
  EXPECT_EQ(p.tag[2], 'c');
  EXPECT_EQ(q[2].ptr(), q + 2);
  barrier(world());

  // The owner sees what its left neighbour wrote.
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(mine.local()[i], left() * 100 + static_cast<std::int64_t>(i)) << i;
  }
  EXPECT_EQ(mine.local()[7], left() * 100 + 77);
  EXPECT_EQ(my_point.local()->id, left());
  EXPECT_EQ(my_point.local()->x, left() * 0.5);
  barrier(world());
  deallocate(mine);
  deallocate(my_point);
}

TEST_F(GlobalRef, AssigningAReferenceCopiesTheValueNotTheReference) {
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(2);
  mine.local()[0] = 10 + rank();
  mine.local()[1] = 20 + rank();
  const auto all = everyones(mine);
  barrier(world());
  const global_ptr<std::int64_t> q = all[static_cast<std::size_t>(right())];
  global_ref<std::int64_t> first = q[0];
  const global_ref<std::int64_t> second = q[1];
  first = second;  // copies q[1] into q[0]
  EXPECT_EQ(first.ptr(), q) << "still a reference to q[0]";
  EXPECT_EQ(q[0].get(), 20 + right());
  global_ref<std::int64_t> alias = first;  // another reference to q[0]
  alias = 5;
  EXPECT_EQ(first.get(), 5);
  barrier(world());
  EXPECT_EQ(mine.local()[0], 5);
  EXPECT_EQ(mine.local()[1], 20 + rank());
  barrier(world());
  deallocate(mine);
}

TEST_F(GlobalRef, AWriteIsVisibleAtTheOwnerWhenItReturns) {
  // Each round: write the right neighbour's data through a reference, then raise its flag (an
  // atomic). It checks the data as soon as it sees the flag, then acknowledges.
  constexpr std::uint64_t rounds = 100;
  global_ptr<std::uint64_t> mine = allocate<std::uint64_t>(3);  // data, flag, ack
  for (int i = 0; i < 3; ++i) mine.local()[i] = 0;
  const auto all = everyones(mine);
  barrier(world());
  const global_ptr<std::uint64_t> to_right = all[static_cast<std::size_t>(right())];
  const global_ptr<std::uint64_t> to_left = all[static_cast<std::size_t>(left())];
  int stale = 0;
  for (std::uint64_t round = 1; round <= rounds; ++round) {
    to_right[0] = round * 1000 + static_cast<std::uint64_t>(rank());
    store(to_right + 1, round).wait();
    wait_until(mine.local() + 1, cmp::ge, round);
    if (mine.local()[0] != round * 1000 + static_cast<std::uint64_t>(left())) ++stale;
    store(to_left + 2, round).wait();  // my left neighbour may write my data again
    wait_until(mine.local() + 2, cmp::ge, round);
  }
  EXPECT_EQ(stale, 0);
  barrier(world());
  deallocate(mine);
}

// ---- atomics -----------------------------------------------------------------------------

TEST_F(GlobalRef, AtomicMembersAndCompoundAssignmentsGiveExactResults) {
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(1);
  global_ptr<double> my_double = allocate<double>(1);
  *mine.local() = 0;
  *my_double.local() = 0.0;
  const auto all = everyones(mine);
  const auto doubles = everyones(my_double);
  barrier(world());
  const global_ref<std::int64_t> r = *all[static_cast<std::size_t>(right())];
  const global_ref<double> d = *doubles[static_cast<std::size_t>(right())];
  r.store(5).wait();
  EXPECT_EQ(r.load().wait(), 5);
  EXPECT_EQ(r.fetch_add(3).wait(), 5);
  r += 2;
  EXPECT_EQ(r.get(), 10);
  r -= 4;
  EXPECT_EQ(r.get(), 6);
  ++r;
  EXPECT_EQ(r.get(), 7);
  EXPECT_EQ(r++, 7);
  EXPECT_EQ(r.get(), 8);
  EXPECT_EQ(r--, 8);
  --r;
  EXPECT_EQ(r.get(), 6);
  r &= 0b0110;
  r |= 0b1000;
  r ^= 0b0010;
  EXPECT_EQ(r.get(), 0b1100);
  EXPECT_EQ(r.fetch_and(0b0100).wait(), 0b1100);
  EXPECT_EQ(r.fetch_or(0b0001).wait(), 0b0100);
  EXPECT_EQ(r.fetch_xor(0b0101).wait(), 0b0101);
  EXPECT_EQ(r.fetch_sub(1).wait(), 0);
  EXPECT_EQ(r.fetch_min(-9).wait(), -1);
  EXPECT_EQ(r.fetch_max(3).wait(), -9);
  EXPECT_EQ(r.exchange(40).wait(), 3);
  EXPECT_EQ(r.compare_exchange(40, 41).wait(), 40);
  EXPECT_EQ(r.compare_exchange(40, 50).wait(), 41);
  d += 0.5;
  d -= 0.125;
  EXPECT_EQ(d.fetch_add(1.0).wait(), 0.375);
  EXPECT_EQ(d.fetch_max(-2.0).wait(), 1.375);
  EXPECT_EQ(d.load().wait(), 1.375);
  // A read-only reference reads atomically.
  const global_ref<const std::int64_t> cr = *global_ptr<const std::int64_t>(r.ptr());
  EXPECT_EQ(cr.load().wait(), 41);
  barrier(world());
  EXPECT_EQ(*mine.local(), 41);
  EXPECT_EQ(*my_double.local(), 1.375);
  barrier(world());
  deallocate(mine);
  deallocate(my_double);
}

TEST_F(GlobalRef, CompoundAssignmentsFromEveryRankAreAtomic) {
  constexpr int rounds = 300;
  global_ptr<std::uint64_t> block;
  if (rank() == 0) {
    block = allocate<std::uint64_t>(3);
    for (int i = 0; i < 3; ++i) block.local()[i] = 0;
  }
  const auto addr = broadcast(world(), static_cast<std::uint64_t>(block.address()), 0);
  const global_ptr<std::uint64_t> c(0, static_cast<std::uintptr_t>(addr));
  barrier(world());
  std::uint64_t olds = 0;
  for (int i = 0; i < rounds; ++i) {
    c[0] += 2;
    ++c[1];
    olds += c[2]++;
  }
  barrier(world());
  const auto n = static_cast<std::uint64_t>(rounds) * static_cast<std::uint64_t>(size());
  EXPECT_EQ(c[0].get(), 2 * n);
  EXPECT_EQ(c[1].get(), n);
  EXPECT_EQ(c[2].get(), n);
  EXPECT_EQ(allreduce(world(), olds, op::sum), n * (n - 1) / 2) << "each old value once";
  barrier(world());
  if (rank() == 0) deallocate(block);
}

// ---- errors ------------------------------------------------------------------------------

TEST_F(GlobalRef, NullReferencesRaise) {
  const global_ptr<std::int64_t> null;
  expect_error(error_class::arg, "get", [&] { (void)(*null).get(); });
  expect_error(error_class::arg, "get", [&] { [[maybe_unused]] const std::int64_t x = null[0]; });
  expect_error(error_class::arg, "put", [&] { (*null).put(1); });
  expect_error(error_class::arg, "put", [&] { null[0] = 1; });
  expect_error(error_class::arg, "fetch_add", [&] { (void)(*null).fetch_add(1); });
  expect_error(error_class::arg, "atomic_add", [&] { *null += 1; });
  expect_error(error_class::arg, "load", [&] { (void)(*null).load(); });
}

}  // namespace
}  // namespace oneside::test
