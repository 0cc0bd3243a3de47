// dist_array with halos (halo.hpp, dist_array.hpp) for N = 1, 2, 3 over block and none
// dimensions with extents that do not divide evenly: after halo_exchange() and
// halo_exchange_async() every cell of every rank's padded block (owned cells, faces, edges and
// corners) equals a serial model (the owner's value at the global index, wrapped around
// periodic dimensions; the sentinel beyond a non-periodic edge), over several exchanges with
// the owned cells changing in between; widths 1 and 2 and a width wider than a periodic
// dimension's single block; ranks without cells along a dimension without halo; a moved
// array; local views (padded, strided) and for_each_local/transform_local; element access,
// region get/put and copy to and from halo arrays; bad halo specifications (cyclic and
// block-cyclic dimensions, widths above a rank's extent or the address space, halos that
// differ between ranks) raising error(arg) naming the array on every rank, with nothing
// allocated.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"

namespace oneside::test {
namespace {

[[maybe_unused]] const bool configured = ::setenv("ONESIDE_HEAP_MAX_BYTES", "64M", 1) == 0 &&
                                         ::setenv("ONESIDE_HEAP_SEGMENT_BYTES", "1M", 1) == 0;

class DistArrayHalo : public RankTest {};

template <std::size_t N>
using idx = std::array<std::size_t, N>;

constexpr std::int64_t sentinel = -7;

rank_t me_rank() {
  return world().rank();
}

// The value of global index g in round k: its row-major position + 1 + k * 10^6.
template <std::size_t N>
std::int64_t encode(const idx<N>& g, const idx<N>& e, int round) {
  std::size_t o = 0;
  for (std::size_t d = 0; d < N; ++d) o = o * e[d] + g[d];
  return static_cast<std::int64_t>(o) + 1 + std::int64_t{1000000} * round;
}

template <std::size_t N>
std::string describe(const idx<N>& e, const std::array<distribution, N>& ds, const halo<N>& h) {
  std::string s = "extents";
  for (std::size_t d = 0; d < N; ++d) {
    s += ' ' + std::to_string(e[d]) + ':' + std::to_string(static_cast<int>(ds[d].how)) + " w" +
         std::to_string(h.width[d]) + (h.periodic[d] ? "p" : "");
  }
  return s;
}

// What cell p of this rank's padded block must hold after an exchange of round k: the value
// of its global index (wrapped around periodic dimensions), or the sentinel beyond a
// non-periodic edge.
template <std::size_t N>
std::int64_t expected(const dist_array<std::int64_t, N>& a, const idx<N>& p, int round) {
  const idx<N> start = a.global_index(idx<N>{});
  idx<N> g{};
  for (std::size_t d = 0; d < N; ++d) {
    const auto n = static_cast<std::int64_t>(a.extent(d));
    std::int64_t x = static_cast<std::int64_t>(start[d] + p[d]) -
                     static_cast<std::int64_t>(a.get_halo().width[d]);
    if (x < 0 || x >= n) {
      if (!a.get_halo().periodic[d]) return sentinel;
      x = (x % n + n) % n;
    }
    g[d] = static_cast<std::size_t>(x);
  }
  return encode(g, a.extents(), round);
}

// Builds the array, exchanges three times (blocking, async with reads of the owned cells in
// between, blocking), changing the owned cells between rounds, and compares every padded
// cell with the model after each.
template <std::size_t N>
void check_exchange(const idx<N>& e, const std::array<distribution, N>& ds, const halo<N>& h) {
  const std::string what = describe(e, ds, h);
  dist_array<std::int64_t, N> a(world(), e, ds, h, "halo");
  const local_view<std::int64_t, N> all = a.local_with_halo();
  ASSERT_TRUE(all.contiguous()) << what;
  std::fill(all.begin(), all.end(), sentinel);
  const local_view<std::int64_t, N> own = a.local();
  for (std::size_t d = 0; d < N; ++d) {
    EXPECT_EQ(all.extent(d), own.extent(d) + 2 * h.width[d]) << what;
  }
  for (int round = 0; round < 3; ++round) {
    a.transform_local([&](const idx<N>& g, const std::int64_t&) { return encode(g, e, round); });
    if (round == 1) {
      future<> f = a.halo_exchange_async();
      // The owned cells may be read while the halos travel.
      std::int64_t sum = 0;
      a.for_each_local([&](const std::int64_t& v) { (void)v; });
      for (std::size_t o = 0; o < own.size(); ++o) sum += own[own.index_of(o)];
      (void)sum;
      f.wait();
    } else {
      a.halo_exchange();
    }
    std::size_t bad = 0;
    for (std::size_t o = 0; o < all.size(); ++o) {
      const idx<N> p = all.index_of(o);
      const std::int64_t want = expected(a, p, round);
      if (all[p] != want && bad++ < 5) {
        std::string at;
        for (std::size_t d = 0; d < N; ++d) at += std::to_string(p[d]) + ' ';
        ADD_FAILURE() << what << " round " << round << " rank " << me_rank() << " padded cell "
                      << at << "holds " << all[p] << ", expected " << want;
      }
    }
    EXPECT_EQ(bad, 0U) << what << " round " << round;
  }
  barrier(world());
}

// Extents per dimension for grid g: k * g - 1 (k = 3 or 4): every rank of a block dimension
// holds at least k - 1 elements, the last fewer than the others.
template <std::size_t N>
idx<N> uneven(const std::array<int, N>& grid, std::size_t k) {
  idx<N> e{};
  for (std::size_t d = 0; d < N; ++d) e[d] = k * static_cast<std::size_t>(grid[d]) - 1;
  return e;
}

template <std::size_t N>
void check_all_exchanges() {
  const int p = world().size();
  std::array<distribution, N> blocks{};
  blocks.fill(dist::block);
  const std::array<int, N> grid = pattern<N>::square_grid(blocks, p);
  for (const std::size_t k : {3U, 4U}) {
    const idx<N> e = uneven<N>(grid, k);
    for (const std::size_t w : {1U, 2U}) {
      check_exchange<N>(e, blocks, halo<N>::uniform(w, true));
      check_exchange<N>(e, blocks, halo<N>::uniform(w, false));
    }
    // Mixed: periodic first dimension only, widths 2, 1, 2.
    halo<N> mixed;
    for (std::size_t d = 0; d < N; ++d) {
      mixed.width[d] = d % 2 == 0 ? 2 : 1;
      mixed.periodic[d] = d == 0;
    }
    check_exchange<N>(e, blocks, mixed);
    // A dimension without halo (the last), the others periodic; then that dimension of
    // extent 1, which leaves every grid coordinate but the first without cells.
    if (N > 1) {
      halo<N> partial = halo<N>::uniform(1, true);
      partial.width[N - 1] = 0;
      check_exchange<N>(e, blocks, partial);
      idx<N> thin = e;
      thin[N - 1] = 1;
      check_exchange<N>(thin, blocks, partial);
    }
  }
  // A first dimension not distributed (periodic: it wraps onto the rank itself), of extent 5
  // and of extent 1 with width 2 (the halo wraps around the single element twice).
  if constexpr (N > 1) {
    std::array<distribution, N> ds = blocks;
    ds[0] = dist::none;
    const std::array<int, N> g = pattern<N>::square_grid(ds, p);
    if (g[0] != 0) {
      idx<N> e = uneven<N>(g, 3);
      e[0] = 5;
      check_exchange<N>(e, ds, halo<N>::uniform(2, true));
      check_exchange<N>(e, ds, halo<N>::uniform(1, false));
      e[0] = 1;
      halo<N> h = halo<N>::uniform(1, true);
      h.width[0] = 2;
      check_exchange<N>(e, ds, h);
    }
  }
}

TEST_F(DistArrayHalo, ExchangeFillsEveryHaloCell1D) {
  check_all_exchanges<1>();
  // A single not-distributed dimension (one rank only), wrapping around itself.
  if (size() == 1) {
    check_exchange<1>({1}, {dist::none}, halo<1>::uniform(3, true));
    check_exchange<1>({4}, {dist::none}, halo<1>::uniform(2, false));
    check_exchange<1>({4}, {dist::none}, halo<1>::uniform(2, true));
  }
}
TEST_F(DistArrayHalo, ExchangeFillsEveryHaloCell2D) {
  check_all_exchanges<2>();
}
TEST_F(DistArrayHalo, ExchangeFillsEveryHaloCell3D) {
  check_all_exchanges<3>();
}

// Padded local views, the local algorithms, element and region access and copies on arrays
// with halos (the padding never shows through).
TEST_F(DistArrayHalo, AccessAndCopyIgnoreThePadding) {
  // Every rank holds at least 3 rows of `a` and at least one column of `b`.
  const auto np = static_cast<std::size_t>(size());
  const idx<2> e{4 * np - 1, std::max<std::size_t>(7, 2 * np - 1)};
  const std::array<distribution, 2> ds{dist::block, dist::none};
  dist_array<std::int64_t, 2> a(world(), e, ds, halo<2>({2, 1}, {true, false}), "padded");
  const local_view<std::int64_t, 2> all = a.local_with_halo();
  std::fill(all.begin(), all.end(), sentinel);
  const local_view<std::int64_t, 2> own = a.local();
  EXPECT_FALSE(own.contiguous());
  EXPECT_EQ(own.stride(0), own.extent(1) + 2);
  EXPECT_EQ(&own(0, 0), &all(2, 1));
  a.for_each_local([&](const idx<2>& g, std::int64_t& v) { v = encode(g, e, 0); });
  a.transform_local([](const std::int64_t& v) { return v * 2; });
  // Only the owned cells changed.
  for (std::size_t o = 0; o < all.size(); ++o) {
    const idx<2> p = all.index_of(o);
    const bool owned =
        p[0] >= 2 && p[0] < 2 + own.extent(0) && p[1] >= 1 && p[1] < 1 + own.extent(1);
    if (owned) {
      EXPECT_EQ(all[p], 2 * encode(a.global_index({p[0] - 2, p[1] - 1}), e, 0));
    } else {
      EXPECT_EQ(all[p], sentinel);
    }
  }
  barrier(world());
  // Every element through a(i, j) and ptr.
  for (std::size_t i = 0; i < e[0]; ++i) {
    for (std::size_t j = 0; j < e[1]; ++j) {
      const std::int64_t got = a(i, j);
      EXPECT_EQ(got, 2 * encode(idx<2>{i, j}, e, 0)) << i << ", " << j;
    }
  }
  // Regions: the whole array, and a block crossing owners, read back.
  std::vector<std::int64_t> whole(a.size());
  a.get({{0, 0}, e}, whole);
  for (std::size_t o = 0; o < whole.size(); ++o) {
    EXPECT_EQ(whole[o], 2 * encode(idx<2>{o / e[1], o % e[1]}, e, 0));
  }
  barrier(world());
  const region<2> r{{1, 2}, {e[0] - 2, 4}};
  if (rank() == 0) {
    std::vector<std::int64_t> in(r.size());
    for (std::size_t o = 0; o < in.size(); ++o) in[o] = -static_cast<std::int64_t>(o) - 100;
    a.put(r, in);
  }
  barrier(world());
  std::vector<std::int64_t> back(r.size());
  a.get(r, back);
  for (std::size_t o = 0; o < back.size(); ++o) {
    EXPECT_EQ(back[o], -static_cast<std::int64_t>(o) - 100);
  }
  // The padding is still untouched.
  for (std::size_t o = 0; o < all.size(); ++o) {
    const idx<2> p = all.index_of(o);
    const bool owned =
        p[0] >= 2 && p[0] < 2 + own.extent(0) && p[1] >= 1 && p[1] < 1 + own.extent(1);
    if (!owned) {
      EXPECT_EQ(all[p], sentinel);
    }
  }
  barrier(world());
  // Copies: halo array -> plain cyclic array -> another halo array with other widths.
  dist_array<std::int64_t, 2> plain(world(), e, {dist::cyclic, dist::block}, "plain");
  copy(a, {{0, 0}, e}, plain, {{0, 0}, e});
  dist_array<std::int64_t, 2> b(world(), e, {dist::none, dist::block}, halo<2>({1, 1}, {}), "b");
  copy(plain, {{0, 0}, e}, b, {{0, 0}, e});
  std::vector<std::int64_t> got(b.size());
  b.get({{0, 0}, e}, got);
  a.get({{0, 0}, e}, whole);
  EXPECT_EQ(got, whole);
  barrier(world());
  // A copy between two halo arrays, then an exchange on the target.
  copy(a, {{0, 0}, e}, b, {{0, 0}, e});
  b.halo_exchange();
  b.get({{0, 0}, e}, got);
  EXPECT_EQ(got, whole);
  barrier(world());
}

// local_view with explicit strides: a padded view indexes through them; strides equal to the
// dense ones make a contiguous view.
TEST_F(DistArrayHalo, PaddedLocalViewIndexesThroughItsStrides) {
  std::vector<int> store(5 * 8, -1);
  const local_view<int, 2> padded(store.data() + 8 + 1, {3, 4}, {8, 1});
  EXPECT_FALSE(padded.contiguous());
  EXPECT_EQ(padded.size(), 12U);
  EXPECT_EQ(padded.stride(0), 8U);
  EXPECT_EQ(padded.offset({2, 3}), 19U);
  EXPECT_EQ((padded.index_of(7)), (idx<2>{1, 3}));
  padded(2, 3) = 5;
  EXPECT_EQ(store[8 + 1 + 19], 5);
  EXPECT_EQ(&padded.at({1, 0}), store.data() + 17);
  expect_error(error_class::arg, "local_view::at", [&] { (void)padded.at({0, 4}); });
  const local_view<int, 2> dense(store.data(), {5, 8}, {8, 1});
  EXPECT_TRUE(dense.contiguous());
  EXPECT_EQ(dense.span().size(), 40U);
  EXPECT_TRUE((local_view<int, 2>(store.data(), {5, 8}).contiguous()));
  EXPECT_TRUE((local_view<int, 2>(nullptr, {0, 4}, {9, 1}).contiguous()));  // empty
  const local_view<int, 3> rows(store.data(), {2, 2, 3}, {16, 4, 1});       // gaps between rows
  EXPECT_FALSE(rows.contiguous());
  EXPECT_EQ(rows.offset({1, 1, 2}), 22U);
}

// A moved array keeps its halo and its exchanges' count; the moved-from one refuses to
// exchange.
TEST_F(DistArrayHalo, MovedArrayKeepsExchanging) {
  const auto np = static_cast<std::size_t>(size());
  const idx<2> e{3 * np, 5};
  dist_array<std::int64_t, 2> a(world(), e, {dist::block, dist::block}, halo<2>::uniform(1, true),
                                "moving");
  a.transform_local([&](const idx<2>& g, const std::int64_t&) { return encode(g, e, 0); });
  a.halo_exchange();
  dist_array<std::int64_t, 2> b(std::move(a));
  b.transform_local([&](const idx<2>& g, const std::int64_t&) { return encode(g, e, 1); });
  b.halo_exchange_async().wait();
  const local_view<std::int64_t, 2> all = b.local_with_halo();
  for (std::size_t o = 0; o < all.size(); ++o) {
    const idx<2> p = all.index_of(o);
    EXPECT_EQ(all[p], expected(b, p, 1)) << "padded cell " << p[0] << ", " << p[1];
  }
  expect_error(error_class::arg, "dist_array::halo_exchange", [&] { a.halo_exchange(); });
  barrier(world());
}

TEST_F(DistArrayHalo, BadHaloRaisesOnEveryRankAndAllocatesNothing) {
  const heap_stats_t before = symmetric_heap_stats();
  const auto unchanged = [&] {
    const heap_stats_t now = symmetric_heap_stats();
    EXPECT_EQ(now.used, before.used);
    EXPECT_EQ(now.live_blocks, before.live_blocks);
  };
  const auto names = [](const oneside::error& e, const char* array, const char* part) {
    const std::string m = e.what();
    EXPECT_NE(m.find(std::string("'") + array + "'"), std::string::npos) << m;
    EXPECT_NE(m.find(part), std::string::npos) << m;
    EXPECT_TRUE(names_call(m, "dist_array")) << m;
    EXPECT_EQ(e.error_class(), error_class::arg) << m;
  };
  const std::size_t p = static_cast<std::size_t>(size());
  // Cyclic and block-cyclic dimensions cannot have halos (a width 0 there is fine).
  try {
    dist_array<int, 2> a(world(), {4 * p, 9}, {dist::block, dist::cyclic}, halo<2>({1, 1}),
                         "cyclic_halo");
    ADD_FAILURE() << "a halo on a cyclic dimension was accepted";
  } catch (const oneside::error& e) {
    names(e, "cyclic_halo", "cyclic");
  }
  unchanged();
  try {
    dist_array<int, 1> a(world(), {9}, {dist::block_cyclic(2)}, halo<1>::uniform(2, true),
                         "bc_halo");
    ADD_FAILURE() << "a halo on a block-cyclic dimension was accepted";
  } catch (const oneside::error& e) {
    names(e, "bc_halo", "block-cyclic");
  }
  unchanged();
  {
    dist_array<int, 2> fine(world(), {4 * p, 9}, {dist::block, dist::cyclic}, halo<2>({1, 0}),
                            "ok");
    EXPECT_TRUE(fine.get_halo().any());
  }
  unchanged();
  if (p > 1) {
    // A width above some rank's extent: 2 * p - 1 elements give the last rank 1.
    try {
      dist_array<int, 1> a(world(), {2 * p - 1}, {dist::block}, halo<1>::uniform(2), "thin");
      ADD_FAILURE() << "a halo wider than a block was accepted";
    } catch (const oneside::error& e) {
      names(e, "thin", "wider than");
    }
    unchanged();
    // An empty block (block of 2 over p ranks for p + 1 elements leaves ranks empty).
    if (p > 2) {
      expect_error(error_class::arg, "dist_array", [&] {
        dist_array<int, 1> a(world(), {p + 1}, {dist::block}, halo<1>::uniform(1), "empty_rank");
      });
      unchanged();
    }
    // Halos that differ between ranks: in width, and in periodicity.
    expect_error(error_class::arg, "dist_array", [&] {
      dist_array<int, 1> a(world(), {4 * p}, {dist::block}, halo<1>::uniform(rank() == 0 ? 1 : 2),
                           "uneven_halo");
    });
    expect_error(error_class::arg, "dist_array", [&] {
      dist_array<int, 1> a(world(), {4 * p}, {dist::block}, halo<1>::uniform(1, rank() == 0),
                           "uneven_periodic");
    });
    unchanged();
  }
  // A width whose padded extent would wrap around.
  try {
    dist_array<int, 2> a(world(), {3, 4 * p}, {dist::none, dist::block}, halo<2>({SIZE_MAX / 2, 0}),
                         "wraps");
    ADD_FAILURE() << "a halo of SIZE_MAX / 2 was accepted";
  } catch (const oneside::error& e) {
    names(e, "wraps", "address space");
  }
  unchanged();
  // Not distributed: any width (a periodic halo wraps around the rank's own cells).
  dist_array<int, 2> wide(world(), {2, 4 * p}, {dist::none, dist::block},
                          halo<2>({5, 1}, {true, true}), "wide");
  EXPECT_EQ(wide.local_with_halo().extent(0), 12U);
}

}  // namespace
}  // namespace oneside::test
