// Collectives over a team: barrier, broadcast, reduce, allreduce, gather(v), allgather(v),
// alltoall(v), scan and exscan, for every predefined datatype and reduction op with the
// spec's type rules (COM-13).
//
// Every member of the team calls the same collectives in the same order, with matching
// counts and datatypes (as in MPI). All calls block until this rank's part is done: buffers
// may be reused when the call returns. Results of reductions are identical on every rank
// (operands are combined in rank order, so floating-point results do not depend on timing).
//
// Errors (thrown before any data moves): error(comm) for a null team, error(rank) for a root
// outside the team, error(count) for a negative count or counts that do not fit, error(op)
// for an op not defined for the datatype (e.g. band on double, replace in a collective),
// error(type) for a datatype that is not predefined in a reduction.
//
// In place: for reduce, allreduce, scan and exscan pass the same buffer as input and output;
// for gather(v) and allgather(v) the input may already sit at this rank's place in the output.
#pragma once

#include <concepts>
#include <ranges>
#include <span>
#include <vector>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/op.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

// ---- untyped forms (counts in elements of `type`) --------------------------------------

void barrier(const team& t);
void broadcast(const team& t, void* buf, count_t count, const datatype& type, rank_t root);
// `out` is written at root only (it may be null elsewhere).
void reduce(const team& t, const void* in, void* out, count_t count, const datatype& type, op o,
            rank_t root);
void allreduce(const team& t, const void* in, void* out, count_t count, const datatype& type, op o);
// out (root only) receives size() blocks of `count` elements, block r from rank r.
void gather(const team& t, const void* in, count_t count, const datatype& type, void* out,
            rank_t root);
// Rank r sends counts[r] elements (the caller's own `count`); root stores them at
// out + displs[r] elements. counts and displs are read at root only.
void gatherv(const team& t, const void* in, count_t count, const datatype& type, void* out,
             std::span<const count_t> counts, std::span<const count_t> displs, rank_t root);
void allgather(const team& t, const void* in, count_t count, const datatype& type, void* out);
void allgatherv(const team& t, const void* in, count_t count, const datatype& type, void* out,
                std::span<const count_t> counts, std::span<const count_t> displs);
// Block j of `in` (count elements) goes to rank j; block i of `out` comes from rank i.
void alltoall(const team& t, const void* in, void* out, count_t count, const datatype& type);
void alltoallv(const team& t, const void* in, std::span<const count_t> send_counts,
               std::span<const count_t> send_displs, void* out,
               std::span<const count_t> recv_counts, std::span<const count_t> recv_displs,
               const datatype& type);
// Inclusive prefix reduction: rank r gets in_0 op … op in_r.
void scan(const team& t, const void* in, void* out, count_t count, const datatype& type, op o);
// Exclusive prefix reduction: rank r > 0 gets in_0 op … op in_{r-1}; rank 0's out is untouched.
void exscan(const team& t, const void* in, void* out, count_t count, const datatype& type, op o);

inline void barrier() {
  barrier(world());
}

// ---- typed forms ----------------------------------------------------------------------

// A contiguous, sized range of predefined elements: std::vector<double>, std::span<int>, …
template <class R>
concept element_range = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
    predefined_element<std::ranges::range_value_t<R>>;

template <class R>
concept writable_element_range =
    element_range<R> && std::same_as < std::ranges::range_reference_t<R>,
        std::ranges::range_value_t<R>
& > ;

template <class R>
using range_element_t = std::ranges::range_value_t<R>;

namespace detail {
template <class R>
count_t count_of(R&& r) {
  return static_cast<count_t>(std::ranges::size(r));
}
}  // namespace detail

template <writable_element_range R>
void broadcast(const team& t, R&& data, rank_t root) {
  broadcast(t, std::ranges::data(data), detail::count_of(data), datatype::of<range_element_t<R>>(),
            root);
}
template <predefined_element T>
T broadcast(const team& t, const T& value, rank_t root) {
  T v = value;
  broadcast(t, &v, 1, datatype::of<T>(), root);
  return v;
}

// `out` needs in.size() elements at root; elsewhere it is not touched (may be empty).
template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void reduce(const team& t, const In& in, Out&& out, op o, rank_t root) {
  reduce(t, std::ranges::data(in), std::ranges::data(out), detail::count_of(in),
         datatype::of<range_element_t<In>>(), o, root);
}
// The reduction at root; value-initialized elsewhere.
template <predefined_element T>
T reduce(const team& t, const T& value, op o, rank_t root) {
  T out{};
  reduce(t, &value, &out, 1, datatype::of<T>(), o, root);
  return out;
}

template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void allreduce(const team& t, const In& in, Out&& out, op o) {
  allreduce(t, std::ranges::data(in), std::ranges::data(out), detail::count_of(in),
            datatype::of<range_element_t<In>>(), o);
}
template <predefined_element T>
T allreduce(const team& t, const T& value, op o) {
  T out{};
  allreduce(t, &value, &out, 1, datatype::of<T>(), o);
  return out;
}

// out needs size() * in.size() elements at root.
template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void gather(const team& t, const In& in, Out&& out, rank_t root) {
  gather(t, std::ranges::data(in), detail::count_of(in), datatype::of<range_element_t<In>>(),
         std::ranges::data(out), root);
}
// One value per rank, in rank order, at root; empty elsewhere.
template <predefined_element T>
std::vector<T> gather(const team& t, const T& value, rank_t root) {
  std::vector<T> out(t.rank() == root ? static_cast<std::size_t>(t.size()) : 0);
  gather(t, &value, 1, datatype::of<T>(), out.data(), root);
  return out;
}

template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void gatherv(const team& t, const In& in, Out&& out, std::span<const count_t> counts,
             std::span<const count_t> displs, rank_t root) {
  gatherv(t, std::ranges::data(in), detail::count_of(in), datatype::of<range_element_t<In>>(),
          std::ranges::data(out), counts, displs, root);
}

template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void allgather(const team& t, const In& in, Out&& out) {
  allgather(t, std::ranges::data(in), detail::count_of(in), datatype::of<range_element_t<In>>(),
            std::ranges::data(out));
}
template <predefined_element T>
std::vector<T> allgather(const team& t, const T& value) {
  std::vector<T> out(static_cast<std::size_t>(t.size()));
  allgather(t, &value, 1, datatype::of<T>(), out.data());
  return out;
}

template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void allgatherv(const team& t, const In& in, Out&& out, std::span<const count_t> counts,
                std::span<const count_t> displs) {
  allgatherv(t, std::ranges::data(in), detail::count_of(in), datatype::of<range_element_t<In>>(),
             std::ranges::data(out), counts, displs);
}

// in and out hold size() blocks of in.size()/size() elements.
template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void alltoall(const team& t, const In& in, Out&& out) {
  const count_t n = t.size();
  alltoall(t, std::ranges::data(in), std::ranges::data(out), detail::count_of(in) / n,
           datatype::of<range_element_t<In>>());
}

template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void alltoallv(const team& t, const In& in, std::span<const count_t> send_counts,
               std::span<const count_t> send_displs, Out&& out,
               std::span<const count_t> recv_counts, std::span<const count_t> recv_displs) {
  alltoallv(t, std::ranges::data(in), send_counts, send_displs, std::ranges::data(out), recv_counts,
            recv_displs, datatype::of<range_element_t<In>>());
}

template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void scan(const team& t, const In& in, Out&& out, op o) {
  scan(t, std::ranges::data(in), std::ranges::data(out), detail::count_of(in),
       datatype::of<range_element_t<In>>(), o);
}
template <predefined_element T>
T scan(const team& t, const T& value, op o) {
  T out{};
  scan(t, &value, &out, 1, datatype::of<T>(), o);
  return out;
}

template <element_range In, writable_element_range Out>
requires std::same_as<range_element_t<In>, range_element_t<Out>>
void exscan(const team& t, const In& in, Out&& out, op o) {
  exscan(t, std::ranges::data(in), std::ranges::data(out), detail::count_of(in),
         datatype::of<range_element_t<In>>(), o);
}
// Rank 0 gets a value-initialized T.
template <predefined_element T>
T exscan(const team& t, const T& value, op o) {
  T out{};
  exscan(t, &value, &out, 1, datatype::of<T>(), o);
  return out;
}

}  // namespace oneside
