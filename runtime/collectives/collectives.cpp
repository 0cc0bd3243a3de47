// The collectives, on the step protocol of coll_engine.hpp. Node-scale algorithms: data
// moves through each member's staging slots in pieces of the slot size, so every message
// size pipelines; reductions fold operands in rank order, so every member computes bitwise
// the same result. Arguments are checked before anything moves.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/copy.hpp>

#include "runtime/check.hpp"
#include "runtime/reduce.hpp"
#include "team/team_impl.hpp"

namespace oneside {
namespace {

using detail::coll_engine;
using detail::team_impl;

std::byte* bytes_of(void* p) noexcept {
  return static_cast<std::byte*>(p);
}
const std::byte* bytes_of(const void* p) noexcept {
  return static_cast<const std::byte*>(p);
}

void check_count(count_t count, std::string_view call) {
  ONESIDE_CHECK(count >= 0, error_class::count, {.call = call},
                "count " + std::to_string(count) + " is negative");
}

void check_root(rank_t root, const team_impl& t, std::string_view call) {
  ONESIDE_CHECK(root >= 0 && root < t.size, error_class::rank, {.call = call, .target = root},
                "root " + std::to_string(root) + " is not a rank of the team [0, " +
                    std::to_string(t.size) + ")");
}

void check_buffer(const void* p, count_t count, std::string_view call, std::string_view which) {
  ONESIDE_CHECK(p != nullptr || count == 0, error_class::arg, {.call = call},
                std::string(which) + " buffer is null");
}

// Bytes per element for data movement: the element's extent, for types laid out
// contiguously.
std::size_t element_bytes(const datatype& type, std::string_view call) {
  ONESIDE_CHECK(
      type.is_predefined() || type.is_contiguous(), error_class::type, {.call = call},
      "collectives take predefined or contiguous datatypes, not " + std::string(type.name()));
  return static_cast<std::size_t>(type.extent());
}

detail::reduce_fn check_reduction(const datatype& type, op o, std::string_view call) {
  ONESIDE_CHECK(type.is_predefined(), error_class::type, {.call = call, .rule = "COM-13"},
                "reductions take predefined datatypes, not " + std::string(type.name()));
  if (o == op::replace || o == op::no_op) {
    detail::raise(error_class::op, {.call = call, .rule = "COM-14"},
                  std::string(op_name(o)) + " is not allowed in collective reductions");
  }
  ONESIDE_CHECK(op_is_valid(o, type.basic(), op_use::collective), error_class::op,
                {.call = call, .rule = "COM-13"},
                std::string(op_name(o)) + " is not defined for " + std::string(type.name()));
  return detail::reduce_function(o, type.basic());
}

std::size_t checked_bytes(count_t count, std::size_t esz) {
  return static_cast<std::size_t>(count) * esz;
}

// Who reads a step (coll_engine::publish_to; matters in push mode): the members that want
// the result (everyone, or `root` only), or the members from `first` on. Each reads it all.
auto wanting(bool all, rank_t root) {
  return [all, root](rank_t q) -> std::optional<coll_engine::part> {
    if (all || q == root) return coll_engine::whole;
    return std::nullopt;
  };
}
auto from_member(rank_t first) {
  return [first](rank_t q) -> std::optional<coll_engine::part> {
    if (q >= first) return coll_engine::whole;
    return std::nullopt;
  };
}

// Elements per step of reductions: as many whole elements as fit a slot.
std::size_t elements_per_step(const coll_engine& e, std::size_t esz) {
  return std::max<std::size_t>(1, e.capacity() / esz);
}

// reduce/allreduce: every member publishes its piece; the result lands at `out` of the
// members that want it (root only, or everyone). For more than two members and large pieces,
// each member first reduces one block of the piece (in parallel), then the blocks are shared.
void reduce_common(team_impl& t, const void* in, void* out, std::size_t count, std::size_t esz,
                   detail::reduce_fn fn, rank_t root, bool all) {
  coll_engine& e = *t.coll;
  const int n = t.size;
  const std::size_t per_step = elements_per_step(e, esz);
  const bool wants = all || t.rank == root;
  if (n == 1) {
    if (in != out && count > 0) std::memmove(out, in, count * esz);
    return;
  }
  for (std::size_t i0 = 0; i0 < count; i0 += per_step) {
    const std::size_t k = std::min(per_step, count - i0);
    const std::byte* src = bytes_of(in) + i0 * esz;
    std::byte* dst = wants ? bytes_of(out) + i0 * esz : nullptr;
    const std::uint64_t s = e.begin_step();
    const bool parallel = n > 2 && k * esz >= 16384;
    // Block b of the piece is [k*b/n, k*(b+1)/n); member b reduces it into its next slot.
    auto block_begin = [&](rank_t b) {
      return k * static_cast<std::size_t>(b) / static_cast<std::size_t>(n);
    };
    if (!parallel) {
      e.publish_to(s, src, k * esz, wanting(all, root));
      if (wants) {
        oneside::detail::copy_bytes(dst, e.peer_slot(0, s, k * esz), k * esz);
        for (rank_t q = 1; q < n; ++q) fn(dst, e.peer_slot(q, s, k * esz), k);
      }
      e.finish(s);
      continue;
    }
    // Everyone reads its block of everyone's piece.
    e.publish_to(s, src, k * esz, [&](rank_t q) -> std::optional<coll_engine::part> {
      return coll_engine::part{block_begin(q) * esz, (block_begin(q + 1) - block_begin(q)) * esz};
    });
    const std::size_t b0 = block_begin(t.rank);
    const std::size_t b1 = block_begin(t.rank + 1);
    const std::uint64_t s2 = e.begin_step();
    std::byte* mine = e.acquire_slot(s2, (b1 - b0) * esz);
    oneside::detail::copy_bytes(mine, e.peer_slot(0, s, k * esz) + b0 * esz, (b1 - b0) * esz);
    for (rank_t q = 1; q < n; ++q) fn(mine, e.peer_slot(q, s, k * esz) + b0 * esz, b1 - b0);
    e.finish(s);
    e.publish_to(s2, wanting(all, root));
    if (wants) {
      for (rank_t q = 0; q < n; ++q) {
        const std::size_t q0 = block_begin(q);
        const std::size_t q1 = block_begin(q + 1);
        oneside::detail::copy_bytes(dst + q0 * esz, e.peer_slot(q, s2, (q1 - q0) * esz),
                                    (q1 - q0) * esz);
      }
    }
    e.finish(s2);
  }
}

// scan/exscan: every member publishes its piece; member r folds members 0..r (or 0..r-1).
void scan_common(team_impl& t, const void* in, void* out, std::size_t count, std::size_t esz,
                 detail::reduce_fn fn, bool exclusive) {
  coll_engine& e = *t.coll;
  const std::size_t per_step = elements_per_step(e, esz);
  const rank_t last = exclusive ? t.rank - 1 : t.rank;
  if (t.size == 1) {
    if (!exclusive && in != out && count > 0) std::memmove(out, in, count * esz);
    return;
  }
  for (std::size_t i0 = 0; i0 < count; i0 += per_step) {
    const std::size_t k = std::min(per_step, count - i0);
    const std::uint64_t s = e.begin_step();
    // Member q reads members 0..q (exclusive: 0..q-1).
    e.publish_to(s, bytes_of(in) + i0 * esz, k * esz, from_member(exclusive ? t.rank + 1 : t.rank));
    if (last >= 0) {
      std::byte* dst = bytes_of(out) + i0 * esz;
      oneside::detail::copy_bytes(dst, e.peer_slot(0, s, k * esz), k * esz);
      for (rank_t q = 1; q <= last; ++q) fn(dst, e.peer_slot(q, s, k * esz), k);
    }
    e.finish(s);
  }
}

// Every member publishes its own `bytes` (equal on all, or given per member by `counts`);
// `root` (or every member, for all_members) copies member q's bytes to out + displs(q).
constexpr rank_t all_members = -1;
template <class Size, class Displ>
void gather_common(team_impl& t, const void* in, std::size_t my_bytes, void* out, rank_t root,
                   Size bytes_of_member, Displ displ_of_member, std::size_t max_bytes) {
  coll_engine& e = *t.coll;
  const bool wants = root == all_members || t.rank == root;
  const std::size_t cap = e.capacity();
  if (wants) {
    std::byte* own = bytes_of(out) + displ_of_member(t.rank);
    if (own != bytes_of(in) && my_bytes > 0) std::memmove(own, in, my_bytes);
  }
  if (t.size == 1) return;
  for (std::size_t off = 0; off < max_bytes; off += cap) {
    const std::uint64_t s = e.begin_step();
    if (off < my_bytes) {
      e.publish_to(s, bytes_of(in) + off, std::min(cap, my_bytes - off),
                   wanting(root == all_members, root));
    }
    if (wants) {
      for (rank_t q = 0; q < t.size; ++q) {
        const std::size_t qb = bytes_of_member(q);
        if (q == t.rank || off >= qb) continue;
        const std::size_t len = std::min(cap, qb - off);
        oneside::detail::copy_bytes(bytes_of(out) + displ_of_member(q) + off,
                                    e.peer_slot(q, s, len), len);
      }
    }
    e.finish(s);
  }
}

std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

// Checks the per-member counts and displacements of a v-collective; returns the largest count.
count_t check_counts(std::span<const count_t> counts, std::span<const count_t> displs,
                     const team_impl& t, std::string_view call) {
  ONESIDE_CHECK(counts.size() == static_cast<std::size_t>(t.size) &&
                    displs.size() == static_cast<std::size_t>(t.size),
                error_class::count, {.call = call},
                "counts and displs need one entry per member (" + std::to_string(t.size) + ")");
  count_t most = 0;
  for (std::size_t q = 0; q < counts.size(); ++q) {
    check_count(counts[q], call);
    check_count(displs[q], call);
    most = std::max(most, counts[q]);
  }
  return most;
}

}  // namespace

void barrier(const team& t) {
  team_impl& ti = detail::team_of(t, "barrier");
  const auto waiting = detail::collective_scope("barrier", ti);
  ti.coll->barrier();
}

void broadcast(const team& t, void* buf, count_t count, const datatype& type, rank_t root) {
  team_impl& ti = detail::team_of(t, "broadcast");
  const auto waiting = detail::collective_scope("broadcast", ti, root);
  check_count(count, "broadcast");
  check_root(root, ti, "broadcast");
  check_buffer(buf, count, "broadcast", "the");
  const std::size_t bytes = checked_bytes(count, element_bytes(type, "broadcast"));
  coll_engine& e = *ti.coll;
  if (ti.size == 1) return;
  for (std::size_t off = 0; off < bytes; off += e.capacity()) {
    const std::size_t len = std::min(e.capacity(), bytes - off);
    const std::uint64_t s = e.begin_step();
    if (ti.rank == root) {
      e.publish(s, bytes_of(buf) + off, len);
    } else {
      oneside::detail::copy_bytes(bytes_of(buf) + off, e.peer_slot(root, s, len), len);
    }
    e.finish(s);
  }
}

void reduce(const team& t, const void* in, void* out, count_t count, const datatype& type, op o,
            rank_t root) {
  team_impl& ti = detail::team_of(t, "reduce");
  const auto waiting = detail::collective_scope("reduce", ti, root);
  check_count(count, "reduce");
  check_root(root, ti, "reduce");
  const detail::reduce_fn fn = check_reduction(type, o, "reduce");
  check_buffer(in, count, "reduce", "the input");
  if (ti.rank == root) check_buffer(out, count, "reduce", "the output");
  reduce_common(ti, in, out, static_cast<std::size_t>(count), element_bytes(type, "reduce"), fn,
                root, false);
}

void allreduce(const team& t, const void* in, void* out, count_t count, const datatype& type,
               op o) {
  team_impl& ti = detail::team_of(t, "allreduce");
  const auto waiting = detail::collective_scope("allreduce", ti);
  check_count(count, "allreduce");
  const detail::reduce_fn fn = check_reduction(type, o, "allreduce");
  check_buffer(in, count, "allreduce", "the input");
  check_buffer(out, count, "allreduce", "the output");
  reduce_common(ti, in, out, static_cast<std::size_t>(count), element_bytes(type, "allreduce"), fn,
                0, true);
}

void scan(const team& t, const void* in, void* out, count_t count, const datatype& type, op o) {
  team_impl& ti = detail::team_of(t, "scan");
  const auto waiting = detail::collective_scope("scan", ti);
  check_count(count, "scan");
  const detail::reduce_fn fn = check_reduction(type, o, "scan");
  check_buffer(in, count, "scan", "the input");
  check_buffer(out, count, "scan", "the output");
  scan_common(ti, in, out, static_cast<std::size_t>(count), element_bytes(type, "scan"), fn, false);
}

void exscan(const team& t, const void* in, void* out, count_t count, const datatype& type, op o) {
  team_impl& ti = detail::team_of(t, "exscan");
  const auto waiting = detail::collective_scope("exscan", ti);
  check_count(count, "exscan");
  const detail::reduce_fn fn = check_reduction(type, o, "exscan");
  check_buffer(in, count, "exscan", "the input");
  if (ti.rank > 0) check_buffer(out, count, "exscan", "the output");
  scan_common(ti, in, out, static_cast<std::size_t>(count), element_bytes(type, "exscan"), fn,
              true);
}

void gather(const team& t, const void* in, count_t count, const datatype& type, void* out,
            rank_t root) {
  team_impl& ti = detail::team_of(t, "gather");
  const auto waiting = detail::collective_scope("gather", ti, root);
  check_count(count, "gather");
  check_root(root, ti, "gather");
  check_buffer(in, count, "gather", "the input");
  if (ti.rank == root) check_buffer(out, count, "gather", "the output");
  const std::size_t b = checked_bytes(count, element_bytes(type, "gather"));
  gather_common(
      ti, in, b, out, root, [b](rank_t) { return b; },
      [b](rank_t q) { return static_cast<std::size_t>(q) * b; }, b);
}

void gatherv(const team& t, const void* in, count_t count, const datatype& type, void* out,
             std::span<const count_t> counts, std::span<const count_t> displs, rank_t root) {
  team_impl& ti = detail::team_of(t, "gatherv");
  const auto waiting = detail::collective_scope("gatherv", ti, root);
  check_count(count, "gatherv");
  check_root(root, ti, "gatherv");
  check_buffer(in, count, "gatherv", "the input");
  const std::size_t esz = element_bytes(type, "gatherv");
  std::uint64_t steps = 0;
  if (ti.rank == root) {
    const count_t most = check_counts(counts, displs, ti, "gatherv");
    ONESIDE_CHECK(counts[static_cast<std::size_t>(root)] == count, error_class::count,
                  {.call = "gatherv"}, "the root's own count differs from counts[root]");
    check_buffer(out, most, "gatherv", "the output");
    steps = ceil_div(checked_bytes(most, esz), ti.coll->capacity());
  }
  // Everyone needs the number of steps; only the root knows the counts.
  broadcast(t, &steps, 1, datatype::of<std::uint64_t>(), root);
  const std::size_t mine = checked_bytes(count, esz);
  gather_common(
      ti, in, mine, out, root,
      [&](rank_t q) { return checked_bytes(counts[static_cast<std::size_t>(q)], esz); },
      [&](rank_t q) { return checked_bytes(displs[static_cast<std::size_t>(q)], esz); },
      static_cast<std::size_t>(steps) * ti.coll->capacity());
}

void allgather(const team& t, const void* in, count_t count, const datatype& type, void* out) {
  team_impl& ti = detail::team_of(t, "allgather");
  const auto waiting = detail::collective_scope("allgather", ti);
  check_count(count, "allgather");
  check_buffer(in, count, "allgather", "the input");
  check_buffer(out, count, "allgather", "the output");
  const std::size_t b = checked_bytes(count, element_bytes(type, "allgather"));
  gather_common(
      ti, in, b, out, all_members, [b](rank_t) { return b; },
      [b](rank_t q) { return static_cast<std::size_t>(q) * b; }, b);
}

void allgatherv(const team& t, const void* in, count_t count, const datatype& type, void* out,
                std::span<const count_t> counts, std::span<const count_t> displs) {
  team_impl& ti = detail::team_of(t, "allgatherv");
  const auto waiting = detail::collective_scope("allgatherv", ti);
  check_count(count, "allgatherv");
  check_buffer(in, count, "allgatherv", "the input");
  const count_t most = check_counts(counts, displs, ti, "allgatherv");
  ONESIDE_CHECK(counts[static_cast<std::size_t>(ti.rank)] == count, error_class::count,
                {.call = "allgatherv"}, "this member's count differs from counts[rank]");
  check_buffer(out, most, "allgatherv", "the output");
  const std::size_t esz = element_bytes(type, "allgatherv");
  gather_common(
      ti, in, checked_bytes(count, esz), out, all_members,
      [&](rank_t q) { return checked_bytes(counts[static_cast<std::size_t>(q)], esz); },
      [&](rank_t q) { return checked_bytes(displs[static_cast<std::size_t>(q)], esz); },
      checked_bytes(most, esz));
}

namespace {

// alltoall(v): in each step every member publishes, for each destination j, the next piece
// (at most capacity/size bytes) of its block for j at offset j*piece of its slot.
template <class SendBytes, class SendDispl, class RecvBytes, class RecvDispl>
void alltoall_common(team_impl& t, const void* in, void* out, SendBytes sbytes, SendDispl sdispl,
                     RecvBytes rbytes, RecvDispl rdispl, std::size_t max_bytes) {
  coll_engine& e = *t.coll;
  const auto n = static_cast<std::size_t>(t.size);
  const std::size_t piece = e.capacity() / n;
  ONESIDE_CHECK(piece > 0, error_class::intern, {.call = "alltoall"},
                "the collective slot is smaller than the team");
  // Own block: directly (copied first, so in-place use works: the input is published from a
  // copy below only for the others).
  std::vector<std::byte> in_copy;
  const std::byte* src = bytes_of(in);
  if (in == out) {
    std::size_t total = 0;
    for (rank_t j = 0; j < t.size; ++j) total = std::max(total, sdispl(j) + sbytes(j));
    in_copy.assign(src, src + total);
    src = in_copy.data();
  }
  if (sbytes(t.rank) > 0) {
    std::memmove(bytes_of(out) + rdispl(t.rank), src + sdispl(t.rank), sbytes(t.rank));
  }
  if (t.size == 1) return;
  for (std::size_t off = 0; off < max_bytes; off += piece) {
    const std::uint64_t s = e.begin_step();
    // The slot holds one piece per destination: it is always a full-capacity payload.
    std::byte* slot = e.acquire_slot(s, e.capacity());
    for (rank_t j = 0; j < t.size; ++j) {
      const std::size_t sb = sbytes(j);
      if (j == t.rank || off >= sb) continue;
      oneside::detail::copy_bytes(slot + static_cast<std::size_t>(j) * piece, src + sdispl(j) + off,
                                  std::min(piece, sb - off));
    }
    // Destination j reads only its piece, and only while its block lasts.
    e.publish_to(s, [&](rank_t j) -> std::optional<coll_engine::part> {
      const std::size_t sb = sbytes(j);
      if (off >= sb) return std::nullopt;
      return coll_engine::part{static_cast<std::size_t>(j) * piece, std::min(piece, sb - off)};
    });
    for (rank_t p = 0; p < t.size; ++p) {
      const std::size_t rb = rbytes(p);
      if (p == t.rank || off >= rb) continue;
      oneside::detail::copy_bytes(
          bytes_of(out) + rdispl(p) + off,
          e.peer_slot(p, s, e.capacity()) + static_cast<std::size_t>(t.rank) * piece,
          std::min(piece, rb - off));
    }
    e.finish(s);
  }
}

}  // namespace

void alltoall(const team& t, const void* in, void* out, count_t count, const datatype& type) {
  team_impl& ti = detail::team_of(t, "alltoall");
  const auto waiting = detail::collective_scope("alltoall", ti);
  check_count(count, "alltoall");
  check_buffer(in, count, "alltoall", "the input");
  check_buffer(out, count, "alltoall", "the output");
  const std::size_t b = checked_bytes(count, element_bytes(type, "alltoall"));
  auto bytes = [b](rank_t) { return b; };
  auto displ = [b](rank_t j) { return static_cast<std::size_t>(j) * b; };
  alltoall_common(ti, in, out, bytes, displ, bytes, displ, b);
}

void alltoallv(const team& t, const void* in, std::span<const count_t> send_counts,
               std::span<const count_t> send_displs, void* out,
               std::span<const count_t> recv_counts, std::span<const count_t> recv_displs,
               const datatype& type) {
  team_impl& ti = detail::team_of(t, "alltoallv");
  const auto waiting = detail::collective_scope("alltoallv", ti);
  const auto n = static_cast<std::size_t>(ti.size);
  ONESIDE_CHECK(send_counts.size() == n && send_displs.size() == n && recv_counts.size() == n &&
                    recv_displs.size() == n,
                error_class::count, {.call = "alltoallv"},
                "counts and displs need one entry per member (" + std::to_string(n) + ")");
  count_t most_sent = 0;
  count_t most_received = 0;
  for (std::size_t j = 0; j < n; ++j) {
    for (count_t c : {send_counts[j], send_displs[j], recv_counts[j], recv_displs[j]}) {
      check_count(c, "alltoallv");
    }
    most_sent = std::max(most_sent, send_counts[j]);
    most_received = std::max(most_received, recv_counts[j]);
  }
  const count_t most = std::max(most_sent, most_received);
  ONESIDE_CHECK(send_counts[static_cast<std::size_t>(ti.rank)] ==
                    recv_counts[static_cast<std::size_t>(ti.rank)],
                error_class::count, {.call = "alltoallv"},
                "what this member sends to itself differs from what it receives from itself");
  // A member that sends nothing (or receives nothing) may pass a null buffer for that side.
  check_buffer(in, most_sent, "alltoallv", "the input");
  check_buffer(out, most_received, "alltoallv", "the output");
  const std::size_t esz = element_bytes(type, "alltoallv");
  // Every member must run the same number of steps: agree on the largest block.
  count_t global_most = 0;
  allreduce(t, &most, &global_most, 1, datatype::of<count_t>(), op::max);
  auto at = [esz](std::span<const count_t> v) {
    return [v, esz](rank_t j) { return checked_bytes(v[static_cast<std::size_t>(j)], esz); };
  };
  alltoall_common(ti, in, out, at(send_counts), at(send_displs), at(recv_counts), at(recv_displs),
                  checked_bytes(global_most, esz));
}

}  // namespace oneside
