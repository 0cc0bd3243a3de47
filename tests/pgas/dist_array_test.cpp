// dist_array<T, N> (dist_array.hpp) for N = 1, 2, 3 and every distribution per dimension
// (none, block, cyclic, block_cyclic(2)) over odd extents, some below the rank count (empty
// blocks): the storage agrees with the pattern (every rank reads every element through
// a(i, j, k) what its owner wrote through its local view), writes and atomics through
// global_ref, region get/put against a serial reference (random regions, most crossing
// several owners; the whole array; single elements; empty ones), local views and their index
// maps, construction over a team in another rank order and over teams smaller than the world,
// moves; bad input (indices and regions out of range, wrong buffer sizes, arguments that differ
// between ranks, invalid patterns, blocks too large) raising errors that name the array and the
// call, with nothing changed.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
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

class DistArray : public RankTest {};

rank_t me() {
  return world().rank();
}
std::size_t ranks() {
  return static_cast<std::size_t>(world().size());
}

static_assert(!std::is_copy_constructible_v<dist_array<int, 2>>);
static_assert(!std::is_copy_assignable_v<dist_array<int, 2>>);
static_assert(std::is_nothrow_move_constructible_v<dist_array<int, 2>>);

const std::array<distribution, 4> kinds = {dist::none, dist::block, dist::cyclic,
                                           dist::block_cyclic(2)};

// The value the tests store at global index g: its row-major position + 1 (never 0).
template <std::size_t N>
std::int64_t encode(const idx<N>& g, const idx<N>& e) {
  return static_cast<std::int64_t>(flat(g, e)) + 1;
}

template <std::size_t N, class F>
void for_each_config(const std::vector<idx<N>>& shapes, F f) {
  test::for_each_config<N>(kinds, shapes, f);
}

// Every rank writes its block through the local view, then reads every element through
// global references and pointers.
template <std::size_t N>
void check_element_access(const idx<N>& e, const std::array<distribution, N>& ds) {
  const std::string what = describe(e, ds);
  dist_array<std::int64_t, N> a(world(), e, ds, "elements");
  a.for_each_local([&](const idx<N>& g, std::int64_t& v) { v = encode(g, e); });
  barrier(world());
  for (std::size_t o = 0; o < a.size(); ++o) {
    const idx<N> g = unflatten(o, e);
    const global_ptr<std::int64_t> p = a.ptr(g);
    EXPECT_EQ(p.where(), a.pattern().owner(g)) << what;
    std::int64_t got = 0;
    if constexpr (N == 1) {
      got = a[g[0]];
    } else if constexpr (N == 2) {
      got = a(g[0], g[1]);
    } else {
      got = a(g[0], g[1], g[2]);
    }
    EXPECT_EQ(got, encode(g, e)) << what << " element " << o;
    EXPECT_EQ(a.owns(g), a.pattern().owner(g) == me()) << what;
  }
  barrier(world());
  // Each rank writes every size()-th element through a global_ref; owners check locally.
  for (std::size_t o = static_cast<std::size_t>(me()); o < a.size(); o += ranks()) {
    a[unflatten(o, e)] = -encode(unflatten(o, e), e);
  }
  barrier(world());
  const local_view<std::int64_t, N> v = a.local();
  EXPECT_EQ(v.extents(), a.pattern().local_extents(me())) << what;
  for (std::size_t o = 0; o < v.size(); ++o) {
    const idx<N> l = v.index_of(o);
    const idx<N> g = a.global_index(l);
    EXPECT_TRUE(a.owns(g)) << what;
    EXPECT_EQ(a.pattern().local_index(g), l) << what;
    EXPECT_EQ(v[l], -encode(g, e)) << what << " local " << o;
  }
  barrier(world());
}

TEST_F(DistArray, ElementAccessFollowsThePattern1D) {
  for_each_config<1>({{1}, {7}, {13}}, check_element_access<1>);
}
TEST_F(DistArray, ElementAccessFollowsThePattern2D) {
  for_each_config<2>({{5, 7}, {2, 3}}, check_element_access<2>);
}
TEST_F(DistArray, ElementAccessFollowsThePattern3D) {
  for_each_config<3>({{3, 5, 3}}, check_element_access<3>);
}

// Regions: random boxes (the same on every rank), the whole array, one element, an empty
// box; gets against the serial reference, then puts by one rank after another (each writer
// a different region, every rank checking the whole array after each).
template <std::size_t N>
void check_regions(const idx<N>& e, const std::array<distribution, N>& ds) {
  const std::string what = describe(e, ds);
  dist_array<std::int64_t, N> a(world(), e, ds, "regions");
  a.transform_local([&](const idx<N>& g, std::int64_t) { return encode(g, e); });
  barrier(world());
  std::mt19937_64 gen(1234);
  std::vector<region<N>> boxes;
  boxes.push_back({idx<N>{}, e});  // the whole array
  region<N> one{};
  for (std::size_t d = 0; d < N; ++d) {
    one.lo[d] = e[d] / 2;
    one.extents[d] = 1;
  }
  boxes.push_back(one);
  region<N> none = one;
  none.extents[N - 1] = 0;
  boxes.push_back(none);
  for (int i = 0; i < 6; ++i) {
    region<N> r{};
    for (std::size_t d = 0; d < N; ++d) {
      r.lo[d] = gen() % e[d];
      r.extents[d] = 1 + gen() % (e[d] - r.lo[d]);
    }
    boxes.push_back(r);
  }
  std::vector<std::int64_t> expect;
  const auto reference = [&](const region<N>& r, std::int64_t sign) {
    expect.assign(r.size(), 0);
    for (std::size_t o = 0; o < r.size(); ++o) {
      expect[o] = sign * encode(in_region(r, o), e);
    }
  };
  for (std::size_t b = 0; b < boxes.size(); ++b) {
    const region<N>& r = boxes[b];
    std::vector<std::int64_t> got(r.size(), 0);
    if (b % 2 == 0) {
      a.get(r, got);
    } else {
      a.rget(r, got).wait();
    }
    reference(r, 1);
    EXPECT_EQ(got, expect) << what << " region " << b;
  }
  barrier(world());  // every get done before the first put
  // Puts: writer w negates the values of box w + 3 (the random ones), blocking or not.
  std::vector<bool> negated(a.size(), false);
  for (std::size_t b = 3; b < boxes.size(); ++b) {
    const region<N>& r = boxes[b];
    const auto writer = static_cast<rank_t>(b % ranks());
    if (me() == writer) {
      std::vector<std::int64_t> in(r.size());
      for (std::size_t o = 0; o < r.size(); ++o) {
        in[o] = -encode(in_region(r, o), e);
      }
      if (b % 2 == 0) {
        a.put(r, in);
      } else {
        future<> f = a.rput(r, in);
        in.assign(in.size(), 0);  // the source may be reused once rput returns
        f.wait();
      }
    }
    for (std::size_t o = 0; o < r.size(); ++o) {
      negated[static_cast<std::size_t>(encode(in_region(r, o), e) - 1)] = true;
    }
    barrier(world());
    const local_view<const std::int64_t, N> v = std::as_const(a).local();
    for (std::size_t o = 0; o < v.size(); ++o) {
      const idx<N> g = a.global_index(v.index_of(o));
      const std::int64_t want = encode(g, e);
      EXPECT_EQ(v.data()[o], negated[static_cast<std::size_t>(want - 1)] ? -want : want)
          << what << " after put " << b;
    }
    barrier(world());
  }
}

TEST_F(DistArray, RegionsMatchASerialReference1D) {
  for_each_config<1>({{1}, {7}, {29}}, check_regions<1>);
}
TEST_F(DistArray, RegionsMatchASerialReference2D) {
  for_each_config<2>({{9, 7}, {2, 5}}, check_regions<2>);
}
TEST_F(DistArray, RegionsMatchASerialReference3D) {
  for_each_config<3>({{5, 3, 7}}, check_regions<3>);
}

// copy: every pair of distributions per dimension (the 16 pairs of `kinds` in each
// dimension, combined so that N = 2 and 3 also meet each pair), between arrays of different
// extents, a random region shifted between them; each rank checks its block of the target
// against the serial reference (inside the region: the source's value, outside: untouched).
template <std::size_t N>
void check_copy(const idx<N>& ea, const idx<N>& eb) {
  const std::size_t pairs = kinds.size() * kinds.size();
  std::mt19937_64 gen(99);
  for (std::size_t i = 0; i < pairs; ++i) {
    std::array<distribution, N> da{};
    std::array<distribution, N> db{};
    for (std::size_t d = 0; d < N; ++d) {
      const std::size_t p = (i * (2 * d + 1) + 5 * d) % pairs;
      da[d] = kinds[p / kinds.size()];
      db[d] = kinds[p % kinds.size()];
    }
    if (pattern<N>::square_grid(da, world().size())[0] == 0 ||
        pattern<N>::square_grid(db, world().size())[0] == 0) {
      continue;
    }
    const std::string what = describe(ea, da) + " to " + describe(eb, db);
    dist_array<std::int64_t, N> a(world(), ea, da, "source");
    dist_array<std::int64_t, N> b(world(), eb, db, "target");
    a.transform_local([&](const idx<N>& g, std::int64_t) { return encode(g, ea); });
    b.for_each_local([](std::int64_t& v) { v = -1; });
    region<N> from{};
    region<N> to{};
    for (std::size_t d = 0; d < N; ++d) {
      const std::size_t most = std::min(ea[d], eb[d]);
      from.extents[d] = to.extents[d] = 1 + gen() % most;
      from.lo[d] = gen() % (ea[d] - from.extents[d] + 1);
      to.lo[d] = gen() % (eb[d] - to.extents[d] + 1);
    }
    copy(a, from, b, to);  // collective, barriers at both ends
    const local_view<std::int64_t, N> v = b.local();
    for (std::size_t o = 0; o < v.size(); ++o) {
      const idx<N> g = b.global_index(v.index_of(o));
      bool inside = true;
      idx<N> source{};
      for (std::size_t d = 0; d < N; ++d) {
        inside = inside && g[d] >= to.lo[d] && g[d] < to.lo[d] + to.extents[d];
        source[d] = g[d] - to.lo[d] + from.lo[d];
      }
      EXPECT_EQ(v.data()[o], inside ? encode(source, ea) : -1) << what << " local " << o;
    }
    barrier(world());
  }
}

TEST_F(DistArray, CopyRedistributesBetweenEveryPair1D) {
  check_copy<1>({23}, {19});
  check_copy<1>({3}, {40});
}
TEST_F(DistArray, CopyRedistributesBetweenEveryPair2D) {
  check_copy<2>({9, 7}, {6, 11});
}
TEST_F(DistArray, CopyRedistributesBetweenEveryPair3D) {
  check_copy<3>({5, 4, 7}, {6, 5, 3});
}

TEST_F(DistArray, BadCopiesChangeNothing) {
  dist_array<int, 2> a(world(), {6, 6}, {dist::block, dist::cyclic}, "from");
  dist_array<int, 2> b(world(), {4, 8}, {dist::cyclic, dist::block}, "to");
  a.for_each_local([](int& v) { v = 1; });
  b.for_each_local([](int& v) { v = 2; });
  barrier(world());
  expect_error(error_class::arg, "dist_array copy", [&] {
    copy(a, {{0, 0}, {2, 2}}, b, {{0, 0}, {2, 3}});
  });
  expect_error(error_class::arg, "dist_array copy", [&] {
    copy(a, {{0, 0}, {5, 2}}, b, {{0, 0}, {5, 2}});
  });  // b has 4 rows
  expect_error(error_class::arg, "dist_array copy", [&] {
    copy(a, {{0, 0}, {3, 3}}, a, {{2, 2}, {3, 3}});
  });  // overlap
  for (const int v : a.local()) EXPECT_EQ(v, 1);
  for (const int v : b.local()) EXPECT_EQ(v, 2);
  // Disjoint regions of one array are fine.
  copy(a, {{0, 0}, {2, 2}}, a, {{4, 4}, {2, 2}});
  barrier(world());
}

// The API tour of dist_array (docs/tour.md quotes it; style.readme_snippets keeps it an excerpt).
TEST_F(DistArray, ReadmeTour) {
  const oneside::team& world = oneside::world();
  // 100 x 80 doubles: rows in blocks, columns dealt out 8 at a time, over a grid of the team.
  oneside::dist_array<double, 2> m(world, {100, 80},
                                   {oneside::dist::block, oneside::dist::block_cyclic(8)}, "m");
  m.transform_local([](const std::array<std::size_t, 2>& g, double) {
    return 1000.0 * static_cast<double>(g[0]) + static_cast<double>(g[1]);
  });
  oneside::barrier(world);
  const double x = m(42, 17);             // a global_ref<double>: read from wherever it lives
  if (world.rank() == 0) m(0, 0) += 0.5;  // atomic on the owner
  std::vector<double> tile(10 * 20);
  m.get({{40, 10}, {10, 20}}, tile);  // a 10 x 20 box: one strided transfer per owner
  oneside::future<> f = m.rget({{0, 0}, {1, 80}}, std::span(tile).first(80));
  f.wait();
  const oneside::local_view<double, 2> mine = m.local();  // this rank's block, row-major
  for (std::size_t i = 0; i < mine.extent(0); ++i) {
    for (std::size_t j = 0; j < mine.extent(1); ++j) {
      const std::array<std::size_t, 2> g = m.global_index({i, j});  // where (i, j) sits
      EXPECT_EQ(mine(i, j), 1000.0 * static_cast<double>(g[0]) + static_cast<double>(g[1]) +
                                (g[0] == 0 && g[1] == 0 ? 0.5 : 0.0));
    }
  }
  EXPECT_EQ(x, 42017.0);
  EXPECT_EQ(tile[5], 5.0);
  oneside::barrier(world);
}

TEST_F(DistArray, GivenGridAndAtomicsThroughReferences) {
  // The grid 1 x size() instead of the square one; every rank adds 1 to every element.
  dist_array<std::int64_t, 2> a(world(), {3, 11}, {dist::block, dist::cyclic}, {1, size()},
                                "counters");
  EXPECT_EQ(a.pattern().grid(), (std::array<int, 2>{1, size()}));
  a.for_each_local([](std::int64_t& v) { v = 0; });
  barrier(world());
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 11; ++j) a(i, j) += 1;
  }
  barrier(world());
  for (const std::int64_t v : a.local()) EXPECT_EQ(v, size());
  barrier(world());
}

TEST_F(DistArray, TeamInAnotherRankOrder) {
  // Team rank r is world rank size()-1-r: pointers must name world ranks.
  const team reversed = world().split(0, size() - rank());
  ASSERT_EQ(reversed.to_world(0), size() - 1);
  dist_array<int, 1> a(reversed, {10}, {dist::cyclic}, "reversed");
  a.transform_local(
      [](const std::array<std::size_t, 1>& g, int) { return static_cast<int>(g[0]); });
  barrier(world());
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(a.ptr({i}).where(),
              reversed.to_world(static_cast<rank_t>(i % static_cast<std::size_t>(size()))));
    EXPECT_EQ(static_cast<int>(a[i]), static_cast<int>(i));
  }
  std::vector<int> all(10);
  a.get({{0}, {10}}, all);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)], i);
  barrier(world());
}

// Over a team smaller than the world (the two halves of a split): each half's array lives on
// its members' global heaps, names world ranks, serves elements, regions, copies, algorithms
// and halos within the half, and is created and destroyed by that half alone (the halves make
// different numbers of arrays, which a world-collective step would deadlock on).
TEST_F(DistArray, ArraysOverSmallerTeams) {
  const team half = world().split(rank() % 2, rank());
  const auto n = static_cast<std::size_t>(7 + 3 * (rank() % 2));  // the halves differ
  const heap_stats_t sym_before = symmetric_heap_stats();
  const heap_stats_t heap_before = heap_stats();
  {
    dist_array<std::int64_t, 2> a(half, {n, 5}, {dist::block, dist::cyclic}, "half");
    dist_array<std::int64_t, 2> b(half, {n, 5}, {dist::cyclic, dist::none}, "half copy");
    if (half.size() < size()) {
      EXPECT_EQ(symmetric_heap_stats().used, sym_before.used) << "a half's array is symmetric";
    }
    a.transform_local([&](const idx<2>& g, std::int64_t) { return encode<2>(g, {n, 5}); });
    barrier(half);
    std::vector<std::int64_t> all(n * 5);
    a.get({{0, 0}, {n, 5}}, all);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < 5; ++j) {
        EXPECT_EQ(all[i * 5 + j], encode<2>({i, j}, {n, 5}));
        const rank_t owner = half.to_world(a.pattern().owner({i, j}));
        EXPECT_EQ(a.ptr({i, j}).where(), owner);
        EXPECT_EQ(owner % 2, rank() % 2) << "an element of the other half's array";
      }
    }
    EXPECT_EQ(static_cast<std::int64_t>(a(n - 1, 4)), encode<2>({n - 1, 4}, {n, 5}));
    copy(a, {{0, 0}, {n, 5}}, b, {{0, 0}, {n, 5}});
    EXPECT_TRUE(equal(a, b));
    const std::int64_t total = reduce(b, std::int64_t{0}, std::plus<>{});
    const auto cells = static_cast<std::int64_t>(n * 5);
    EXPECT_EQ(total, cells * (cells + 1) / 2);
    if (rank() % 2 == 0) {  // one more array, made and freed by this half only
      dist_array<int, 1> extra(half, {3}, {dist::block}, "even only");
      fill(extra, 4);
      EXPECT_EQ(static_cast<int>(extra[2]), 4);
    }
    // Halos within the half: periodic rows of width 1.
    dist_array<int, 1> ring(half, {2 * static_cast<std::size_t>(half.size())}, {dist::block},
                            halo<1>::uniform(1, true), "half ring");
    ring.transform_local([](const idx<1>& g, int) { return static_cast<int>(g[0]); });
    ring.halo_exchange();
    const auto padded = ring.local_with_halo();
    const std::size_t len = 2 * static_cast<std::size_t>(half.size());
    const std::size_t first = ring.global_index({0})[0];
    EXPECT_EQ(padded[0], static_cast<int>((first + len - 1) % len));
    EXPECT_EQ(padded[3], static_cast<int>((first + 2) % len));
  }
  barrier(world());
  EXPECT_EQ(heap_stats().used, heap_before.used) << "the blocks went back to the global heap";
  EXPECT_EQ(heap_stats().live_blocks, heap_before.live_blocks);
  // A block no member's heap can hold (the heap's cap is 64M): no_mem on every member of the
  // half, nothing left allocated.
  try {
    dist_array<double, 1> big(half, {std::size_t{1} << 27}, {dist::block}, "too big for a half");
    ADD_FAILURE() << "a block of 1 GiB / " << half.size() << " was allocated";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), error_class::no_mem);
    EXPECT_NE(std::string(e.what()).find("'too big for a half'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(heap_stats().used, heap_before.used);
  barrier(world());
}

TEST_F(DistArray, MovesKeepTheStorage) {
  dist_array<double, 1> a(world(), {17}, {dist::block}, "moved");
  a.transform_local(
      [](const std::array<std::size_t, 1>& g, double) { return 0.5 * static_cast<double>(g[0]); });
  barrier(world());
  dist_array<double, 1> b(std::move(a));
  EXPECT_EQ(static_cast<double>(b[16]), 8.0);
  dist_array<double, 1> c(world(), {3}, {dist::cyclic}, "replaced");
  c = std::move(b);  // frees c's blocks (collective), takes b's
  EXPECT_EQ(c.name(), "moved");
  EXPECT_EQ(static_cast<double>(c[5]), 2.5);
  expect_error(error_class::arg, "dist_array::get", [&] {
    double x = 0;
    b.get({{0}, {1}}, std::span<double>(&x, 1));  // NOLINT: moved-from on purpose
  });
  barrier(world());
}

TEST_F(DistArray, BadIndicesAndRegionsChangeNothing) {
  dist_array<int, 2> a(world(), {4, 5}, {dist::block, dist::cyclic}, "bad_input");
  a.for_each_local([](int& v) { v = 7; });
  barrier(world());
  const auto names_array = [](const oneside::error& e) {
    return std::string(e.what()).find("'bad_input'") != std::string::npos;
  };
  try {
    (void)a.ptr({4, 0});
    ADD_FAILURE() << "index (4, 0) accepted";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), error_class::arg);
    EXPECT_TRUE(names_call(e.what(), "dist_array::ptr")) << e.what();
    EXPECT_TRUE(names_array(e)) << e.what();
    EXPECT_NE(std::string(e.what()).find("(4, 0)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::string("rank ").append(std::to_string(rank()))),
              std::string::npos)
        << e.what();
  }
  expect_error(error_class::arg, "dist_array::ptr", [&] { a(0, 5) = 1; });
  std::vector<int> buf(6, -1);
  // Outside the extents (also by overflow of lo + extents), and a buffer of the wrong size.
  expect_error(error_class::arg, "dist_array::get", [&] { a.get({{3, 3}, {2, 3}}, buf); });
  expect_error(error_class::arg, "dist_array::get", [&] { a.get({{1, 1}, {2, SIZE_MAX}}, buf); });
  expect_error(error_class::arg, "dist_array::get", [&] { a.get({{0, 0}, {2, 2}}, buf); });
  expect_error(error_class::arg, "dist_array::put", [&] { a.put({{2, 0}, {3, 2}}, buf); });
  expect_error(error_class::arg, "dist_array::put", [&] { (void)a.rput({{0, 0}, {1, 5}}, buf); });
  for (const int v : buf) EXPECT_EQ(v, -1);
  barrier(world());
  for (const int v : a.local()) EXPECT_EQ(v, 7);
  barrier(world());
}

TEST_F(DistArray, BadConstructionRaisesOnEveryRankAndAllocatesNothing) {
  const heap_stats_t before = symmetric_heap_stats();
  const auto unchanged = [&] {
    const heap_stats_t now = symmetric_heap_stats();
    EXPECT_EQ(now.used, before.used);
    EXPECT_EQ(now.live_blocks, before.live_blocks);
  };
  // Extents that differ between ranks.
  if (size() > 1) {
    expect_error(error_class::arg, "dist_array", [&] {
      dist_array<int, 1> a(world(), {rank() == 0 ? 8U : 9U}, {dist::block}, "uneven");
    });
    unchanged();
    expect_error(error_class::arg, "dist_array", [&] {
      dist_array<int, 1> a(world(), {8}, {rank() == 0 ? dist::block : dist::cyclic}, "uneven");
    });
    unchanged();
    // Every dimension none over several ranks; a grid of the wrong size.
    expect_error(error_class::arg, "dist_array", [&] {
      dist_array<int, 2> a(world(), {4, 4}, {dist::none, dist::none}, "flat");
    });
  }
  expect_error(error_class::arg, "dist_array", [&] {
    dist_array<int, 2> a(world(), {4, 4}, {dist::block, dist::block}, {size(), 2}, "grid");
  });
  expect_error(error_class::arg, "dist_array",
               [&] { dist_array<int, 1> a(world(), {0}, {dist::block}, "empty"); });
  unchanged();
  // Blocks larger than a rank can hold: beyond the address space, and beyond the heap's
  // budget (64M); the message names the array and the rank.
  try {
    dist_array<double, 2> a(world(), {std::size_t{1} << 40, std::size_t{1} << 40},
                            {dist::block, dist::none}, "huge");
    ADD_FAILURE() << "a block of 2^80 / P elements was allocated";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), error_class::no_mem);
    EXPECT_NE(std::string(e.what()).find("'huge'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0 would hold"), std::string::npos) << e.what();
  }
  try {
    dist_array<double, 1> a(world(), {std::size_t{1} << 28}, {dist::block}, "large");
    ADD_FAILURE() << "a block beyond the budget was allocated";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), error_class::no_mem);
    EXPECT_NE(std::string(e.what()).find("'large'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0's block"), std::string::npos) << e.what();
  }
  unchanged();
  // And the heap still serves a good array.
  dist_array<int, 1> ok(world(), {5}, {dist::cyclic}, "after");
  EXPECT_EQ(ok.size(), 5U);
}

}  // namespace
}  // namespace oneside::test
