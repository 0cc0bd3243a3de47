// Collective algorithms over whole dist_arrays (dist_array.hpp): fill, iota, for_each,
// transform, reduce, transform_reduce, min_element, max_element, copy, equal, and sort, a
// parallel sample sort of a 1-D array. Each is owner-computes: a rank works on its own block
// only, in parallel on its task arena (task_arena.hpp), row by row (the last dimension is
// contiguous, outer ones may have a pitch), and talks to the others through one collective.
//
// Collective semantics (docs/semantics.md, "dist_array algorithms"):
// - Every member of the array's team calls the same algorithm with the same arrays, in the
//   same order, one thread per rank. f, op and comp run concurrently on different elements.
// - No call starts with a barrier where it reads only this rank's block: the owner's earlier
//   writes (through its local view, an earlier algorithm) are seen; another rank's writes to
//   the block (a[i] = v, put) must be followed by a barrier first, as dist_array asks of any
//   reader. A call that reads other ranks' blocks (copy, transform and equal of arrays laid
//   out differently, sort) does start with a synchronization.
// - Writers (fill, iota, for_each, transform, copy, sort) end with a barrier: when one
//   returns, every element is written and any rank may read any element.
// - Readers (reduce, transform_reduce, min_element, max_element, equal) end with an
//   allgather or allreduce: when one returns, every rank has finished reading its block
//   (so writes may follow) and holds the same result.
// Region forms: fill, for_each, reduce, transform_reduce, min_element and max_element also
// take a region<N> after the array and touch only its elements (each rank its part of it).
// Errors (oneside::error, raised alike on every rank before anything changes): arg when two
// arrays of transform, copy or equal have different extents, naming both arrays and the
// call; arg for a region outside the extents, and for min/max_element of an empty region.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <oneside/pgas/dist_array.hpp>
#include <oneside/pgas/local_view.hpp>
#include <oneside/pgas/region.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/task_arena.hpp>
#include <oneside/runtime/team.hpp>

namespace oneside {

// A value of an array with its global index: what min_element and max_element return.
template <class T, std::size_t N>
struct located {
  T value;
  std::array<std::size_t, N> index;

  friend bool operator==(const located&, const located&) = default;
};

namespace pgas::detail {

// error(arg) naming `call`, both arrays and their extents (n dimensions each).
[[noreturn]] void extents_differ(const char* call, std::string_view a, const std::size_t* ea,
                                 std::string_view b, const std::size_t* eb, std::size_t n);
// error(arg) naming `call` and the array when region (lo, extents) leaves the array's extents
// `ae` (n dimensions).
void check_region(const char* call, std::string_view name, const std::size_t* ae,
                  const std::size_t* lo, const std::size_t* extents, std::size_t n);
// error(arg): min_element or max_element (`call`) of an empty region of the array.
[[noreturn]] void empty_region(const char* call, std::string_view name);
// Gathers `bytes` bytes from every member of t into out (t.size() * bytes, rank order).
void allgather_bytes(const team& t, const void* in, std::size_t bytes, void* out);
// Gathers counts[r] * element bytes from each member r into out at displs[r] elements.
void allgatherv_bytes(const team& t, const void* in, std::size_t count, std::size_t element,
                      void* out, std::span<const count_t> counts, std::span<const count_t> displs);
// alltoallv of elements of `element` bytes (counts and displacements in elements).
void alltoallv_bytes(const team& t, const void* in, std::span<const count_t> send_counts,
                     std::span<const count_t> send_displs, void* out,
                     std::span<const count_t> recv_counts, std::span<const count_t> recv_displs,
                     std::size_t element);
// Exchanges one count per pair: out[i] = what member i passed as in[me].
void alltoall_counts(const team& t, std::span<const count_t> in, std::span<count_t> out);

// Whether two teams hold the same world ranks in the same order (decided alike everywhere).
bool same_members(const team& a, const team& b);

// f(element) or f(global index, element), as for_each takes.
template <std::size_t N>
using index_cref = const std::array<std::size_t, N>&;
template <class F, class T, std::size_t N>
concept indexed_function = std::invocable<F&, index_cref<N>, T&>;
template <class F, class T, std::size_t N>
concept element_function = std::invocable<F&, T&> || indexed_function<F, T, N>;

// An operation combining two partial results of type R into one (R is gathered as bytes).
template <class Op, class R>
concept reduction =
    std::is_trivially_copyable_v<R> && std::is_invocable_r_v<R, Op&, const R&, const R&>;

// Elements per chunk of the reductions: the chunks (and so the order the partial results are
// combined in) depend on the block's size only, never on the thread count or timing.
inline constexpr std::size_t reduce_chunk = std::size_t{1} << 14;

// A box of local indices: lo[d] ≤ l[d] < lo[d] + extents[d] (a whole block, or this rank's
// part of a region: consecutive local indices in every dimension).
template <std::size_t N>
struct box {
  std::array<std::size_t, N> lo{};
  std::array<std::size_t, N> extents{};

  std::size_t size() const noexcept {
    std::size_t n = 1;
    for (const std::size_t e : extents) n *= e;
    return n;
  }
  // The local index at row-major offset o of the box.
  std::array<std::size_t, N> at(std::size_t o) const noexcept {
    std::array<std::size_t, N> l{};
    for (std::size_t d = N; d-- > 0;) {
      l[d] = lo[d] + o % extents[d];
      o /= extents[d];
    }
    return l;
  }
};

template <class T, std::size_t N>
box<N> whole(const local_view<T, N>& v) {
  return {{}, v.extents()};
}

// This rank's part of region r of a (validated: arg naming `call` when r leaves the extents).
template <class T, std::size_t N>
box<N> local_part(const dist_array<T, N>& a, const region<N>& r, const char* call) {
  check_region(call, a.name(), a.extents().data(), r.lo.data(), r.extents.data(), N);
  const std::array<std::size_t, N> c = a.pattern().coords(a.get_team().rank());
  box<N> b;
  for (std::size_t d = 0; d < N; ++d) {
    const dim_map& m = a.pattern().dim(d);
    b.lo[d] = m.count_below(c[d], r.lo[d]);
    b.extents[d] = m.count_below(c[d], r.lo[d] + r.extents[d]) - b.lo[d];
  }
  return b;
}

// Calls f(p, len, l) for the runs of row-major offsets [begin, end) of box b of v, each inside
// one row: p points to the element at local index l, the next len - 1 follow it.
template <class T, std::size_t N, class F>
void for_each_run(const local_view<T, N>& v, const box<N>& b, std::size_t begin, std::size_t end,
                  F&& f) {
  if (begin >= end) return;
  std::array<std::size_t, N> l = b.at(begin);
  const std::size_t row_end = b.lo[N - 1] + b.extents[N - 1];
  while (begin < end) {
    const std::size_t len = std::min(row_end - l[N - 1], end - begin);
    f(&v[l], len, std::as_const(l));
    begin += len;
    l[N - 1] = b.lo[N - 1];
    for (std::size_t d = N - 1; d-- > 0;) {
      if (++l[d] < b.lo[d] + b.extents[d]) break;
      l[d] = b.lo[d];
    }
  }
}

// Runs f(p, len, l) over every run of box b of v, in parallel on this rank's arena.
template <class T, std::size_t N, class F>
void parallel_runs(const local_view<T, N>& v, const box<N>& b, F&& f) {
  const std::size_t n = b.size();
  if (n == 0) return;
  this_rank_arena().parallel_for(
      n, [&](std::size_t begin, std::size_t end) { for_each_run(v, b, begin, end, f); });
}
template <class T, std::size_t N, class F>
void parallel_runs(const local_view<T, N>& v, F&& f) {
  parallel_runs(v, whole(v), std::forward<F>(f));
}

// The global row-major linear index of rank r's local index l.
template <std::size_t N>
std::size_t linear_index(const pattern<N>& p, rank_t r, const std::array<std::size_t, N>& l) {
  return pattern<N>::offset(p.global_index(r, l), p.extents());
}

template <std::size_t N>
std::array<std::size_t, N> unflatten(std::size_t o, const std::array<std::size_t, N>& e) {
  std::array<std::size_t, N> g{};
  for (std::size_t d = N; d-- > 0;) {
    g[d] = o % e[d];
    o /= e[d];
  }
  return g;
}

// A partial result, gathered as bytes: whether the rank had any element, and the value.
template <class R>
struct partial {
  R value;
  std::uint8_t has;
};

// The reduction of this rank's block in fixed chunks (combined in chunk order), or nothing
// for an empty block.
template <class R, class T, std::size_t N, class Op, class Tr>
std::optional<R> local_reduce(const local_view<T, N>& v, const box<N>& b, Op& op, Tr& tr) {
  const std::size_t n = b.size();
  if (n == 0) return std::nullopt;
  const std::size_t chunks = (n + reduce_chunk - 1) / reduce_chunk;
  std::vector<std::optional<R>> part(chunks);
  this_rank_arena().parallel_for(chunks, [&](std::size_t cb, std::size_t ce) {
    for (std::size_t c = cb; c < ce; ++c) {
      std::optional<R> acc;
      for_each_run(v, b, c * reduce_chunk, std::min(n, (c + 1) * reduce_chunk),
                   [&](const T* p, std::size_t len, const auto&) {
                     std::size_t i = 0;
                     if (!acc) {
                       acc.emplace(static_cast<R>(tr(p[0])));
                       i = 1;
                     }
                     R x = *acc;
                     for (; i < len; ++i) x = op(x, tr(p[i]));
                     *acc = x;
                   });
      part[c] = acc;
    }
  });
  R total = *part[0];
  for (std::size_t c = 1; c < chunks; ++c) total = op(total, *part[c]);
  return total;
}

// init op (every rank's partial, in rank order): the same value on every rank.
template <class R, class Op>
R combine_ranks(const team& t, const std::optional<R>& mine, R init, Op& op) {
  partial<R> p{mine ? *mine : init, static_cast<std::uint8_t>(mine ? 1 : 0)};
  std::vector<partial<R>> all(static_cast<std::size_t>(t.size()), p);
  allgather_bytes(t, &p, sizeof(p), all.data());
  R result = init;
  for (const partial<R>& q : all) {
    if (q.has != 0) result = op(result, q.value);
  }
  return result;
}

// The first (smallest global index) element e of a's block with better(e, best) for every
// other e' earlier, i.e. min_element with better = comp, max_element with better(x, y) =
// comp(y, x); then the best over the ranks, ties to the smallest global index.
template <class T, std::size_t N, class Better>
std::optional<located<T, N>> extreme(const dist_array<T, N>& a, const box<N>& part, Better better) {
  struct best {
    T value;
    std::size_t index;  // global linear
    std::uint8_t has;
  };
  const local_view<const T, N> v = a.local();
  const std::size_t n = part.size();
  const rank_t me = a.get_team().rank();
  const std::size_t chunks = (n + reduce_chunk - 1) / reduce_chunk;
  // Per chunk: the box's row-major offset of its first best element.
  std::vector<std::size_t> at(chunks);
  this_rank_arena().parallel_for(chunks, [&](std::size_t cb, std::size_t ce) {
    for (std::size_t c = cb; c < ce; ++c) {
      const std::size_t first = c * reduce_chunk;
      const T* bp = nullptr;
      std::size_t bo = first;
      std::size_t o = first;
      for_each_run(v, part, first, std::min(n, first + reduce_chunk),
                   [&](const T* p, std::size_t len, const auto&) {
                     for (std::size_t i = 0; i < len; ++i) {
                       if (bp == nullptr || better(p[i], *bp)) {
                         bp = p + i;
                         bo = o + i;
                       }
                     }
                     o += len;
                   });
      at[c] = bo;
    }
  });
  best mine{};
  if (n != 0) {
    std::size_t b = at[0];
    for (std::size_t c = 1; c < chunks; ++c) {
      if (better(v[part.at(at[c])], v[part.at(b)])) b = at[c];
    }
    mine = {v[part.at(b)], linear_index(a.pattern(), me, part.at(b)), 1};
  }
  std::vector<best> all(static_cast<std::size_t>(a.get_team().size()), mine);
  allgather_bytes(a.get_team(), &mine, sizeof(mine), all.data());
  best winner{};
  for (const best& q : all) {
    if (q.has == 0) continue;
    if (winner.has == 0 || better(q.value, winner.value) ||
        (!better(winner.value, q.value) && q.index < winner.index)) {
      winner = q;
    }
  }
  if (winner.has == 0) return std::nullopt;  // an empty region
  return located<T, N>{winner.value, unflatten(winner.index, a.extents())};
}

// extreme over region r (call names it in errors); error(arg) for an empty region.
template <class T, std::size_t N, class Better>
located<T, N> extreme_in(const dist_array<T, N>& a, const region<N>& r, const char* call,
                         Better better) {
  const box<N> part = local_part(a, r, call);
  if (r.size() == 0) empty_region(call, a.name());
  return *extreme(a, part, better);
}

// Whether `a` and `b` store each index at the same rank and local index.
template <class T, class U, std::size_t N>
bool same_layout(const dist_array<T, N>& a, const dist_array<U, N>& b) {
  // (pattern's operator== does not compile: dim_map has none; the three inputs decide it.)
  const pattern<N>& p = a.pattern();
  const pattern<N>& q = b.pattern();
  return p.extents() == q.extents() && p.distributions() == q.distributions() &&
         p.grid() == q.grid() && same_members(a.get_team(), b.get_team());
}

template <class T, class U, std::size_t N>
void check_extents(const char* call, const dist_array<T, N>& a, const dist_array<U, N>& b) {
  if (a.extents() != b.extents()) {
    extents_differ(call, a.name(), a.extents().data(), b.name(), b.extents().data(), N);
  }
}

// A new array of `like`'s layout holding `from`'s elements (a redistribution; collective).
template <class T, class U, std::size_t N>
dist_array<T, N> redistributed(const dist_array<T, N>& from, const dist_array<U, N>& like) {
  const pattern<N>& p = like.pattern();
  dist_array<T, N> tmp(like.get_team(), p.extents(), p.distributions(), p.grid(),
                       from.name() + " (redistributed)");
  const region<N> all{{}, p.extents()};
  copy(from, all, tmp, all);
  return tmp;
}

// Sorts v in parallel: sorted chunks, one per thread, merged pairwise level by level.
template <class T, class Comp>
void merge_runs(std::span<T> v, std::vector<std::size_t> bounds, Comp& comp) {
  if (bounds.size() <= 2) return;
  std::unique_ptr<T[]> buffer = std::make_unique_for_overwrite<T[]>(v.size());
  std::span<T> from = v;
  std::span<T> to(buffer.get(), v.size());
  while (bounds.size() > 2) {
    const std::size_t runs = bounds.size() - 1;
    const std::size_t pairs = (runs + 1) / 2;
    this_rank_arena().parallel_for(pairs, [&](std::size_t pb, std::size_t pe) {
      for (std::size_t q = pb; q < pe; ++q) {
        const std::size_t lo = bounds[2 * q];
        const std::size_t mid = bounds[std::min(2 * q + 1, runs)];
        const std::size_t hi = bounds[std::min(2 * q + 2, runs)];
        std::merge(from.begin() + static_cast<std::ptrdiff_t>(lo),
                   from.begin() + static_cast<std::ptrdiff_t>(mid),
                   from.begin() + static_cast<std::ptrdiff_t>(mid),
                   from.begin() + static_cast<std::ptrdiff_t>(hi),
                   to.begin() + static_cast<std::ptrdiff_t>(lo), comp);
      }
    });
    std::vector<std::size_t> next;
    for (std::size_t i = 0; i < bounds.size(); i += 2) next.push_back(bounds[i]);
    if (bounds.size() % 2 == 0) next.push_back(bounds[bounds.size() - 1]);  // runs odd
    bounds = std::move(next);
    std::swap(from, to);
  }
  if (from.data() != v.data()) std::copy(from.begin(), from.end(), v.begin());
}

template <class T, class Comp>
void parallel_sort(std::span<T> v, Comp& comp) {
  constexpr std::size_t least = 1 << 13;  // elements per chunk worth a thread
  const auto threads = static_cast<std::size_t>(std::max(1, this_rank_arena().max_concurrency()));
  const std::size_t k = std::max<std::size_t>(1, std::min(threads, v.size() / least));
  std::vector<std::size_t> bounds(k + 1);
  for (std::size_t i = 0; i <= k; ++i) bounds[i] = v.size() * i / k;
  this_rank_arena().parallel_for(k, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      std::sort(v.begin() + static_cast<std::ptrdiff_t>(bounds[i]),
                v.begin() + static_cast<std::ptrdiff_t>(bounds[i + 1]), comp);
    }
  });
  merge_runs(v, std::move(bounds), comp);
}

}  // namespace pgas::detail

// ---- writers: each ends with a barrier ----------------------------------------------------

// Sets every element of `a` to v.
template <class T, std::size_t N>
void fill(dist_array<T, N>& a, const T& v) {
  pgas::detail::parallel_runs(
      a.local(), [&](T* p, std::size_t len, const auto&) { std::fill(p, p + len, v); });
  barrier(a.get_team());
}

// Sets every element of region r of `a` to v. Errors: arg (r outside the extents).
template <class T, std::size_t N>
void fill(dist_array<T, N>& a, const region<N>& r, const T& v) {
  const pgas::detail::box<N> part = pgas::detail::local_part(a, r, "dist_array fill");
  pgas::detail::parallel_runs(
      a.local(), part, [&](T* p, std::size_t len, const auto&) { std::fill(p, p + len, v); });
  barrier(a.get_team());
}

// Sets the element at global index g to start + (g's row-major linear index).
template <class T, std::size_t N>
requires requires(T s, std::size_t i) {
  { s + static_cast<T>(i) } -> std::convertible_to<T>;
}
void iota(dist_array<T, N>& a, const T& start) {
  const pattern<N>& pat = a.pattern();
  const rank_t me = a.get_team().rank();
  const dim_map last = pat.dim(N - 1);
  const std::size_t coord = pat.coords(me)[N - 1];
  pgas::detail::parallel_runs(a.local(), [&](T* p, std::size_t len, const auto& l) {
    std::array<std::size_t, N> row = l;
    row[N - 1] = 0;
    // The row's linear index with the last global index 0, plus each element's last index.
    std::array<std::size_t, N> g = pat.global_index(me, row);
    g[N - 1] = 0;
    const std::size_t base = pattern<N>::offset(g, pat.extents());
    for (std::size_t i = 0; i < len; ++i) {
      p[i] = static_cast<T>(start + static_cast<T>(base + last.global(coord, l[N - 1] + i)));
    }
  });
  barrier(a.get_team());
}

namespace pgas::detail {
// for_each over box `part` of a's block, then a barrier.
template <class T, std::size_t N, class F>
void for_each_in(dist_array<T, N>& a, const box<N>& part, F& f) {
  const pattern<N>& pat = a.pattern();
  const rank_t me = a.get_team().rank();
  parallel_runs(a.local(), part, [&](T* p, std::size_t len, const auto& l) {
    if constexpr (pgas::detail::indexed_function<F, T, N>) {
      std::array<std::size_t, N> at = l;
      for (std::size_t i = 0; i < len; ++i, ++at[N - 1]) {
        const std::array<std::size_t, N> g = pat.global_index(me, at);
        f(g, p[i]);
      }
    } else {
      for (std::size_t i = 0; i < len; ++i) f(p[i]);
    }
  });
  barrier(a.get_team());
}
}  // namespace pgas::detail

// Calls f(element) or f(global index, element) for every element (f may change it).
template <class T, std::size_t N, pgas::detail::element_function<T, N> F>
void for_each(dist_array<T, N>& a, F f) {
  pgas::detail::for_each_in(a, pgas::detail::whole(std::as_const(a).local()), f);
}
// The same over region r of `a` only. Errors: arg (r outside the extents).
template <class T, std::size_t N, pgas::detail::element_function<T, N> F>
void for_each(dist_array<T, N>& a, const region<N>& r, F f) {
  pgas::detail::for_each_in(a, pgas::detail::local_part(a, r, "dist_array for_each"), f);
}

// out = f(in) element by element, for arrays of the same extents (in and out may be the
// same array). The same layout (pattern and team order): each rank transforms its own block.
// Different layouts: `in` is first redistributed to out's layout (a temporary array on the
// symmetric heap and one copy: starts and ends with a barrier), then transformed locally.
// Errors: arg (different extents).
template <class T, class U, std::size_t N, class F>
requires std::is_invocable_r_v<U, F&, const T&>
void transform(const dist_array<T, N>& in, dist_array<U, N>& out, F f) {
  pgas::detail::check_extents("dist_array transform", in, out);
  auto local = [&](const local_view<const T, N>& src) {
    const local_view<U, N> dst = out.local();
    pgas::detail::parallel_runs(dst, [&](U* p, std::size_t len, const auto& l) {
      const T* s = &src[l];
      for (std::size_t i = 0; i < len; ++i) p[i] = static_cast<U>(f(s[i]));
    });
  };
  if (pgas::detail::same_layout(in, out)) {
    local(in.local());
  } else {
    const dist_array<T, N> tmp = pgas::detail::redistributed(in, out);
    local(tmp.local());
  }
  barrier(out.get_team());
}

// Copies every element of `from` to `to` (the same extents; any two layouts). The same
// layout: each rank copies its own block, then a barrier. Different layouts: the region copy
// (dist_array.hpp: starts and ends with a barrier, each rank pulling its part). Copying an
// array onto itself only synchronizes. Errors: arg (different extents).
template <class T, std::size_t N>
void copy(const dist_array<T, N>& from, dist_array<T, N>& to) {
  pgas::detail::check_extents("dist_array copy", from, to);
  if (&from == &to) {
    barrier(to.get_team());
    return;
  }
  if (pgas::detail::same_layout(from, to)) {
    const local_view<const T, N> src = from.local();
    pgas::detail::parallel_runs(
        to.local(), [&](T* p, std::size_t len, const auto& l) { std::copy_n(&src[l], len, p); });
    barrier(to.get_team());
    return;
  }
  const region<N> all{{}, from.extents()};
  copy(from, all, to, all);
}

// ---- readers: the same result on every rank -----------------------------------------------

// init op t(e_0) op t(e_1) … over every element, with op associative and commutative (the
// grouping and order of the combination are unspecified; for floating point, the result may
// differ from a serial sum by rounding, but it is the same on every rank and, for a given
// rank count and layout, from run to run). R (init's type) must be trivially copyable.
template <class T, std::size_t N, class R, pgas::detail::reduction<R> Op,
          std::invocable<const T&> Tr>
R transform_reduce(const dist_array<T, N>& a, R init, Op op, Tr t) {
  const local_view<const T, N> v = a.local();
  const std::optional<R> mine = pgas::detail::local_reduce<R>(v, pgas::detail::whole(v), op, t);
  return pgas::detail::combine_ranks(a.get_team(), mine, init, op);
}
// The same over region r of `a` (init for an empty region). Errors: arg (r outside the
// extents).
template <class T, std::size_t N, class R, pgas::detail::reduction<R> Op,
          std::invocable<const T&> Tr>
R transform_reduce(const dist_array<T, N>& a, const region<N>& r, R init, Op op, Tr t) {
  const pgas::detail::box<N> part = pgas::detail::local_part(a, r, "dist_array transform_reduce");
  const std::optional<R> mine = pgas::detail::local_reduce<R>(a.local(), part, op, t);
  return pgas::detail::combine_ranks(a.get_team(), mine, init, op);
}

template <class T, std::size_t N, class R, pgas::detail::reduction<R> Op = std::plus<>>
R reduce(const dist_array<T, N>& a, R init, Op op = {}) {
  return transform_reduce(a, init, op, [](const T& e) -> const T& { return e; });
}
template <class T, std::size_t N, class R, pgas::detail::reduction<R> Op = std::plus<>>
R reduce(const dist_array<T, N>& a, const region<N>& r, R init, Op op = {}) {
  return transform_reduce(a, r, init, op, [](const T& e) -> const T& { return e; });
}

// The smallest element under comp (a strict weak order) and its global index; among equal
// ones, the one with the smallest row-major global index. The same on every rank.
template <class T, std::size_t N, std::predicate<const T&, const T&> Comp = std::less<>>
located<T, N> min_element(const dist_array<T, N>& a, Comp comp = {}) {
  // The array is never empty (every extent is at least 1).
  return *pgas::detail::extreme(a, pgas::detail::whole(a.local()),
                                [&](const T& x, const T& y) { return comp(x, y); });
}
// The largest element under comp and its global index (ties: the smallest global index).
template <class T, std::size_t N, std::predicate<const T&, const T&> Comp = std::less<>>
located<T, N> max_element(const dist_array<T, N>& a, Comp comp = {}) {
  return *pgas::detail::extreme(a, pgas::detail::whole(a.local()),
                                [&](const T& x, const T& y) { return comp(y, x); });
}
// The same over region r of `a`. Errors: arg (r outside the extents, or empty).
template <class T, std::size_t N, std::predicate<const T&, const T&> Comp = std::less<>>
located<T, N> min_element(const dist_array<T, N>& a, const region<N>& r, Comp comp = {}) {
  return pgas::detail::extreme_in(a, r, "dist_array min_element",
                                  [&](const T& x, const T& y) { return comp(x, y); });
}
template <class T, std::size_t N, std::predicate<const T&, const T&> Comp = std::less<>>
located<T, N> max_element(const dist_array<T, N>& a, const region<N>& r, Comp comp = {}) {
  return pgas::detail::extreme_in(a, r, "dist_array max_element",
                                  [&](const T& x, const T& y) { return comp(y, x); });
}

// Whether a and b hold equal elements (==) at every index; the same answer on every rank.
// Different layouts: b is first redistributed to a's (as transform does). Errors: arg
// (different extents).
template <class T, class U, std::size_t N>
requires std::equality_comparable_with<const T&, const U&>
bool equal(const dist_array<T, N>& a, const dist_array<U, N>& b) {
  pgas::detail::check_extents("dist_array equal", a, b);
  auto local = [&](const local_view<const U, N>& other) {
    const local_view<const T, N> mine = a.local();
    if (mine.empty()) return true;
    std::atomic<bool> differ{false};
    this_rank_arena().parallel_for(mine.size(), [&](std::size_t begin, std::size_t end) {
      if (differ.load(std::memory_order_relaxed)) return;
      bool same = true;
      pgas::detail::for_each_run(mine, pgas::detail::whole(mine), begin, end,
                                 [&](const T* p, std::size_t len, const auto& l) {
                                   same = same && std::equal(p, p + len, &other[l]);
                                 });
      if (!same) differ.store(true, std::memory_order_relaxed);
    });
    return !differ.load();
  };
  bool mine = false;
  if (pgas::detail::same_layout(a, b)) {
    mine = local(b.local());
  } else {
    const dist_array<U, N> tmp = pgas::detail::redistributed(b, a);
    mine = local(tmp.local());
  }
  return allreduce(a.get_team(), mine ? 1 : 0, op::min) == 1;
}

// ---- sort ---------------------------------------------------------------------------------

// Sorts a 1-D array (any distribution) by comp, a strict weak order: afterwards a[i] holds
// the i-th smallest element (equal elements in unspecified order). A sample sort by regular
// sampling: each rank sorts its block (in parallel), P - 1 samples per rank are gathered,
// P - 1 splitters cut the keys into one bucket per rank, the buckets are exchanged (alltoallv)
// and merged, and each rank puts its bucket at its global positions. Equal keys are told
// apart by their rank and position, so all-equal keys still spread evenly. Collective; reads
// only this rank's block before the exchange (which orders every read before any write) and
// ends with a barrier. Needs about 3× the block in private memory per rank.
template <class T, class Comp = std::less<>>
requires std::predicate<Comp&, const T&, const T&>
void sort(dist_array<T, 1>& a, Comp comp = {}) {
  namespace d = pgas::detail;
  const team& t = a.get_team();
  const auto p = static_cast<std::size_t>(t.size());
  const auto me = static_cast<std::uint64_t>(t.rank());
  // This rank's keys, sorted.
  const local_view<T, 1> v = a.local();
  const std::size_t n = v.size();
  std::unique_ptr<T[]> keys_mem = std::make_unique_for_overwrite<T[]>(std::max<std::size_t>(n, 1));
  const std::span<T> keys(keys_mem.get(), n);
  if (n != 0) std::copy_n(&v[0], n, keys.data());
  d::parallel_sort(keys, comp);
  // A key with its origin (rank, position): a total order even among equal keys.
  struct tagged {
    T key;
    std::uint64_t rank;
    std::uint64_t pos;
  };
  auto less = [&comp](const T& k, std::uint64_t r, std::uint64_t i, const tagged& s) {
    if (comp(k, s.key)) return true;
    if (comp(s.key, k)) return false;
    return r < s.rank || (r == s.rank && i < s.pos);
  };
  // P - 1 regular samples per rank (fewer when the block is smaller), gathered everywhere.
  std::vector<tagged> samples;
  const std::size_t take = std::min(n, p - 1);
  for (std::size_t i = 1; i <= take; ++i) {
    const std::size_t at = i * n / (take + 1);
    samples.push_back({keys[at], me, at});
  }
  const std::vector<std::uint64_t> sample_counts =
      allgather(t, static_cast<std::uint64_t>(samples.size()));
  std::vector<count_t> counts(p);
  std::vector<count_t> displs(p);
  count_t all_samples = 0;
  for (std::size_t r = 0; r < p; ++r) {
    counts[r] = static_cast<count_t>(sample_counts[r]);
    displs[r] = all_samples;
    all_samples += counts[r];
  }
  std::vector<tagged> gathered(static_cast<std::size_t>(all_samples) + 1);
  d::allgatherv_bytes(t, samples.data(), samples.size(), sizeof(tagged), gathered.data(), counts,
                      displs);
  gathered.resize(static_cast<std::size_t>(all_samples));
  std::sort(gathered.begin(), gathered.end(),
            [&](const tagged& x, const tagged& y) { return less(x.key, x.rank, x.pos, y); });
  // Bucket j: the keys at or above splitter j - 1 and below splitter j (a prefix of the
  // sorted keys per splitter).
  std::vector<count_t> send_counts(p);
  std::vector<count_t> send_displs(p);
  std::size_t from = 0;
  for (std::size_t j = 0; j < p; ++j) {
    std::size_t to = n;
    if (j + 1 < p && !gathered.empty()) {
      const tagged& s = gathered[(j + 1) * gathered.size() / p];
      std::size_t lo = from;  // first key not below s
      std::size_t hi = n;
      while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (less(keys[mid], me, mid, s)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      to = lo;
    }
    send_displs[j] = static_cast<count_t>(from);
    send_counts[j] = static_cast<count_t>(to - from);
    from = to;
  }
  // The exchange: counts, then keys.
  std::vector<count_t> recv_counts(p);
  d::alltoall_counts(t, send_counts, recv_counts);
  std::vector<count_t> recv_displs(p);
  std::vector<std::size_t> bounds(p + 1);
  for (std::size_t i = 0; i < p; ++i) {
    recv_displs[i] = static_cast<count_t>(bounds[i]);
    bounds[i + 1] = bounds[i] + static_cast<std::size_t>(recv_counts[i]);
  }
  const std::size_t m = bounds[p];
  std::unique_ptr<T[]> bucket_mem =
      std::make_unique_for_overwrite<T[]>(std::max<std::size_t>(m, 1));
  const std::span<T> bucket(bucket_mem.get(), m);
  d::alltoallv_bytes(t, keys.data(), send_counts, send_displs, bucket.data(), recv_counts,
                     recv_displs, sizeof(T));
  keys_mem.reset();
  // Merge the P sorted runs received; place the bucket after the lower ranks' ones. The
  // allgather of the bucket sizes completes only once every rank has finished reading its
  // block, so the puts below overwrite nothing still needed.
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  if (bounds.size() == 1) bounds.push_back(bounds.back());
  d::merge_runs(bucket, std::move(bounds), comp);
  const std::vector<std::uint64_t> sizes = allgather(t, static_cast<std::uint64_t>(m));
  std::size_t offset = 0;
  for (std::size_t r = 0; r < static_cast<std::size_t>(me); ++r) {
    offset += static_cast<std::size_t>(sizes[r]);
  }
  if (m != 0) a.put(region<1>{{offset}, {m}}, std::span<const T>(bucket.data(), m));
  barrier(t);
}

}  // namespace oneside
