// The dist_array algorithms (algorithm.hpp) against serial references computed on every
// rank: fill, iota, for_each (both forms), transform (same and different layouts, in place),
// reduce and transform_reduce (sums, a max, a non-arithmetic result), min_element and
// max_element with ties (the smallest global index wins), copy and equal (same and different
// layouts, an array over a team in reversed rank order), and the region forms over whole,
// single-element, empty and random boxes, for every distribution per dimension (none, block,
// cyclic, block_cyclic(3); every combination in 1-D and 2-D, 13 of the 64 in 3-D) × N = 1..3
// over odd extents, some smaller than the rank count (empty blocks); sort of random, sorted,
// reverse-sorted, all-equal and few-distinct keys at sizes from 1 element up, every 1-D
// distribution, with std::less and a descending comparator; and bad input (arrays of different
// extents, regions outside the extents, extremes of an empty region) raising errors that name the
// call and the arrays, with nothing changed.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "dist_array_model.hpp"
#include "expect_error.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

// Before main opens the runtime: a symmetric heap of 1 MiB segments and at most 64 MiB.
[[maybe_unused]] const bool configured = ::setenv("ONESIDE_HEAP_MAX_BYTES", "64M", 1) == 0 &&
                                         ::setenv("ONESIDE_HEAP_SEGMENT_BYTES", "1M", 1) == 0;

class DistArrayAlgorithm : public RankTest {};

const std::array<distribution, 4> kinds = {dist::none, dist::block, dist::cyclic,
                                           dist::block_cyclic(3)};

template <std::size_t N, class F>
void for_each_config(const std::vector<idx<N>>& shapes, F f, std::size_t stride = 1) {
  test::for_each_config<N>(kinds, shapes, f, stride);
}

// Every element of `a` in row-major order (read by this rank through a region get).
template <class T, std::size_t N>
std::vector<T> whole(const dist_array<T, N>& a) {
  std::vector<T> out(a.size());
  a.get(region<N>{{}, a.extents()}, out);
  return out;
}

// Another layout of the same extents: every dimension block (or cyclic where a was block).
template <std::size_t N>
std::array<distribution, N> other_layout(const std::array<distribution, N>& ds) {
  std::array<distribution, N> o{};
  for (std::size_t d = 0; d < N; ++d) o[d] = ds[d] == dist::block ? dist::cyclic : dist::block;
  return o;
}

// A value with repeats: few distinct values, so minima and maxima have ties.
std::int64_t bumpy(std::size_t o) {
  return static_cast<std::int64_t>((o * 7919 + 13) % 11) - 5;
}

template <std::size_t N>
void check_writers(const idx<N>& e, const std::array<distribution, N>& ds) {
  const std::string what = describe(e, ds);
  dist_array<std::int64_t, N> a(world(), e, ds, "a");
  const std::size_t n = a.size();
  fill(a, std::int64_t{7});
  EXPECT_EQ(whole(a), std::vector<std::int64_t>(n, 7)) << what;
  barrier(world());
  iota(a, std::int64_t{-3});
  std::vector<std::int64_t> ref(n);
  std::iota(ref.begin(), ref.end(), std::int64_t{-3});
  EXPECT_EQ(whole(a), ref) << what << " iota";
  barrier(world());
  for_each(a, [&](const idx<N>& g, std::int64_t& v) { v = bumpy(flat(g, e)) + v; });
  for_each(a, [](std::int64_t& v) { v *= 2; });
  for (std::size_t o = 0; o < n; ++o) ref[o] = (bumpy(o) + ref[o]) * 2;
  EXPECT_EQ(whole(a), ref) << what << " for_each";
  barrier(world());
  // transform: to an array of another element type, the same layout and another one.
  dist_array<double, N> same(world(), e, ds, "same");
  dist_array<double, N> other(world(), e, other_layout(ds), "other");
  auto half = [](const std::int64_t& v) { return static_cast<double>(v) / 2.0; };
  transform(a, same, half);
  transform(a, other, half);
  std::vector<double> dref(n);
  for (std::size_t o = 0; o < n; ++o) dref[o] = static_cast<double>(ref[o]) / 2.0;
  EXPECT_EQ(whole(same), dref) << what << " transform, same layout";
  EXPECT_EQ(whole(other), dref) << what << " transform, other layout";
  barrier(world());
  transform(a, a, [](const std::int64_t& v) { return v + 1; });  // in place
  for (std::size_t o = 0; o < n; ++o) ref[o] += 1;
  EXPECT_EQ(whole(a), ref) << what << " transform in place";
  barrier(world());
  // copy: same layout, other layout, onto itself.
  dist_array<std::int64_t, N> b(world(), e, ds, "b");
  dist_array<std::int64_t, N> c(world(), e, other_layout(ds), "c");
  fill(b, std::int64_t{0});
  fill(c, std::int64_t{0});
  copy(a, b);
  copy(a, c);
  copy(a, a);
  EXPECT_EQ(whole(b), ref) << what << " copy, same layout";
  EXPECT_EQ(whole(c), ref) << what << " copy, other layout";
  EXPECT_EQ(whole(a), ref) << what << " copy onto itself";
  barrier(world());
}

template <std::size_t N>
void check_readers(const idx<N>& e, const std::array<distribution, N>& ds) {
  const std::string what = describe(e, ds);
  dist_array<std::int64_t, N> a(world(), e, ds, "a");
  const std::size_t n = a.size();
  for_each(a, [&](const idx<N>& g, std::int64_t& v) { v = bumpy(flat(g, e)); });
  std::vector<std::int64_t> ref(n);
  for (std::size_t o = 0; o < n; ++o) ref[o] = bumpy(o);
  // reduce and transform_reduce
  EXPECT_EQ(reduce(a, std::int64_t{100}), std::accumulate(ref.begin(), ref.end(), 100L)) << what;
  EXPECT_EQ(reduce(a, 0.5), 0.5 + static_cast<double>(std::accumulate(ref.begin(), ref.end(), 0L)))
      << what;
  EXPECT_EQ(
      reduce(a, std::int64_t{-100}, [](std::int64_t x, std::int64_t y) { return std::max(x, y); }),
      *std::max_element(ref.begin(), ref.end()))
      << what;
  std::int64_t squares = 1;
  for (const std::int64_t v : ref) squares += v * v;
  EXPECT_EQ(transform_reduce(a, std::int64_t{1}, std::plus<>{},
                             [](const std::int64_t& v) { return v * v; }),
            squares)
      << what;
  // A result that is not the element type: (count of negatives, count of zeros).
  struct counts {
    std::int64_t negative;
    std::int64_t zero;
  };
  const counts got = transform_reduce(
      a, counts{0, 0},
      [](const counts& x, const counts& y) {
        return counts{x.negative + y.negative, x.zero + y.zero};
      },
      [](const std::int64_t& v) {
        return counts{v < 0 ? 1 : 0, v == 0 ? 1 : 0};
      });
  EXPECT_EQ(got.negative, std::count_if(ref.begin(), ref.end(), [](auto v) { return v < 0; }));
  EXPECT_EQ(got.zero, std::count(ref.begin(), ref.end(), 0)) << what;
  // min_element / max_element: the first (smallest index) extreme.
  const auto lo = std::min_element(ref.begin(), ref.end());
  const auto hi = std::max_element(ref.begin(), ref.end());
  const located<std::int64_t, N> mn = min_element(a);
  const located<std::int64_t, N> mx = max_element(a);
  EXPECT_EQ(mn.value, *lo) << what;
  EXPECT_EQ(mn.index, unflatten(static_cast<std::size_t>(lo - ref.begin()), e)) << what;
  EXPECT_EQ(mx.value, *hi) << what;
  EXPECT_EQ(mx.index, unflatten(static_cast<std::size_t>(hi - ref.begin()), e)) << what;
  // With a comparator: the largest under greater is the smallest value.
  const located<std::int64_t, N> by = max_element(a, std::greater<>{});
  EXPECT_EQ(by.value, *lo) << what;
  EXPECT_EQ(by.index, unflatten(static_cast<std::size_t>(lo - ref.begin()), e)) << what;
  // equal: same layout, other layout; then one element differs.
  dist_array<std::int64_t, N> b(world(), e, ds, "b");
  dist_array<std::int64_t, N> c(world(), e, other_layout(ds), "c");
  copy(a, b);
  copy(a, c);
  EXPECT_TRUE(equal(a, b)) << what;
  EXPECT_TRUE(equal(a, c)) << what;
  EXPECT_TRUE(equal(c, a)) << what;
  const idx<N> last = unflatten(n - 1, e);
  if (world().rank() == world().size() - 1) c[last] = std::int64_t{1000};
  barrier(world());
  EXPECT_FALSE(equal(a, c)) << what;
  EXPECT_FALSE(equal(c, a)) << what;
  EXPECT_TRUE(equal(a, b)) << what;
  if (world().rank() == 0) b[idx<N>{}] = std::int64_t{-1000};
  barrier(world());
  EXPECT_FALSE(equal(a, b)) << what;
  barrier(world());
}

// The region forms: fill, for_each, reduce, transform_reduce, min_element and max_element
// over the whole array, one element, an empty box and random boxes (the same on every rank).
template <std::size_t N>
void check_regions(const idx<N>& e, const std::array<distribution, N>& ds) {
  const std::string what = describe(e, ds);
  dist_array<std::int64_t, N> a(world(), e, ds, "a");
  const std::size_t n = a.size();
  for_each(a, [&](const idx<N>& g, std::int64_t& v) { v = bumpy(flat(g, e)); });
  std::vector<std::int64_t> ref(n);
  for (std::size_t o = 0; o < n; ++o) ref[o] = bumpy(o);
  std::mt19937_64 gen(77);
  std::vector<region<N>> boxes;
  boxes.push_back({idx<N>{}, e});
  region<N> one{};
  for (std::size_t d = 0; d < N; ++d) {
    one.lo[d] = e[d] / 2;
    one.extents[d] = 1;
  }
  boxes.push_back(one);
  region<N> none = one;
  none.extents[0] = 0;
  boxes.push_back(none);
  for (int i = 0; i < 3; ++i) {
    region<N> r{};
    for (std::size_t d = 0; d < N; ++d) {
      r.lo[d] = gen() % e[d];
      r.extents[d] = 1 + gen() % (e[d] - r.lo[d]);
    }
    boxes.push_back(r);
  }
  const auto inside = [&](const region<N>& r, std::size_t o) {
    const idx<N> g = unflatten(o, e);
    for (std::size_t d = 0; d < N; ++d) {
      if (g[d] < r.lo[d] || g[d] >= r.lo[d] + r.extents[d]) return false;
    }
    return true;
  };
  for (std::size_t b = 0; b < boxes.size(); ++b) {
    const region<N>& r = boxes[b];
    const std::string at = what + " box " + std::to_string(b);
    std::int64_t sum = 5;
    std::int64_t squares = 0;
    std::size_t lo = n;
    std::size_t hi = n;
    for (std::size_t o = 0; o < n; ++o) {
      if (!inside(r, o)) continue;
      sum += ref[o];
      squares += ref[o] * ref[o];
      if (lo == n || ref[o] < ref[lo]) lo = o;
      if (hi == n || ref[o] > ref[hi]) hi = o;
    }
    EXPECT_EQ(reduce(a, r, std::int64_t{5}), sum) << at;
    EXPECT_EQ(transform_reduce(a, r, std::int64_t{0}, std::plus<>{},
                               [](const std::int64_t& v) { return v * v; }),
              squares)
        << at;
    if (r.size() != 0) {
      const located<std::int64_t, N> mn = min_element(a, r);
      const located<std::int64_t, N> mx = max_element(a, r);
      EXPECT_EQ(mn.value, ref[lo]) << at;
      EXPECT_EQ(mn.index, unflatten(lo, e)) << at;
      EXPECT_EQ(mx.value, ref[hi]) << at;
      EXPECT_EQ(mx.index, unflatten(hi, e)) << at;
      EXPECT_EQ(min_element(a, r, std::greater<>{}).index, unflatten(hi, e)) << at;
    }
    // Writers: negate the box through for_each (with the index), then fill every other box.
    for_each(a, r, [&](const idx<N>& g, std::int64_t& v) {
      v = -v - static_cast<std::int64_t>(flat(g, e));
    });
    for (std::size_t o = 0; o < n; ++o) {
      if (inside(r, o)) ref[o] = -ref[o] - static_cast<std::int64_t>(o);
    }
    EXPECT_EQ(whole(a), ref) << at << " for_each";
    barrier(world());
    if (b % 2 == 1) {
      fill(a, r, static_cast<std::int64_t>(b));
      for (std::size_t o = 0; o < n; ++o) {
        if (inside(r, o)) ref[o] = static_cast<std::int64_t>(b);
      }
      EXPECT_EQ(whole(a), ref) << at << " fill";
      barrier(world());
    }
    for_each(a, r, [](std::int64_t& v) { v += 1; });
    for (std::size_t o = 0; o < n; ++o) {
      if (inside(r, o)) ref[o] += 1;
    }
    EXPECT_EQ(whole(a), ref) << at << " for_each";
    barrier(world());
  }
}

TEST_F(DistArrayAlgorithm, RegionFormsMatchTheSerialReference1D) {
  for_each_config<1>({{1}, {5}, {37}}, check_regions<1>);
}
TEST_F(DistArrayAlgorithm, RegionFormsMatchTheSerialReference2D) {
  for_each_config<2>({{7, 9}, {1, 3}}, check_regions<2>);
}
TEST_F(DistArrayAlgorithm, RegionFormsMatchTheSerialReference3D) {
  for_each_config<3>({{3, 5, 7}}, check_regions<3>, 5);
}

TEST_F(DistArrayAlgorithm, WritersMatchTheSerialReference1D) {
  for_each_config<1>({{1}, {5}, {37}}, check_writers<1>);
}
TEST_F(DistArrayAlgorithm, WritersMatchTheSerialReference2D) {
  for_each_config<2>({{7, 9}, {1, 3}}, check_writers<2>);
}
TEST_F(DistArrayAlgorithm, WritersMatchTheSerialReference3D) {
  for_each_config<3>({{3, 5, 7}}, check_writers<3>, 5);
}
TEST_F(DistArrayAlgorithm, ReadersMatchTheSerialReference1D) {
  for_each_config<1>({{1}, {5}, {37}}, check_readers<1>);
}
TEST_F(DistArrayAlgorithm, ReadersMatchTheSerialReference2D) {
  for_each_config<2>({{7, 9}, {1, 3}}, check_readers<2>);
}
TEST_F(DistArrayAlgorithm, ReadersMatchTheSerialReference3D) {
  for_each_config<3>({{3, 5, 7}}, check_readers<3>, 5);
}

// Large enough blocks for several reduction chunks and several threads per rank.
TEST_F(DistArrayAlgorithm, ReduceOverManyChunks) {
  const std::size_t n = 100003;
  dist_array<double, 1> a(world(), {n}, {dist::block_cyclic(1000)}, "big");
  iota(a, 1.0);
  const double sum = static_cast<double>(n) * static_cast<double>(n + 1) / 2.0;
  EXPECT_EQ(reduce(a, 0.0), sum);  // exact: integers below 2^53
  const located<double, 1> mx = max_element(a);
  EXPECT_EQ(mx.value, static_cast<double>(n));
  EXPECT_EQ(mx.index[0], n - 1);
  const located<double, 1> mn = min_element(a);
  EXPECT_EQ(mn.value, 1.0);
  EXPECT_EQ(mn.index[0], 0U);
  fill(a, 2.0);
  EXPECT_EQ(reduce(a, 0.0), 2.0 * static_cast<double>(n));
  // All equal: the first index is the minimum and the maximum.
  EXPECT_EQ(min_element(a).index[0], 0U);
  EXPECT_EQ(max_element(a).index[0], 0U);
}

// Arrays over the world and over a team of the world in reversed order: the same pattern but
// another rank holds each block, so the algorithms must not take them for the same layout.
TEST_F(DistArrayAlgorithm, ArraysOverAReversedTeam) {
  const team reversed = world().split(0, size() - rank());
  const std::size_t n = 23;
  dist_array<int, 1> a(world(), {n}, {dist::block}, "forward");
  dist_array<int, 1> b(reversed, {n}, {dist::block}, "backward");
  iota(a, 5);
  copy(a, b);
  std::vector<int> ref(n);
  std::iota(ref.begin(), ref.end(), 5);
  EXPECT_EQ(whole(b), ref);
  EXPECT_TRUE(equal(a, b));
  transform(a, b, [](const int& v) { return -v; });
  for (int& v : ref) v = -v;
  EXPECT_EQ(whole(b), ref);
  EXPECT_FALSE(equal(b, a));
}

// ---- sort ----------------------------------------------------------------------------------

enum class keys { random, sorted, reversed, equal, few };

std::vector<std::int64_t> make_keys(keys k, std::size_t n) {
  std::vector<std::int64_t> v(n);
  std::mt19937_64 gen(n * 31 + static_cast<std::size_t>(k));  // the same on every rank
  for (std::size_t i = 0; i < n; ++i) {
    switch (k) {
      case keys::random:
        v[i] = static_cast<std::int64_t>(gen() % 1000000) - 500000;
        break;
      case keys::sorted:
        v[i] = static_cast<std::int64_t>(i);
        break;
      case keys::reversed:
        v[i] = static_cast<std::int64_t>(n - i);
        break;
      case keys::equal:
        v[i] = 42;
        break;
      case keys::few:
        v[i] = static_cast<std::int64_t>(gen() % 3);
        break;
    }
  }
  return v;
}

template <class Comp>
void check_sort(std::size_t n, distribution d, keys k, Comp comp) {
  const std::string what = "n " + std::to_string(n) + " dist " +
                           std::to_string(static_cast<int>(d.how)) + " keys " +
                           std::to_string(static_cast<int>(k));
  const std::vector<std::int64_t> in = make_keys(k, n);
  dist_array<std::int64_t, 1> a(world(), {n}, {d}, "keys");
  for_each(a, [&](const idx<1>& g, std::int64_t& v) { v = in[g[0]]; });
  sort(a, comp);
  std::vector<std::int64_t> ref = in;
  std::sort(ref.begin(), ref.end(), comp);
  EXPECT_EQ(whole(a), ref) << what;
  barrier(world());
}

TEST_F(DistArrayAlgorithm, SortMatchesTheSerialSort) {
  std::vector<distribution> ds = {dist::block, dist::cyclic, dist::block_cyclic(3)};
  if (size() == 1) ds.push_back(dist::none);
  for (const std::size_t n : {1UL, 2UL, 3UL, 7UL, 100UL, 1001UL, 30011UL}) {
    for (const distribution d : ds) {
      for (const keys k : {keys::random, keys::sorted, keys::reversed, keys::equal, keys::few}) {
        check_sort(n, d, k, std::less<>{});
      }
    }
  }
}

TEST_F(DistArrayAlgorithm, SortWithAComparator) {
  for (const std::size_t n : {1UL, 9UL, 5000UL}) {
    check_sort(n, dist::block, keys::random, std::greater<>{});
    check_sort(n, dist::cyclic, keys::few, std::greater<>{});
  }
}

// A key type that is not an integer: sorted by one member, the other carried along.
TEST_F(DistArrayAlgorithm, SortCarriesRecords) {
  struct record {
    double key;
    std::int32_t id;
  };
  const std::size_t n = 2001;
  dist_array<record, 1> a(world(), {n}, {dist::block_cyclic(3)}, "records");
  for_each(a, [](const idx<1>& g, record& r) {
    r = {static_cast<double>((g[0] * 7919) % 1009), static_cast<std::int32_t>(g[0])};
  });
  sort(a, [](const record& x, const record& y) { return x.key < y.key; });
  const std::vector<record> got = whole(a);
  std::vector<bool> seen(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) {
      EXPECT_LE(got[i - 1].key, got[i].key) << i;
    }
    const auto id = static_cast<std::size_t>(got[i].id);
    ASSERT_LT(id, n);
    EXPECT_FALSE(seen[id]) << id;
    seen[id] = true;
    EXPECT_EQ(got[i].key, static_cast<double>((id * 7919) % 1009)) << i;
  }
  barrier(world());
}

// ---- bad input -----------------------------------------------------------------------------

TEST_F(DistArrayAlgorithm, DifferentExtentsAreRejectedWithNothingChanged) {
  dist_array<int, 2> a(world(), {5, 4}, {dist::block, dist::none}, "left");
  dist_array<int, 2> b(world(), {4, 5}, {dist::block, dist::none}, "right");
  iota(a, 0);
  fill(b, -1);
  const std::vector<int> before = whole(b);
  for (const auto& [call, run] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"dist_array copy", [&] { copy(a, b); }},
           {"dist_array transform", [&] { transform(a, b, [](const int& v) { return v; }); }},
           {"dist_array equal", [&] { (void)equal(a, b); }}}) {
    try {
      run();
      ADD_FAILURE() << call << " accepted arrays of different extents";
    } catch (const oneside::error& e) {
      EXPECT_EQ(e.error_class(), error_class::arg) << call;
      EXPECT_TRUE(names_call(e.what(), call)) << e.what();
      const std::string msg = e.what();
      EXPECT_NE(msg.find("'left'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("'right'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("(5, 4)"), std::string::npos) << msg;
    }
    barrier(world());
    EXPECT_EQ(whole(b), before) << call;
    barrier(world());
  }
  // Regions outside the extents; min_element and max_element of an empty region.
  const region<2> out{{2, 1}, {4, 3}};  // rows 2..5 of 5
  const std::vector<int> a_before = whole(a);
  expect_error(error_class::arg, "dist_array fill", [&] { fill(a, out, 0); });
  expect_error(error_class::arg, "dist_array for_each",
               [&] { for_each(a, out, [](int& v) { v = 0; }); });
  expect_error(error_class::arg, "dist_array transform_reduce", [&] { (void)reduce(a, out, 0); });
  expect_error(error_class::arg, "dist_array min_element", [&] { (void)min_element(a, out); });
  expect_error(error_class::arg, "dist_array max_element", [&] {
    (void)max_element(a, region<2>{{1, 1}, {0, 2}});
  });
  try {
    fill(a, region<2>{{0, 3}, {1, 2}}, 0);  // columns 3..4 of 4
    ADD_FAILURE() << "fill accepted a region outside the extents";
  } catch (const oneside::error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'left'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dimension 1"), std::string::npos) << msg;
  }
  barrier(world());
  EXPECT_EQ(whole(a), a_before);
  barrier(world());
  dist_array<int, 1> c(world(), {3}, {dist::cyclic}, "short");
  dist_array<int, 1> d(world(), {4}, {dist::cyclic}, "long");
  expect_error(error_class::arg, "dist_array copy", [&] { copy(c, d); });
}

}  // namespace
}  // namespace oneside::test
