// The Graph500 (version 3) Kronecker graph generator, shared by the graph apps, their peers in
// bench/peers and the tests. Plain C++: no oneside, so the single-thread baselines use it too.
//
// Graph500's definition: 2^scale vertices and edgefactor·2^scale undirected edges; each edge
// picks its endpoints' bits one level at a time, from the most significant, falling into the
// quadrant (0,0) with probability A = 0.57, (0,1) with B = 0.19, (1,0) with C = 0.19 and (1,1)
// with D = 0.05; then the vertex labels are permuted at random so that a vertex's number says
// nothing about its degree. Self-loops and duplicate edges stay in the list (kernel 1 may drop
// them; the validation must accept them).
//
// Counter-based: edge e (0 ≤ e < edge_count) is a pure function of (seed, e), and so are its
// weight, the permutation and the search-key candidates. Whoever generates edge e — any rank of
// any rank count, or one thread — gets the same edge, so results do not depend on how the work
// was split. The random bits come from a keyed SplitMix64-style mix of the counter (two rounds
// of the MurmurHash3/SplitMix64 finalizer, which passes BigCrush as a counter-based generator).
//
// The labels' permutation is a bijection of [0, 2^scale): a keyed chain of invertible steps on
// scale-bit words (multiplication by an odd number, addition, xor with the word shifted right),
// applied four rounds; it is not a uniformly drawn permutation (neither is the reference's
// bit-scrambling), but it scatters the high-degree vertices (the small numbers before
// permutation) over the whole range, which is what the permutation is for.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oneside::apps::graph {

using vertex_t = std::int64_t;

// A vertex number as the CSR stores it (dist_graph.hpp): 32 bits, half the bytes the searches
// stream through, for graphs up to scale 32; 64 bits, to scale 40, when built with
// ONESIDE_GRAPH_WIDE_TARGETS (the CMake option of that name).
#ifdef ONESIDE_GRAPH_WIDE_TARGETS
using target_t = vertex_t;
inline constexpr int max_scale = 40;
#else
using target_t = std::uint32_t;
inline constexpr int max_scale = 32;
#endif
inline constexpr vertex_t max_target_vertices = vertex_t{1} << max_scale;

struct edge {
  vertex_t u = 0;
  vertex_t v = 0;
};

namespace detail {

// The SplitMix64 / MurmurHash3 64-bit finalizer: a bijection with full avalanche.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// 64 random bits for `counter` of the stream `key`.
constexpr std::uint64_t random_bits(std::uint64_t key, std::uint64_t counter) noexcept {
  return mix64(mix64(counter * 0x9e3779b97f4a7c15ULL + key) ^ key);
}

}  // namespace detail

// The streams of one graph: the same (scale, edgefactor, seed) gives the same graph everywhere.
class kronecker {
 public:
  // Graph500's initiator probabilities (D = 1 - A - B - C).
  static constexpr double a = 0.57;
  static constexpr double b = 0.19;
  static constexpr double c = 0.19;

  // scale in [1, 40]; edgefactor ≥ 1 (Graph500: 16).
  constexpr kronecker(int scale, int edgefactor, std::uint64_t seed) noexcept
      : scale_(scale),
        edgefactor_(edgefactor),
        edge_key_(detail::mix64(seed ^ 0x6a09e667f3bcc908ULL)),
        weight_key_(detail::mix64(seed ^ 0xbb67ae8584caa73bULL)),
        label_key_(detail::mix64(seed ^ 0x3c6ef372fe94f82bULL)),
        root_key_(detail::mix64(seed ^ 0xa54ff53a5f1d36f1ULL)) {}

  constexpr int scale() const noexcept { return scale_; }
  constexpr int edgefactor() const noexcept { return edgefactor_; }
  constexpr vertex_t vertex_count() const noexcept { return vertex_t{1} << scale_; }
  constexpr std::uint64_t edge_count() const noexcept {
    return static_cast<std::uint64_t>(edgefactor_) << scale_;
  }

  // Edge e of the list, its labels permuted.
  constexpr edge edge_at(std::uint64_t e) const noexcept {
    // 32 random bits per level, two levels per 64-bit draw.
    constexpr auto ab = static_cast<std::uint64_t>(a * 4294967296.0 + 0.5);
    constexpr auto abc = static_cast<std::uint64_t>((a + b) * 4294967296.0 + 0.5);
    constexpr auto abcd = static_cast<std::uint64_t>((a + b + c) * 4294967296.0 + 0.5);
    std::uint64_t u = 0;
    std::uint64_t v = 0;
    std::uint64_t bits = 0;
    for (int level = 0; level < scale_; ++level) {
      if (level % 2 == 0) {
        bits = detail::random_bits(edge_key_, e * 20 + static_cast<std::uint64_t>(level / 2));
      }
      const std::uint64_t r = level % 2 == 0 ? (bits & 0xffffffffULL) : (bits >> 32);
      // Quadrant: [0, A) → (0,0); [A, A+B) → (0,1); [A+B, A+B+C) → (1,0); the rest → (1,1).
      const std::uint64_t row = r >= abc ? 1 : 0;
      const std::uint64_t col = (r >= ab && r < abc) || r >= abcd ? 1 : 0;
      u = (u << 1) | row;
      v = (v << 1) | col;
    }
    return {permute(static_cast<vertex_t>(u)), permute(static_cast<vertex_t>(v))};
  }

  // Edge e's weight for SSSP: uniform in [0, 1) (Graph500 v3), 24 random bits.
  constexpr float weight_at(std::uint64_t e) const noexcept {
    return static_cast<float>(detail::random_bits(weight_key_, e) >> 40) * (1.0F / 16777216.0F);
  }

  // The i-th candidate search key: uniform over the vertices. The apps take the first 64
  // distinct candidates of degree ≥ 1 (not counting self-loops), in order.
  constexpr vertex_t root_candidate(std::uint64_t i) const noexcept {
    return static_cast<vertex_t>(detail::random_bits(root_key_, i) >> (64 - scale_));
  }

  // The label of the generated vertex x: a bijection of [0, 2^scale).
  constexpr vertex_t permute(vertex_t x) const noexcept {
    const std::uint64_t mask = (std::uint64_t{2} << (scale_ - 1)) - 1;
    const int shift = scale_ / 2 + 1;
    auto y = static_cast<std::uint64_t>(x);
    for (std::uint64_t round = 0; round < 4; ++round) {
      const std::uint64_t k = detail::mix64(label_key_ + round);
      y = (y * (k | 1)) & mask;
      y = (y + (k >> 32)) & mask;
      y ^= y >> shift;
    }
    return static_cast<vertex_t>(y);
  }

 private:
  int scale_;
  int edgefactor_;
  std::uint64_t edge_key_;
  std::uint64_t weight_key_;
  std::uint64_t label_key_;
  std::uint64_t root_key_;
};

// The share of [0, count) that part p of `parts` generates: contiguous, sizes differing by at
// most one.
struct index_range {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};
constexpr index_range share_of(std::uint64_t count, int parts, int p) noexcept {
  const auto n = static_cast<std::uint64_t>(parts);
  const auto i = static_cast<std::uint64_t>(p);
  return {count * i / n, count * (i + 1) / n};
}

}  // namespace oneside::apps::graph
