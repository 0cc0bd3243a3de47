// dist_object<T> (dist_object.hpp): each rank's own value through *, -> and local(); every
// other rank's through fetch() and ptr(), also after it changed; several objects side by
// side; collective construction and destruction in a loop giving every byte back; bad ranks
// raising.
#include <array>
#include <cstdint>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/pgas/dist_object.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

class DistObject : public RankTest {
 protected:
  static rank_t right() { return (rank() + 1) % size(); }
};

struct info {
  std::int32_t rank;
  double x;
  std::array<std::int64_t, 5> values;
};

info info_of(rank_t r) {
  return info{r, r * 1.5, {r, 2 * r, 3 * r, 4 * r, 5 * r}};
}

TEST_F(DistObject, EachRankHasItsValueAndReadsEveryOthers) {
  dist_object<info> obj(info_of(rank()));
  EXPECT_EQ(obj->rank, rank());
  EXPECT_EQ((*obj).x, rank() * 1.5);
  EXPECT_EQ(obj.local().values[4], 5 * rank());
  EXPECT_EQ(obj.ptr(rank()).local(), &obj.local()) << "ptr(me) is my own value";
  for (rank_t r = 0; r < size(); ++r) {
    EXPECT_EQ(obj.ptr(r).where(), r);
    const info got = obj.fetch(r).wait();
    EXPECT_EQ(got.rank, r);
    EXPECT_EQ(got.x, r * 1.5);
    EXPECT_EQ(got.values[2], 3 * r);
  }
  // Changes are seen by the others.
  barrier(world());  // everybody has read the first values
  obj->x = -rank();
  obj.local().values[0] = 1000 + rank();
  barrier(world());
  const info changed = obj.fetch(right()).wait();
  EXPECT_EQ(changed.x, -right());
  EXPECT_EQ(changed.values[0], 1000 + right());
  // And others write through ptr().
  barrier(world());
  rput(std::int32_t{-7},
       global_ptr<std::int32_t>(obj.ptr(right()).where(), obj.ptr(right()).address()))
      .wait();
  barrier(world());
  EXPECT_EQ(obj->rank, -7);
  const dist_object<info>& read_only = obj;
  EXPECT_EQ(read_only->rank, -7);
  EXPECT_EQ((*read_only).values[0], 1000 + rank());
}

TEST_F(DistObject, SeveralObjectsAreDistinct) {
  dist_object<std::int64_t> a(rank());
  dist_object<std::int64_t> b(10 * rank());
  dist_object<double> c(0.25 * rank());
  EXPECT_NE(a.ptr(right()), b.ptr(right()));
  EXPECT_EQ(a.fetch(right()).wait(), right());
  EXPECT_EQ(b.fetch(right()).wait(), 10 * right());
  EXPECT_EQ(c.fetch(right()).wait(), 0.25 * right());
  EXPECT_EQ(*a, rank());
  EXPECT_EQ(*b, 10 * rank());
}

TEST_F(DistObject, MadeAndDestroyedTogetherGivingEverythingBack) {
  const heap_stats_t before = heap_stats();
  for (std::uint64_t i = 0; i < 50; ++i) {
    dist_object<std::uint64_t> o(i * 100 + static_cast<std::uint64_t>(rank()));
    EXPECT_EQ(o.fetch(right()).wait(), i * 100 + static_cast<std::uint64_t>(right()));
  }  // each destructor: a barrier, then the value is freed
  const heap_stats_t after = heap_stats();
  EXPECT_EQ(after.used, before.used);
  EXPECT_EQ(after.live_blocks, before.live_blocks);
}

TEST_F(DistObject, RanksOutsideTheWorldRaise) {
  dist_object<std::int64_t> o(rank());
  expect_error(error_class::rank, "ptr", [&] { (void)o.ptr(size()); });
  expect_error(error_class::rank, "ptr", [&] { (void)o.ptr(-1); });
  expect_error(error_class::rank, "ptr", [&] { (void)o.fetch(size()); });
}

}  // namespace
}  // namespace oneside::test
