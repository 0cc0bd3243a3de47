// pattern<N> and dim_map (pattern.hpp, distribution.hpp) against a brute-force model: the
// model deals each dimension's indices out by walking them in order (a block of b to one
// rank, the next block to the next rank, wrapping), numbers each rank's indices in the order
// it receives them, and combines dimensions over a row-major grid; owner, local_index,
// global_index, local_extents and count_below must agree with it for every element, for
// N = 1, 2, 3, every distribution, odd extents, extents below the rank count (empty blocks),
// rank counts 1 … 8 and every grid of them. Also the grid choice and the checks.
#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/pgas/distribution.hpp>
#include <oneside/pgas/pattern.hpp>
#include <oneside/runtime/error.hpp>

namespace oneside::test {
namespace {

// One dimension, dealt out element by element.
struct dim_model {
  std::vector<std::size_t> owner;              // per global index: the grid coordinate
  std::vector<std::size_t> local;              // per global index: its local index
  std::vector<std::vector<std::size_t>> held;  // per coordinate: its global indices in order

  dim_model(std::size_t n, std::size_t procs, distribution d) : held(procs) {
    // The block each rule deals: block a ceil(n / P) chunk, cyclic 1, none everything.
    std::size_t b = 1;
    switch (d.how) {
      case distribution::kind::none:
        b = n;
        break;
      case distribution::kind::block:
        b = (n + procs - 1) / procs;
        break;
      case distribution::kind::cyclic:
        b = 1;
        break;
      case distribution::kind::block_cyclic:
        b = d.block_size;
        break;
    }
    std::size_t to = 0;
    std::size_t dealt = 0;  // of the current block
    for (std::size_t g = 0; g < n; ++g) {
      owner.push_back(to);
      local.push_back(held[to].size());
      held[to].push_back(g);
      if (++dealt == b) {
        dealt = 0;
        to = (to + 1) % procs;
      }
    }
  }
};

// Every grid of `ranks` over N dimensions (ordered factorizations), none dims fixed to 1.
template <std::size_t N>
void grids(int ranks, const std::array<distribution, N>& dists, std::size_t d,
           std::array<int, N>& g, std::vector<std::array<int, N>>& out) {
  if (d == N) {
    if (ranks == 1) out.push_back(g);
    return;
  }
  for (int p = 1; p <= ranks; ++p) {
    if (ranks % p != 0) continue;
    if (dists[d].how == distribution::kind::none && p != 1) continue;
    g[d] = p;
    grids(ranks / p, dists, d + 1, g, out);
  }
}

std::string describe(const distribution& d) {
  switch (d.how) {
    case distribution::kind::none:
      return "none";
    case distribution::kind::block:
      return "block";
    case distribution::kind::cyclic:
      return "cyclic";
    case distribution::kind::block_cyclic:
      return "block_cyclic(" + std::to_string(d.block_size) + ")";
  }
  return "?";
}

template <std::size_t N>
std::string describe(const std::array<std::size_t, N>& e, const std::array<distribution, N>& ds,
                     const std::array<int, N>& g) {
  std::string s;
  for (std::size_t d = 0; d < N; ++d) {
    s += std::to_string(e[d]) + ":" + describe(ds[d]) + "/" + std::to_string(g[d]) + " ";
  }
  return s;
}

// Checks one pattern against the model, element by element; returns the number of mismatches.
template <std::size_t N>
int check_against_model(const std::array<std::size_t, N>& ext,
                        const std::array<distribution, N>& ds, const std::array<int, N>& grid) {
  const int ranks = [&] {
    int r = 1;
    for (int p : grid) r *= p;
    return r;
  }();
  const pattern<N> pat(ext, ds, grid, ranks);
  std::vector<dim_model> models;
  for (std::size_t d = 0; d < N; ++d) {
    models.emplace_back(ext[d], static_cast<std::size_t>(grid[d]), ds[d]);
  }
  int bad = 0;
  const std::string what = describe(ext, ds, grid);
  // Local extents and sizes per rank.
  std::vector<std::size_t> counted(static_cast<std::size_t>(ranks), 0);
  for (rank_t r = 0; r < ranks; ++r) {
    const auto c = pat.coords(r);
    EXPECT_EQ(pat.rank_at(c), r) << what;
    for (std::size_t d = 0; d < N; ++d) {
      if (pat.local_extents(r)[d] != models[d].held[c[d]].size()) {
        ADD_FAILURE() << what << "rank " << r << " dim " << d << ": local extent "
                      << pat.local_extents(r)[d] << ", model " << models[d].held[c[d]].size();
        ++bad;
      }
    }
  }
  // Every element.
  std::array<std::size_t, N> g{};
  const std::size_t total = pat.size();
  for (std::size_t i = 0; i < total; ++i) {
    std::size_t rest = i;
    for (std::size_t d = N; d-- > 0;) {
      g[d] = rest % ext[d];
      rest /= ext[d];
    }
    std::array<std::size_t, N> coord{};
    std::array<std::size_t, N> local{};
    for (std::size_t d = 0; d < N; ++d) {
      coord[d] = models[d].owner[g[d]];
      local[d] = models[d].local[g[d]];
    }
    const rank_t owner = pat.rank_at(coord);
    if (pat.owner(g) != owner || pat.local_index(g) != local ||
        pat.global_index(owner, local) != g) {
      ADD_FAILURE() << what << "element " << i << ": owner " << pat.owner(g) << " (model " << owner
                    << ")";
      ++bad;
    }
    ++counted[static_cast<std::size_t>(owner)];
    EXPECT_TRUE(pat.contains(g));
  }
  for (rank_t r = 0; r < ranks; ++r) {
    EXPECT_EQ(pat.local_size(r), counted[static_cast<std::size_t>(r)]) << what << "rank " << r;
  }
  // count_below: the number of a coordinate's indices below every g.
  for (std::size_t d = 0; d < N; ++d) {
    const dim_map& m = pat.dim(d);
    for (std::size_t c = 0; c < m.procs; ++c) {
      std::size_t below = 0;
      for (std::size_t x = 0; x <= ext[d]; ++x) {
        if (m.count_below(c, x) != below) {
          ADD_FAILURE() << what << "count_below(" << c << ", " << x << ") = " << m.count_below(c, x)
                        << ", model " << below;
          ++bad;
        }
        if (x < ext[d] && models[d].owner[x] == c) ++below;
      }
    }
  }
  return bad;
}

const std::vector<distribution> all_dists = {dist::none,
                                             dist::block,
                                             dist::cyclic,
                                             dist::block_cyclic(1),
                                             dist::block_cyclic(2),
                                             dist::block_cyclic(3),
                                             dist::block_cyclic(16)};

TEST(Pattern, OneDimensionMatchesModel) {
  int patterns = 0;
  for (int ranks = 1; ranks <= 8; ++ranks) {
    for (const distribution& d : all_dists) {
      if (d.how == distribution::kind::none && ranks > 1) continue;
      for (std::size_t n : {1UL, 2UL, 3UL, 5UL, 7UL, 8UL, 9UL, 13UL, 17UL, 31UL, 64UL, 101UL}) {
        EXPECT_EQ(check_against_model<1>({n}, {d}, {ranks}), 0);
        ++patterns;
      }
    }
  }
  EXPECT_GT(patterns, 300);
}

TEST(Pattern, TwoDimensionsMatchModelOnEveryGrid) {
  int patterns = 0;
  for (int ranks = 1; ranks <= 8; ++ranks) {
    for (const distribution& a : all_dists) {
      for (const distribution& b : all_dists) {
        const std::array<distribution, 2> ds{a, b};
        std::vector<std::array<int, 2>> gs;
        std::array<int, 2> g{};
        grids<2>(ranks, ds, 0, g, gs);
        for (const auto& grid : gs) {
          for (const std::array<std::size_t, 2>& e :
               {std::array<std::size_t, 2>{1, 1}, {2, 7}, {7, 3}, {5, 9}, {13, 11}}) {
            EXPECT_EQ(check_against_model<2>(e, ds, grid), 0);
            ++patterns;
          }
        }
      }
    }
  }
  EXPECT_GT(patterns, 1000);
}

TEST(Pattern, ThreeDimensionsMatchModelOnEveryGrid) {
  const std::vector<distribution> some = {dist::none, dist::block, dist::cyclic,
                                          dist::block_cyclic(2)};
  int patterns = 0;
  for (int ranks = 1; ranks <= 8; ++ranks) {
    for (const distribution& a : some) {
      for (const distribution& b : some) {
        for (const distribution& c : some) {
          const std::array<distribution, 3> ds{a, b, c};
          std::vector<std::array<int, 3>> gs;
          std::array<int, 3> g{};
          grids<3>(ranks, ds, 0, g, gs);
          for (const auto& grid : gs) {
            for (const std::array<std::size_t, 3>& e :
                 {std::array<std::size_t, 3>{1, 2, 1}, {3, 5, 7}, {6, 1, 5}}) {
              EXPECT_EQ(check_against_model<3>(e, ds, grid), 0);
              ++patterns;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(patterns, 1000);
}

TEST(Pattern, ExtentsBelowTheRankCountLeaveEmptyBlocks) {
  const pattern<1> p({3}, {dist::block}, 8);
  EXPECT_EQ(p.local_extents(0)[0], 1U);
  EXPECT_EQ(p.local_extents(2)[0], 1U);
  EXPECT_EQ(p.local_extents(3)[0], 0U);
  EXPECT_EQ(p.local_size(7), 0U);
  // Blocks of ceil(5 / 4) = 2: 2, 2, 1, 0.
  const pattern<1> q({5}, {dist::block}, 4);
  EXPECT_EQ(q.local_size(2), 1U);
  EXPECT_EQ(q.local_size(3), 0U);
}

TEST(Pattern, SquareGridFactorsTheRanksOverDistributedDimensions) {
  using g2 = std::array<int, 2>;
  using g3 = std::array<int, 3>;
  const std::array<distribution, 2> bb{dist::block, dist::block};
  EXPECT_EQ(pattern<2>::square_grid(bb, 1), (g2{1, 1}));
  EXPECT_EQ(pattern<2>::square_grid(bb, 4), (g2{2, 2}));
  EXPECT_EQ(pattern<2>::square_grid(bb, 6), (g2{3, 2}));
  EXPECT_EQ(pattern<2>::square_grid(bb, 8), (g2{4, 2}));
  EXPECT_EQ(pattern<2>::square_grid(bb, 7), (g2{7, 1}));
  EXPECT_EQ(pattern<2>::square_grid({dist::none, dist::cyclic}, 6), (g2{1, 6}));
  EXPECT_EQ(pattern<2>::square_grid({dist::none, dist::none}, 2), (g2{0, 0}));
  EXPECT_EQ(pattern<3>::square_grid({dist::block, dist::block, dist::block}, 8), (g3{2, 2, 2}));
  EXPECT_EQ(pattern<3>::square_grid({dist::block, dist::none, dist::block}, 12), (g3{4, 1, 3}));
  for (int ranks = 1; ranks <= 64; ++ranks) {
    const g3 g = pattern<3>::square_grid({dist::block, dist::block, dist::block}, ranks);
    EXPECT_EQ(g[0] * g[1] * g[2], ranks);
    EXPECT_GE(g[0], g[1]);
    EXPECT_GE(g[1], g[2]);
  }
}

TEST(Pattern, IsConstexpr) {
  constexpr pattern<2> p({7, 5}, {dist::block, dist::cyclic}, {2, 2}, 4);
  static_assert(p.owner({6, 4}) == 2);  // row block 1 (of 4), column 4 mod 2 = 0
  static_assert(p.local_index({6, 4}) == std::array<std::size_t, 2>{2, 2});
  static_assert(p.global_index(2, {2, 2}) == std::array<std::size_t, 2>{6, 4});
  static_assert(p.local_extents(3) == std::array<std::size_t, 2>{3, 2});
  constexpr pattern<1> q({10}, {dist::block_cyclic(3)}, 2);
  static_assert(q.owner({9}) == 1 && q.local_index({9})[0] == 3 && q.local_size(0) == 6);
  SUCCEED();
}

TEST(Pattern, InvalidPatternsAreRejectedWithTheReason) {
  const auto rejects = [](auto make, const std::string& part) {
    try {
      make();
      ADD_FAILURE() << "accepted; expected: " << part;
    } catch (const oneside::error& e) {
      EXPECT_EQ(e.error_class(), error_class::arg);
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  rejects([] { return pattern<1>({0}, {dist::block}, 1); }, "extent 0");
  rejects([] { return pattern<1>({5}, {dist::block_cyclic(0)}, 2); }, "block_cyclic(0)");
  rejects([] { return pattern<2>({5, 5}, {dist::none, dist::block}, {2, 1}, 2); }, "dist::none");
  rejects([] { return pattern<2>({5, 5}, {dist::block, dist::block}, {2, 2}, 3); }, "grid 2 x 2");
  rejects([] { return pattern<1>({5}, {dist::none}, 3); }, "every dimension is dist::none");
  EXPECT_TRUE(pattern<2>::check({5, 5}, {dist::block, dist::cyclic}, {3, 1}, 3).empty());
}

}  // namespace
}  // namespace oneside::test
