// The ghosts of a rank's rows: the other ranks' vertices its arcs name, numbered 0, 1, … in
// vertex order, so per-ghost state (a value fetched from the owner, a contribution combined
// before it travels) lives in a plain vector beside the rows' own state. Used by the SSSP
// validation, PageRank and connected components (apps/graph).
//
// The set is a bitmap over every vertex with a running count per 64-bit word, so the index of a
// ghost is one popcount (N/8 + N/16 bytes: 24 MiB at scale 26). slots() gives every arc the
// index of its target in [local rows | ghosts], the form the hot loops use (4 bytes per arc).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include <oneside/oneside.hpp>

#include "dist_graph.hpp"

namespace oneside::apps::graph {

class ghost_set {
 public:
  explicit ghost_set(const dist_csr& c)
      : first_(c.first),
        end_(c.first + c.local_rows()),
        bits_((static_cast<std::size_t>(c.partition.vertex_count()) + 63) / 64, 0) {
    for (const vertex_t v : c.targets) {
      if (v < first_ || v >= end_) bits_[static_cast<std::size_t>(v) / 64] |= bit(v);
    }
    before_.assign(bits_.size(), 0);
    std::uint32_t count = 0;
    for (std::size_t w = 0; w < bits_.size(); ++w) {
      before_[w] = count;
      count += static_cast<std::uint32_t>(std::popcount(bits_[w]));
    }
    vertices_.reserve(count);
    for (std::size_t w = 0; w < bits_.size(); ++w) {
      for (std::uint64_t b = bits_[w]; b != 0; b &= b - 1) {
        vertices_.push_back(
            static_cast<vertex_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(b))));
      }
    }
  }

  std::size_t size() const noexcept { return vertices_.size(); }
  // The ghosts in increasing order (so grouped by owner, in the owners' order).
  const std::vector<vertex_t>& vertices() const noexcept { return vertices_; }
  // The index of ghost `v` (a vertex some arc of this rank names, of another rank).
  std::uint32_t index(vertex_t v) const noexcept {
    const auto w = static_cast<std::size_t>(v) / 64;
    return before_[w] + static_cast<std::uint32_t>(std::popcount(bits_[w] & (bit(v) - 1)));
  }

  // Every arc's target as an index into [local rows | ghosts]: local target l → l, ghost g →
  // local_rows + index(g).
  std::vector<std::uint32_t> slots(const dist_csr& c) const {
    std::vector<std::uint32_t> s(c.targets.size());
    const auto rows = static_cast<std::uint32_t>(c.local_rows());
    for (std::size_t i = 0; i < s.size(); ++i) {
      const vertex_t v = c.targets[i];
      s[i] = v >= first_ && v < end_ ? static_cast<std::uint32_t>(v - first_) : rows + index(v);
    }
    return s;
  }

 private:
  static std::uint64_t bit(vertex_t v) noexcept { return std::uint64_t{1} << (v % 64); }

  vertex_t first_;
  vertex_t end_;
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint32_t> before_;
  std::vector<vertex_t> vertices_;
};

// Collective over `t`: the values of the ghosts of `gs`, in ghost order, each from its owner's
// `local` (one value per local row, as every rank passes): one alltoallv of the wanted vertices
// and one of the values back.
template <class T>
std::vector<T> fetch_ghosts(const team& t, const dist_csr& c, const ghost_set& gs,
                            const std::vector<T>& local) {
  const auto ranks = static_cast<std::size_t>(t.size());
  std::vector<count_t> want_counts(ranks, 0);
  for (const vertex_t v : gs.vertices())
    ++want_counts[static_cast<std::size_t>(c.partition.owner(v))];
  std::vector<count_t> want_displs(ranks, 0);
  std::exclusive_scan(want_counts.begin(), want_counts.end(), want_displs.begin(), count_t{0});
  std::vector<count_t> ask_counts(ranks, 0);
  alltoall(t, want_counts, ask_counts);
  std::vector<count_t> ask_displs(ranks, 0);
  std::exclusive_scan(ask_counts.begin(), ask_counts.end(), ask_displs.begin(), count_t{0});
  std::vector<vertex_t> asked(static_cast<std::size_t>(ask_displs.back() + ask_counts.back()));
  alltoallv(t, gs.vertices(), want_counts, want_displs, asked, ask_counts, ask_displs);
  std::vector<T> answers(asked.size());
  for (std::size_t i = 0; i < asked.size(); ++i) {
    answers[i] = local[static_cast<std::size_t>(asked[i] - c.first)];
  }
  std::vector<T> values(gs.size());
  alltoallv(t, answers, ask_counts, ask_displs, values, want_counts, want_displs);
  return values;
}

// Collective over `t`: a pointer to each ghost's element of `a` (one element per vertex,
// dist::block, so beside the rows): where aggregated updates to a ghost go.
template <class T>
std::vector<global_ptr<T>> ghost_pointers(const team& t, const dist_csr& c, const ghost_set& gs,
                                          dist_array<T, 1>& a) {
  const std::uint64_t mine =
      c.local_rows() > 0 ? a.ptr({static_cast<std::size_t>(c.first)}).address() : 0;
  const std::vector<std::uint64_t> bases = allgather(t, mine);
  std::vector<global_ptr<T>> ptrs;
  ptrs.reserve(gs.size());
  for (const vertex_t v : gs.vertices()) {
    const rank_t o = c.partition.owner(v);
    ptrs.emplace_back(o, static_cast<std::uintptr_t>(
                             bases[static_cast<std::size_t>(o)] +
                             static_cast<std::uint64_t>(c.partition.local(v)) * sizeof(T)));
  }
  return ptrs;
}

}  // namespace oneside::apps::graph
