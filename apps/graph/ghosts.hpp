// The ghosts of a rank's rows: the other ranks' vertices its arcs name, numbered 0, 1, … in
// vertex order, so per-ghost state (a value fetched from the owner, a contribution combined
// before it travels) lives in a plain vector beside the rows' own state. Used by the SSSP
// validation, PageRank and connected components (apps/graph).
//
// The set is a bitmap over every vertex with a running count per 64-bit word, so the index of a
// ghost is one popcount (N/8 + N/16 bytes: 24 MiB at scale 26). slots() gives every arc the
// index of its target in [local rows | ghosts], the form the hot loops use (4 bytes per arc).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
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

// Bulk exchanges of per-vertex values between the owners of vertices and the ranks that have
// them as ghosts, by one rput per rank pair (oneside/pgas/communication.hpp) into the
// receiver's segment of an area, a dist_array<T, 1> of one block per rank; which rows each
// rank's ghosts are is exchanged once, at construction (collective over `t`).
//   pull: every owner sends each holder the values of the rows it has as ghosts;
//   push: every holder sends each owner a value per ghost, the owner combines them.
// Each call is collective and ends with a barrier (every value is in place). The area has two
// halves used in turn, so a rank that returned from a call and starts the next one does not
// overwrite values another rank is still reading from the previous one.
template <class T>
class ghost_exchange {
 public:
  ghost_exchange(const team& t, const dist_csr& c, const ghost_set& gs)
      : t_(t),
        plan_(plan_of(t, c, gs)),
        area_(t, {static_cast<std::size_t>(t.size()) * 2 * plan_.block}, {dist::block},
              "ghost_exchange.area") {
    const std::uint64_t mine =
        area_.ptr({static_cast<std::size_t>(t.rank()) * 2 * plan_.block}).address();
    const std::vector<std::uint64_t> bases = allgather(t, mine);
    const auto ranks = static_cast<std::size_t>(t.size());
    std::vector<count_t> at_holder(ranks);  // where my values land in each holder's area
    alltoall(t, plan_.ghost_displs, at_holder);
    std::vector<count_t> at_owner(ranks);  // and in each owner's
    alltoall(t, plan_.serve_displs, at_owner);
    pull_to_.resize(ranks);
    push_to_.resize(ranks);
    for (std::size_t r = 0; r < ranks; ++r) {
      pull_to_[r] = bases[r] + static_cast<std::uint64_t>(at_holder[r]) * sizeof(T);
      push_to_[r] = bases[r] + static_cast<std::uint64_t>(at_owner[r]) * sizeof(T);
    }
    served_.resize(plan_.serve_rows.size());
  }

  std::size_t ghosts() const noexcept { return plan_.ghosts; }
  // Values this rank serves per pull (sends per push to owners: ghosts()).
  std::size_t served() const noexcept { return plan_.serve_rows.size(); }

  // Owners → holders: `rows` holds this rank's value per local row; on return `ghosts` (one
  // per ghost, in ghost order) holds every ghost's value from its owner.
  void pull(const T* rows, T* ghosts) {
    for (std::size_t k = 0; k < served_.size(); ++k) served_[k] = rows[plan_.serve_rows[k]];
    const T* area = send(served_.data(), plan_.serve_counts, plan_.serve_displs, pull_to_);
    std::copy(area, area + plan_.ghosts, ghosts);
  }

  // Holders → owners: `ghosts` holds this rank's value per ghost; on return `combine(row,
  // value)` has run here for every value another rank sent for one of this rank's rows.
  template <class Combine>
  void push(const T* ghosts, Combine&& combine) {
    const T* area = send(ghosts, plan_.ghost_counts, plan_.ghost_displs, push_to_);
    for (std::size_t k = 0; k < plan_.serve_rows.size(); ++k) combine(plan_.serve_rows[k], area[k]);
  }

 private:
  // This rank's ghosts of owner o are ghosts [ghost_displs[o], + ghost_counts[o]); it serves
  // rank s rows serve_rows[serve_displs[s] + k], k < serve_counts[s], s's ghosts of it in order.
  struct plan {
    std::vector<count_t> ghost_counts;
    std::vector<count_t> ghost_displs;
    std::vector<count_t> serve_counts;
    std::vector<count_t> serve_displs;
    std::vector<std::uint32_t> serve_rows;
    std::size_t ghosts = 0;
    std::size_t block = 1;  // every rank's half-area: the largest ghost or serve count
  };

  static plan plan_of(const team& t, const dist_csr& c, const ghost_set& gs) {
    const auto ranks = static_cast<std::size_t>(t.size());
    plan p;
    p.ghosts = gs.size();
    p.ghost_counts.assign(ranks, 0);
    std::vector<std::uint32_t> rows_at_owner;
    rows_at_owner.reserve(gs.size());
    for (const vertex_t v : gs.vertices()) {
      ++p.ghost_counts[static_cast<std::size_t>(c.partition.owner(v))];
      rows_at_owner.push_back(static_cast<std::uint32_t>(c.partition.local(v)));
    }
    p.ghost_displs.assign(ranks, 0);
    std::exclusive_scan(p.ghost_counts.begin(), p.ghost_counts.end(), p.ghost_displs.begin(),
                        count_t{0});
    p.serve_counts.assign(ranks, 0);
    alltoall(t, p.ghost_counts, p.serve_counts);
    p.serve_displs.assign(ranks, 0);
    std::exclusive_scan(p.serve_counts.begin(), p.serve_counts.end(), p.serve_displs.begin(),
                        count_t{0});
    p.serve_rows.resize(static_cast<std::size_t>(p.serve_displs.back() + p.serve_counts.back()));
    alltoallv(t, rows_at_owner, p.ghost_counts, p.ghost_displs, p.serve_rows, p.serve_counts,
              p.serve_displs);
    const std::uint64_t need = std::max<std::uint64_t>(gs.size(), p.serve_rows.size());
    p.block = std::max<std::size_t>(1, allreduce(t, need, op::max));
    return p;
  }

  // Puts segment r of `values` (counts, displs) to rank r at to[r] in the current half; returns
  // this rank's current half once every rank's puts arrived.
  const T* send(const T* values, const std::vector<count_t>& counts,
                const std::vector<count_t>& displs, const std::vector<std::uint64_t>& to) {
    const std::uint64_t half = half_ * plan_.block * sizeof(T);
    for (std::size_t r = 0; r < counts.size(); ++r) {
      if (counts[r] == 0) continue;
      puts_.push_back(
          rput(std::span<const T>(values + displs[r], static_cast<std::size_t>(counts[r])),
               global_ptr<T>(static_cast<rank_t>(r), static_cast<std::uintptr_t>(to[r] + half))));
    }
    for (const future<>& f : puts_) f.wait();
    puts_.clear();
    barrier(t_);
    const T* area = area_.local().data() + half_ * plan_.block;
    half_ = 1 - half_;
    return area;
  }

  const team& t_;
  plan plan_;
  dist_array<T, 1> area_;
  std::vector<std::uint64_t> pull_to_;  // per rank: my segment's address in its area (pull)
  std::vector<std::uint64_t> push_to_;  // (push)
  std::vector<T> served_;
  std::vector<future<>> puts_;
  std::size_t half_ = 0;
};

}  // namespace oneside::apps::graph
