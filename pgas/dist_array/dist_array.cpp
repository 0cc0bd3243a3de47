// The untyped back of dist_array (dist_array.hpp): collective creation with its checks,
// region transfers and copies. A region's part on one owner is a box of consecutive local
// indices in every dimension (a rank stores its elements of each dimension in global order);
// on the caller's buffer the same elements form, per dimension, runs of at most a block (one
// run for block and none, one element each for cyclic). Per owner: one run on both sides is
// one contiguous copy or transfer; a block mapped here is copied run by run; otherwise one
// layout put or get with both sides as nested hindexed types, which the datatype engine moves
// as iovecs. A block with halos is stored padded by them (local index l at l + width); the
// halo exchange at the end of this file fills the padding.
#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <oneside/pgas/atomic.hpp>
#include <oneside/pgas/dist_array.hpp>
#include <oneside/pgas/heap.hpp>
#include <oneside/pgas/symmetric_heap.hpp>
#include <oneside/pgas/when_all.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/copy.hpp>
#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/op.hpp>

namespace oneside::pgas::detail {
namespace {

using oneside::detail::raise;

std::string quoted(std::string_view name) {
  return "array '" + std::string(name) + "'";
}

// "(3, 0, 7)"
std::string tuple(const std::size_t* v, std::size_t n) {
  std::string s = "(";
  for (std::size_t d = 0; d < n; ++d) s += (d == 0 ? "" : ", ") + std::to_string(v[d]);
  return s + ")";
}

std::string extents_of(const array_desc& a) {
  std::array<std::size_t, 3> e{};
  for (std::size_t d = 0; d < a.dims.size(); ++d) e[d] = a.dims[d].extent;
  return tuple(e.data(), a.dims.size());
}

// The elements one owner coordinate holds of [lo, hi) in one dimension: local indices
// [llo, lhi), and the runs (offset from lo, length) they form in the region.
struct piece {
  std::size_t coord = 0;
  std::size_t llo = 0;
  std::size_t lhi = 0;
  std::vector<count_t> lengths;
  std::vector<std::ptrdiff_t> offsets;  // in elements, scaled to bytes when the type is built
};

std::vector<piece> pieces_of(const dim_map& m, std::size_t lo, std::size_t hi) {
  std::vector<piece> out;
  const std::size_t cycle = m.block * m.procs;
  for (std::size_t c = 0; c < m.procs; ++c) {
    piece p{c, m.count_below(c, lo), m.count_below(c, hi), {}, {}};
    if (p.llo == p.lhi) continue;
    for (std::size_t s = lo / cycle * cycle + c * m.block; s < hi; s += cycle) {
      const std::size_t b = std::max(s, lo);
      const std::size_t e = std::min(s + m.block, hi);
      if (b >= e) continue;
      const auto off = static_cast<std::ptrdiff_t>(b - lo);
      const auto len = static_cast<count_t>(e - b);
      if (!p.offsets.empty() && p.offsets.back() + p.lengths.back() == off) {
        p.lengths.back() += len;  // adjacent (a grid dimension of one rank)
      } else {
        p.offsets.push_back(off);
        p.lengths.push_back(len);
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

// The type of a box of runs in a row-major block: per dimension (outermost first) runs of
// (offset, length) in elements of that dimension, `stride` bytes per index of it; each outer
// dimension repeats the inner type once per index of its runs.
datatype nested_runs(std::span<const std::vector<std::ptrdiff_t>* const> offsets,
                     std::span<const std::vector<count_t>* const> lengths,
                     std::span<const std::size_t> stride, const datatype& element) {
  datatype t = element;
  for (std::size_t d = offsets.size(); d-- > 0;) {
    std::vector<std::ptrdiff_t> bytes(offsets[d]->size());
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      bytes[i] = (*offsets[d])[i] * static_cast<std::ptrdiff_t>(stride[d]);
    }
    const datatype row = d + 1 == offsets.size()
                             ? t
                             : datatype::resized(t, 0, static_cast<std::ptrdiff_t>(stride[d]));
    t = datatype::hindexed(*lengths[d], bytes, row);
  }
  return t;
}

// The row-major strides in bytes of a block of `extents` elements of `element` bytes.
std::array<std::size_t, 3> strides_of(const std::size_t* extents, std::size_t n,
                                      std::size_t element) {
  std::array<std::size_t, 3> stride{};
  std::size_t s = element;
  for (std::size_t d = n; d-- > 0;) {
    stride[d] = s;
    s *= extents[d];
  }
  return stride;
}

// Calls f(k) for every combination k of one entry per dimension (counts[d] entries in
// dimension d, the last dimension fastest); nothing when some count is 0.
template <class F>
void for_each_combination(std::span<const std::size_t> counts, F f) {
  std::array<std::size_t, 3> k{};
  for (const std::size_t c : counts) {
    if (c == 0) return;
  }
  for (;;) {
    f(k);
    std::size_t d = counts.size();
    while (d-- > 0) {
      if (++k[d] < counts[d]) break;
      k[d] = 0;
    }
    if (d > counts.size()) return;  // wrapped around every dimension
  }
}

// The region check shared by get, put and copy: error(arg) naming `call` when (lo, extents)
// leaves the array's extents. Returns the region's element count.
std::size_t checked_region(const array_desc& a, const std::size_t* lo, const std::size_t* extents,
                           const char* call) {
  const std::size_t n = a.dims.size();
  if (a.bases.empty()) raise(error_class::arg, {.call = call}, quoted(a.name) + " was moved from");
  std::size_t total = 1;
  for (std::size_t d = 0; d < n; ++d) {
    const std::size_t e = a.dims[d].extent;
    if (lo[d] > e || extents[d] > e - lo[d]) {
      std::array<std::size_t, 3> hi{};
      for (std::size_t k = 0; k < n; ++k) hi[k] = lo[k] + extents[k];
      raise(error_class::arg, {.call = call},
            quoted(a.name) + ": the region from " + tuple(lo, n) + " to " + tuple(hi.data(), n) +
                " (exclusive) is outside the extents " + extents_of(a) + " in dimension " +
                std::to_string(d));
    }
    total *= extents[d];
  }
  return total;
}

// Whether a box of `sub` elements in a row-major block of `size` elements is one run: whole
// in every dimension after the first one it does not span, single before it.
template <class A, class B>
bool is_one_run(const A* size, const B* sub, std::size_t n) {
  std::size_t d = n;
  while (d > 0 && static_cast<std::size_t>(sub[d - 1]) == static_cast<std::size_t>(size[d - 1])) {
    --d;
  }
  // Dimensions [d, n) are whole; d - 1 may be partial; everything before it single.
  for (std::size_t k = 0; k + 1 < d; ++k) {
    if (static_cast<std::size_t>(sub[k]) != 1) return false;
  }
  return true;
}

// Whether each dimension's runs are a single run (then lengths[d]->front() is its length).
bool all_single(const std::vector<count_t>* const* lengths, std::size_t n) {
  for (std::size_t d = 0; d < n; ++d) {
    if (lengths[d]->size() != 1) return false;
  }
  return true;
}

count_t box_elements(const count_t* sub, std::size_t n) {
  count_t e = 1;
  for (std::size_t d = 0; d < n; ++d) e *= sub[d];
  return e;
}

// Copies an owner's box of a region run by run between its block, mapped here at `block`,
// and the buffer (`in` for a put, else `out`), as the datatype path would but without
// building the types: the box is starts[d] + [0, sub[d]) of a block of `sizes` elements; on
// the buffer's side dimension d's indices are its runs (offsets, lengths), `stride` bytes
// per index.
void copy_mapped(const void* in, void* out, std::byte* block, const count_t* sizes,
                 const count_t* sub, const count_t* starts,
                 const std::vector<std::ptrdiff_t>* const* offsets,
                 const std::vector<count_t>* const* lengths, const std::size_t* stride,
                 std::size_t element, std::size_t n) {
  std::array<std::size_t, 3> extent{};
  for (std::size_t d = 0; d < n; ++d) extent[d] = static_cast<std::size_t>(sizes[d]);
  const std::array<std::size_t, 3> owner_stride = strides_of(extent.data(), n, element);
  // The buffer's byte offset of each index of the outer dimensions' runs.
  std::array<std::vector<std::size_t>, 3> at;
  std::array<std::size_t, 3> counts{};
  for (std::size_t d = 0; d + 1 < n; ++d) {
    for (std::size_t r = 0; r < offsets[d]->size(); ++r) {
      for (count_t j = 0; j < (*lengths[d])[r]; ++j) {
        at[d].push_back(static_cast<std::size_t>((*offsets[d])[r] + j) * stride[d]);
      }
    }
    counts[d] = static_cast<std::size_t>(sub[d]);
  }
  const std::size_t last = n - 1;
  const std::vector<std::ptrdiff_t>& run_offsets = *offsets[last];
  const std::vector<count_t>& run_lengths = *lengths[last];
  for_each_combination(std::span(counts.data(), last), [&](const std::array<std::size_t, 3>& i) {
    std::size_t here = static_cast<std::size_t>(starts[last]) * element;  // in the block
    std::size_t there = 0;                                                // in the buffer
    for (std::size_t d = 0; d < last; ++d) {
      here += (static_cast<std::size_t>(starts[d]) + i[d]) * owner_stride[d];
      there += at[d][i[d]];
    }
    for (std::size_t r = 0; r < run_offsets.size(); ++r) {
      const std::size_t bytes = static_cast<std::size_t>(run_lengths[r]) * element;
      const std::size_t b = there + static_cast<std::size_t>(run_offsets[r]) * element;
      if (in != nullptr) {
        oneside::detail::copy_bytes(block + here, static_cast<const std::byte*>(in) + b, bytes);
      } else {
        oneside::detail::copy_bytes(static_cast<std::byte*>(out) + b, block + here, bytes);
      }
      here += bytes;
    }
  });
}

const datatype& byte_type() {
  return datatype::of<std::byte>();
}

// The halo width of dimension d (0 without halo).
std::size_t halo_width(const array_desc& a, std::size_t d) {
  return a.halo.empty() ? 0 : a.halo[d];
}

// Halo exchange words per rank and kind: one per direction of a 3-D neighbourhood (3^3), the
// grant words first (a neighbour may put into that halo), then the arrival words (its data
// is there).
constexpr std::size_t exchange_slots = 27;

}  // namespace

namespace {
// A team of every rank (in any order) keeps its arrays on the symmetric heap.
bool whole_world(const team& t) noexcept {
  return t.size() == world().size();
}
}  // namespace

array_storage create_array(std::string_view name, const team& t,
                           std::span<const std::uint64_t> signature, const std::string& problem,
                           std::span<const dim_map> dims, std::size_t element, std::size_t align,
                           std::span<const std::size_t> halo) {
  const char* call = "dist_array";
  // The same arguments on every member (the length first: it sizes the second reduction).
  const auto length = static_cast<std::uint64_t>(signature.size());
  const bool same_length =
      allreduce(t, length, op::max) == length && allreduce(t, length, op::min) == length;
  // (Every member computes the same verdict from the same two reductions.)
  bool same = same_length;
  if (same) {
    std::vector<std::uint64_t> hi(signature.size());
    std::vector<std::uint64_t> lo(signature.size());
    allreduce(t, signature, hi, op::max);
    allreduce(t, signature, lo, op::min);
    same = hi == lo;
  }
  if (!same) {
    raise(error_class::arg, {.call = call},
          quoted(name) +
              ": the ranks passed different extents, distributions, grids or element types");
  }
  if (!problem.empty()) raise(error_class::arg, {.call = call}, quoted(name) + ": " + problem);
  // The largest block is grid coordinate 0's in every dimension: team rank 0's.
  std::size_t elements = 1;
  bool overflow = false;
  std::string block = "(";
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const std::size_t w = halo.empty() ? 0 : halo[d];
    const std::size_t e = dims[d].local_extent(0) + 2 * w;  // (halo widths ≤ the extent)
    block += (d == 0 ? "" : " x ") + std::to_string(e);
    if (e != 0 && elements > std::numeric_limits<std::size_t>::max() / e) overflow = true;
    elements *= e;
  }
  block += ")";
  if (overflow || elements > std::numeric_limits<std::size_t>::max() / element) {
    raise(error_class::no_mem, {.call = call, .target = t.to_world(0)},
          quoted(name) + ": rank " + std::to_string(t.to_world(0)) + " would hold a block of " +
              block + " elements of " + std::to_string(element) +
              " bytes, more than an address space holds");
  }
  std::size_t bytes = elements * element;
  array_storage s;
  if (!halo.empty()) {  // the exchange words after the block, 8-byte aligned
    s.control = (bytes + 7) / 8 * 8;
    bytes = s.control + 2 * exchange_slots * sizeof(std::uint64_t);
    align = std::max(align, alignof(std::uint64_t));
  }
  const auto too_large = [&](const std::string& why) {
    raise(error_class::no_mem, {.call = call, .target = t.to_world(0), .bytes = bytes},
          quoted(name) + ": rank " + std::to_string(t.to_world(0)) + "'s block of " + block +
              " elements (" + std::to_string(bytes) + " bytes) does not fit " + why);
  };
  if (whole_world(t)) {  // collective over the world, raising on every rank alike
    try {
      s.mine = symmetric_allocate_bytes(bytes, align);
    } catch (const oneside::error& e) {
      if (e.error_class() != error_class::no_mem) throw;
      too_large(std::string("its symmetric heap: ") + e.what());
    }
  } else {  // each member's block from its own part of the global heap; all or none
    std::string failure;
    try {
      s.mine = heap_allocate(bytes, align);
    } catch (const oneside::error& e) {
      if (e.error_class() != error_class::no_mem) throw;
      failure = e.what();
    }
    if (allreduce(t, failure.empty() ? 0 : 1, op::max) != 0) {
      if (s.mine) heap_deallocate(s.mine);
      too_large("the global heap of every member" +
                (failure.empty() ? std::string() : ": " + failure));
    }
  }
  if (!halo.empty()) {  // zeroed before the allgather below, so before any rank signals
    auto* words = reinterpret_cast<std::uint64_t*>(s.mine.address() + s.control);
    std::fill(words, words + 2 * exchange_slots, std::uint64_t{0});
  }
  const std::vector<std::uint64_t> at = allgather(t, std::uint64_t{s.mine.address()});
  s.bases.assign(at.begin(), at.end());
  s.world_ranks.resize(at.size());
  for (std::size_t r = 0; r < at.size(); ++r) s.world_ranks[r] = t.to_world(static_cast<rank_t>(r));
  return s;
}

void destroy_array(global_ptr<void> mine, const team& t) noexcept {
  try {
    if (whole_world(t)) {
      symmetric_free(mine);
    } else {
      barrier(t);  // no member reads or writes the blocks any more
      heap_deallocate(mine);
    }
  } catch (...) {
    // A destructor cannot report it; symmetric_free raised on every rank alike and freed
    // nothing, so the heap stays consistent.
  }
}

void regions_differ(const array_desc& a, const std::size_t* from_extents,
                    const std::size_t* to_extents) {
  const std::size_t n = a.dims.size();
  raise(error_class::arg, {.call = "dist_array copy"},
        quoted(a.name) + ": a region of extents " + tuple(from_extents, n) +
            " cannot be copied to one of extents " + tuple(to_extents, n));
}

void index_out_of_range(const array_desc& a, const std::size_t* idx, const char* call) {
  raise(error_class::arg, {.call = call},
        quoted(a.name) + ": index " + tuple(idx, a.dims.size()) + " is outside the extents " +
            extents_of(a));
}

future<> move_region(const array_desc& a, const std::size_t* lo, const std::size_t* extents,
                     const void* in, void* out, std::size_t buf_elements, const char* call) {
  const std::size_t n = a.dims.size();
  const std::size_t total = checked_region(a, lo, extents, call);
  if (buf_elements != total) {
    raise(error_class::arg, {.call = call},
          quoted(a.name) + ": the buffer holds " + std::to_string(buf_elements) +
              " elements, the region of extents " + tuple(extents, n) + " " +
              std::to_string(total));
  }
  if (total == 0) return {};
  if (in == nullptr && out == nullptr) {
    raise(error_class::arg, {.call = call}, quoted(a.name) + ": the buffer is null");
  }

  std::array<std::vector<piece>, 3> pieces;
  std::array<std::size_t, 3> counts{};
  for (std::size_t d = 0; d < n; ++d) {
    pieces[d] = pieces_of(a.dims[d], lo[d], lo[d] + extents[d]);
    counts[d] = pieces[d].size();
  }
  const std::array<std::size_t, 3> stride = strides_of(extents, n, a.element);
  const datatype element = datatype::contiguous(static_cast<count_t>(a.element), byte_type());
  std::vector<future<>> pending;
  for_each_combination(std::span(counts.data(), n), [&](const std::array<std::size_t, 3>& k) {
    std::size_t rank = 0;
    std::array<count_t, 3> sizes{};
    std::array<count_t, 3> subsizes{};
    std::array<count_t, 3> starts{};
    std::array<const std::vector<std::ptrdiff_t>*, 3> offsets{};
    std::array<const std::vector<count_t>*, 3> lengths{};
    for (std::size_t d = 0; d < n; ++d) {
      const piece& p = pieces[d][k[d]];
      rank = rank * a.dims[d].procs + p.coord;
      const std::size_t w = halo_width(a, d);  // the owner's block is padded by it
      sizes[d] = static_cast<count_t>(a.dims[d].local_extent(p.coord) + 2 * w);
      subsizes[d] = static_cast<count_t>(p.lhi - p.llo);
      starts[d] = static_cast<count_t>(p.llo + w);
      offsets[d] = &p.offsets;
      lengths[d] = &p.lengths;
    }
    const rank_t target = a.world_ranks[rank];
    // One run on both sides (a block of whole rows, as in a 1-D block array): a plain copy.
    // (With one run per dimension, the run's length is the owner's subsize.)
    if (all_single(lengths.data(), n) && is_one_run(sizes.data(), subsizes.data(), n) &&
        is_one_run(extents, subsizes.data(), n)) {
      std::size_t at = 0;   // in the owner's block, elements
      std::size_t off = 0;  // in the buffer, elements
      for (std::size_t d = 0; d < n; ++d) {
        at = at * static_cast<std::size_t>(sizes[d]) + static_cast<std::size_t>(starts[d]);
        off += static_cast<std::size_t>((*offsets[d])[0]) * (stride[d] / a.element);
      }
      const std::size_t bytes =
          static_cast<std::size_t>(box_elements(subsizes.data(), n)) * a.element;
      const std::uintptr_t addr = a.bases[rank] + at * a.element;
      if (in != nullptr) {
        const auto* src = static_cast<const std::byte*>(in) + off * a.element;
        if (void* p = local_address(target, addr, bytes)) {
          oneside::detail::copy_bytes(p, src, bytes);
        } else {
          pending.push_back(put_remote(target, addr, src, bytes, call));
        }
      } else {
        auto* dst = static_cast<std::byte*>(out) + off * a.element;
        if (const void* p = local_address(target, addr, bytes)) {
          oneside::detail::copy_bytes(dst, p, bytes);
        } else {
          pending.push_back(get_remote(target, addr, dst, bytes, call));
        }
      }
      return;
    }
    // A block this process maps (its own, a node peer's on shm): copied run by run.
    const std::size_t block_bytes =
        static_cast<std::size_t>(box_elements(sizes.data(), n)) * a.element;
    if (void* mapped = local_address(target, a.bases[rank], block_bytes)) {
      copy_mapped(in, out, static_cast<std::byte*>(mapped), sizes.data(), subsizes.data(),
                  starts.data(), offsets.data(), lengths.data(), stride.data(), a.element, n);
      return;
    }
    // The owner's side: a box of consecutive local indices of its block (one run per
    // dimension; built as the buffer's side is, which flattens faster than a subarray).
    std::array<std::vector<std::ptrdiff_t>, 3> box_offsets;
    std::array<std::vector<count_t>, 3> box_lengths;
    std::array<std::size_t, 3> box_extents{};
    for (std::size_t d = 0; d < n; ++d) {
      box_offsets[d].assign(1, static_cast<std::ptrdiff_t>(starts[d]));
      box_lengths[d].assign(1, subsizes[d]);
      box_extents[d] = static_cast<std::size_t>(sizes[d]);
    }
    const std::array<std::size_t, 3> box_stride = strides_of(box_extents.data(), n, a.element);
    std::array<const std::vector<std::ptrdiff_t>*, 3> bo{&box_offsets[0], &box_offsets[1],
                                                         &box_offsets[2]};
    std::array<const std::vector<count_t>*, 3> bl{&box_lengths[0], &box_lengths[1],
                                                  &box_lengths[2]};
    const datatype block = nested_runs(std::span(bo.data(), n), std::span(bl.data(), n),
                                       std::span(box_stride.data(), n), element);
    const datatype buffer = nested_runs(std::span(offsets.data(), n), std::span(lengths.data(), n),
                                        std::span(stride.data(), n), element);
    if (in != nullptr) {
      pending.push_back(put_layout(in, 1, buffer, target, a.bases[rank], 1, block));
    } else {
      pending.push_back(get_layout(target, a.bases[rank], 1, block, out, 1, buffer));
    }
  });
  if (pending.size() == 1) return std::move(pending.front());
  return when_all(pending);
}

void copy_region(const array_desc& from, const std::size_t* from_lo, const array_desc& to,
                 const std::size_t* to_lo, const std::size_t* extents, const team& t) {
  const char* call = "dist_array copy";
  const std::size_t n = to.dims.size();
  (void)checked_region(from, from_lo, extents, call);
  const std::size_t total = checked_region(to, to_lo, extents, call);
  if (from.element != to.element || from.dims.size() != n) {
    raise(error_class::arg, {.call = call},
          quoted(from.name) + " and " + quoted(to.name) + " hold different element types");
  }
  if (from.bases.data() == to.bases.data()) {
    bool overlap = true;
    for (std::size_t d = 0; d < n; ++d) {
      overlap = overlap && from_lo[d] < to_lo[d] + extents[d] && to_lo[d] < from_lo[d] + extents[d];
    }
    if (overlap && total != 0) {
      raise(error_class::arg, {.call = call},
            quoted(to.name) + ": the regions from " + tuple(from_lo, n) + " and from " +
                tuple(to_lo, n) + " overlap");
    }
  }
  barrier(t);  // every rank's earlier writes to `from` are done
  const rank_t me = t.rank();
  const std::size_t mine = static_cast<std::size_t>(me);
  // This rank's grid coordinates in `to`.
  std::array<std::size_t, 3> coord{};
  std::size_t rest = mine;
  for (std::size_t d = n; d-- > 0;) {
    coord[d] = rest % to.dims[d].procs;
    rest /= to.dims[d].procs;
  }
  // Per dimension and owner coordinate of `from`: runs consecutive in both local index
  // spaces, as (from's local offset, to's local offset, length).
  struct runs {
    std::vector<std::ptrdiff_t> from_offsets;
    std::vector<std::ptrdiff_t> to_offsets;
    std::vector<count_t> lengths;
  };
  std::array<std::vector<runs>, 3> by_owner;
  std::array<std::vector<std::size_t>, 3> owners;  // the from coordinates with runs
  std::array<std::size_t, 3> to_extent{};
  std::array<std::size_t, 3> from_extent{};
  bool empty = total == 0;
  for (std::size_t d = 0; d < n && !empty; ++d) {
    const dim_map& fm = from.dims[d];
    const dim_map& tm = to.dims[d];
    to_extent[d] = tm.local_extent(coord[d]) + 2 * halo_width(to, d);
    by_owner[d].assign(fm.procs, runs{});
    for (const piece& p : pieces_of(tm, to_lo[d], to_lo[d] + extents[d])) {
      if (p.coord != coord[d]) continue;
      for (std::size_t r = 0; r < p.offsets.size(); ++r) {
        // Global indices [g, g + len) of `to`, [f, f + len) of `from`, cut at from's blocks.
        const std::size_t g0 = to_lo[d] + static_cast<std::size_t>(p.offsets[r]);
        const auto len = static_cast<std::size_t>(p.lengths[r]);
        for (std::size_t i = 0; i < len;) {
          const std::size_t f = from_lo[d] + (g0 - to_lo[d]) + i;
          const std::size_t piece_len = std::min(len - i, fm.block - f % fm.block);
          runs& o = by_owner[d][fm.owner(f)];
          // (Storage offsets: local indices shifted by the halos' padding.)
          const auto fl = static_cast<std::ptrdiff_t>(fm.local(f) + halo_width(from, d));
          const auto tl = static_cast<std::ptrdiff_t>(tm.local(g0 + i) + halo_width(to, d));
          if (!o.lengths.empty() && o.from_offsets.back() + o.lengths.back() == fl &&
              o.to_offsets.back() + o.lengths.back() == tl) {
            o.lengths.back() += static_cast<count_t>(piece_len);
          } else {
            o.from_offsets.push_back(fl);
            o.to_offsets.push_back(tl);
            o.lengths.push_back(static_cast<count_t>(piece_len));
          }
          i += piece_len;
        }
      }
    }
    for (std::size_t c = 0; c < fm.procs; ++c) {
      if (!by_owner[d][c].lengths.empty()) owners[d].push_back(c);
    }
    empty = owners[d].empty();
  }
  std::vector<future<>> pending;
  if (!empty) {
    std::array<std::size_t, 3> counts{};
    for (std::size_t d = 0; d < n; ++d) counts[d] = owners[d].size();
    const std::array<std::size_t, 3> to_stride = strides_of(to_extent.data(), n, to.element);
    const datatype element = datatype::contiguous(static_cast<count_t>(to.element), byte_type());
    auto* dst = reinterpret_cast<void*>(to.bases[mine]);  // this rank's own block
    for_each_combination(std::span(counts.data(), n), [&](const std::array<std::size_t, 3>& k) {
      std::size_t owner = 0;
      std::array<const std::vector<std::ptrdiff_t>*, 3> f_off{};
      std::array<const std::vector<std::ptrdiff_t>*, 3> t_off{};
      std::array<const std::vector<count_t>*, 3> lengths{};
      for (std::size_t d = 0; d < n; ++d) {
        const std::size_t c = owners[d][k[d]];
        owner = owner * from.dims[d].procs + c;
        from_extent[d] = from.dims[d].local_extent(c) + 2 * halo_width(from, d);
        const runs& r = by_owner[d][c];
        f_off[d] = &r.from_offsets;
        t_off[d] = &r.to_offsets;
        lengths[d] = &r.lengths;
      }
      const std::array<std::size_t, 3> from_stride =
          strides_of(from_extent.data(), n, from.element);
      const datatype source = nested_runs(std::span(f_off.data(), n), std::span(lengths.data(), n),
                                          std::span(from_stride.data(), n), element);
      const datatype target = nested_runs(std::span(t_off.data(), n), std::span(lengths.data(), n),
                                          std::span(to_stride.data(), n), element);
      pending.push_back(
          get_layout(from.world_ranks[owner], from.bases[owner], 1, source, dst, 1, target));
    });
  }
  for (const future<>& f : pending) f.wait();
  barrier(t);  // every rank's part of `to` is in place
}

// ---- halos -------------------------------------------------------------------------------

namespace {

// One dimension of a halo box: padded indices [dst, dst + len) of the receiver's block take
// padded indices [src, src + len) of the sender's.
struct segment {
  std::size_t dst = 0;
  std::size_t src = 0;
  std::size_t len = 0;
};

// The segments of dimension d for direction `dir` (-1, 0, +1: the receiver's halo below its
// cells, its cells, the halo above) between a receiver of extent er and a sender of extent
// es, halo width w. Beyond the sender's extent the source wraps around it (which happens only
// when sender and receiver are the one rank of a periodic dimension).
void segments_of(int dir, std::size_t er, std::size_t es, std::size_t w,
                 std::vector<segment>& out) {
  out.clear();
  if (dir == 0) {
    out.push_back({w, w, er});
    return;
  }
  std::size_t q = dir < 0 ? 0 : w + er;              // padded index in the receiver
  std::size_t p = dir < 0 ? (es - w % es) % es : 0;  // local index in the sender
  for (std::size_t rest = w; rest > 0;) {
    const std::size_t len = std::min(rest, es - p);
    out.push_back({q, p + w, len});
    q += len;
    rest -= len;
    p = 0;
  }
}

// A box of a halo: per dimension its padded start in the receiver's and the sender's block,
// and its length.
struct box {
  std::array<std::size_t, 3> dst{};
  std::array<std::size_t, 3> src{};
  std::array<std::size_t, 3> len{};
};

// Copies a box between two mapped padded blocks (strides in bytes), one run of the last
// dimension at a time.
void copy_box(std::byte* dst, const std::array<std::size_t, 3>& dst_stride, const std::byte* src,
              const std::array<std::size_t, 3>& src_stride, const box& b, std::size_t n,
              std::size_t element) {
  const std::size_t last = n - 1;
  const std::size_t bytes = b.len[last] * element;
  std::array<std::size_t, 3> counts{};
  for (std::size_t d = 0; d < last; ++d) counts[d] = b.len[d];
  for_each_combination(std::span(counts.data(), last), [&](const std::array<std::size_t, 3>& i) {
    std::size_t to = b.dst[last] * element;
    std::size_t from = b.src[last] * element;
    for (std::size_t d = 0; d < last; ++d) {
      to += (b.dst[d] + i[d]) * dst_stride[d];
      from += (b.src[d] + i[d]) * src_stride[d];
    }
    oneside::detail::copy_bytes(dst + to, src + from, bytes);
  });
}

}  // namespace

// What one rank's halo exchanges do, worked out once per array (make_halo_plan): per
// direction it sends to, the receiver's block and words and the boxes (copied when the block
// is mapped here, else one layout put per box with its types built once), the grant words of
// the neighbours it receives from, and its own words.
struct halo_plan {
  struct send {
    rank_t target = 0;                    // world rank
    std::size_t slot = 0;                 // the direction, seen from the receiver
    std::byte* mapped = nullptr;          // the receiver's block, when this process maps it
    std::uintptr_t base = 0;              // else its address there
    std::array<std::size_t, 3> stride{};  // its padded strides, bytes
    global_ptr<std::uint64_t> arrival;    // its arrival word of `slot`
    std::vector<box> boxes;
    std::vector<datatype> src_types;  // per box, when not mapped
    std::vector<datatype> dst_types;
  };

  std::size_t n = 0;
  std::size_t element = 0;
  std::byte* mine = nullptr;  // this rank's padded block
  std::array<std::size_t, 3> stride{};
  const std::uint64_t* grants = nullptr;    // this rank's words
  const std::uint64_t* arrivals = nullptr;  // "
  std::vector<send> sends;
  std::vector<std::size_t> expected;                   // the slots this rank receives from
  std::vector<global_ptr<std::uint64_t>> grant_words;  // of the senders, one per slot
};

namespace {

// One halo_exchange of one rank, advanced by polling (see exchange_halo): each send is put
// once the receiver granted the epoch, then the receiver's arrival word is set; then the
// arrival words of the directions this rank receives from.
class halo_exchange_state {
 public:
  halo_exchange_state(std::shared_ptr<const halo_plan> p, std::uint64_t e)
      : plan_(std::move(p)), epoch_(e), sends_(plan_->sends.size()) {}

  std::vector<future<>> grant_stores;

  bool poll() {
    bool done = true;
    for (std::size_t i = 0; i < sends_.size(); ++i) {
      const halo_plan::send& s = plan_->sends[i];
      send_progress& st = sends_[i];
      if (st.stage == 0) {
        if (load_word(plan_->grants + s.slot) < epoch_) {
          done = false;
          continue;
        }
        issue(s, st);
      }
      if (st.stage == 1) {
        bool ready = true;
        for (const future<>& f : st.puts) ready = ready && f.is_ready();
        if (!ready) {
          done = false;
          continue;
        }
        st.puts.clear();
        st.signal = oneside::store(s.arrival, epoch_);
        st.stage = 2;
      }
      if (st.stage == 2) {
        if (!st.signal.is_ready()) {
          done = false;
          continue;
        }
        st.stage = 3;
      }
    }
    for (const future<>& f : grant_stores) done = done && f.is_ready();
    if (!done) return false;
    for (const std::size_t slot : plan_->expected) {
      if (load_word(plan_->arrivals + slot) < epoch_) return false;
    }
    return true;
  }

 private:
  struct send_progress {
    int stage = 0;  // 0: waits for the grant, 1: puts in flight, 2: arrival word set, 3: done
    std::vector<future<>> puts;
    future<> signal;
  };

  static std::uint64_t load_word(const std::uint64_t* w) noexcept {
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(w))
        .load(std::memory_order_acquire);
  }
  // Moves the boxes of `s`: copied into a mapped block (then its arrival word is set at
  // once), else one layout put per box.
  void issue(const halo_plan::send& s, send_progress& st) {
    const halo_plan& p = *plan_;
    if (s.mapped != nullptr) {
      for (const box& b : s.boxes)
        copy_box(s.mapped, s.stride, p.mine, p.stride, b, p.n, p.element);
      st.signal = oneside::store(s.arrival, epoch_);
      st.stage = 2;
      return;
    }
    for (std::size_t b = 0; b < s.boxes.size(); ++b) {
      st.puts.push_back(put_layout(p.mine, 1, s.src_types[b], s.target, s.base, 1, s.dst_types[b]));
    }
    st.stage = 1;
  }

  std::shared_ptr<const halo_plan> plan_;
  std::uint64_t epoch_;
  std::vector<send_progress> sends_;
};

// The slot of direction `dir` (entries -1, 0, +1) in a neighbourhood of n dimensions.
std::size_t slot_of(const std::array<int, 3>& dir, std::size_t n) {
  std::size_t s = 0;
  for (std::size_t d = 0; d < n; ++d) s = s * 3 + static_cast<std::size_t>(dir[d] + 1);
  return s;
}

}  // namespace

std::string halo_problem(std::span<const dim_map> dims, std::span<const distribution> dists,
                         std::span<const std::size_t> width) {
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const std::size_t w = width[d];
    const distribution::kind k = dists[d].how;
    if (w != 0 && (k == distribution::kind::cyclic || k == distribution::kind::block_cyclic)) {
      return "a halo of width " + std::to_string(w) + " in dimension " + std::to_string(d) +
             ", which is " + (k == distribution::kind::cyclic ? "cyclic" : "block-cyclic") +
             ": halos need a block or none distribution";
    }
  }
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const std::size_t w = width[d];
    // (Padded extents must not wrap around; the block's size is checked afterwards.)
    if (w > (std::numeric_limits<std::size_t>::max() - dims[d].extent) / 4) {
      return "the halo of width " + std::to_string(w) + " in dimension " + std::to_string(d) +
             " is wider than an address space holds";
    }
    // Spread over several ranks, each takes its halo from one neighbour per side.
    if (w == 0 || dims[d].procs < 2) continue;
    for (std::size_t c = 0; c < dims[d].procs; ++c) {
      if (dims[d].local_extent(c) < w) {
        return "the halo of width " + std::to_string(w) + " in dimension " + std::to_string(d) +
               " is wider than the " + std::to_string(dims[d].local_extent(c)) +
               " elements grid coordinate " + std::to_string(c) + " of that dimension holds";
      }
    }
  }
  return {};
}

std::shared_ptr<const halo_plan> make_halo_plan(const array_desc& a, rank_t me,
                                                std::span<const bool> periodic) {
  const std::size_t n = a.dims.size();
  if (a.bases.empty()) {
    raise(error_class::arg, {.call = "dist_array::halo_exchange"},
          quoted(a.name) + " was moved from");
  }
  auto x = std::make_shared<halo_plan>();
  x->n = n;
  x->element = a.element;
  const auto mine = static_cast<std::size_t>(me);
  x->mine = reinterpret_cast<std::byte*>(a.bases[mine]);
  x->grants = reinterpret_cast<const std::uint64_t*>(a.bases[mine] + a.control);
  x->arrivals = x->grants + exchange_slots;
  // Grid coordinates and padded extents.
  auto coords_of = [&](std::size_t r) {
    std::array<std::size_t, 3> c{};
    for (std::size_t d = n; d-- > 0;) {
      c[d] = r % a.dims[d].procs;
      r /= a.dims[d].procs;
    }
    return c;
  };
  auto rank_of = [&](const std::array<std::size_t, 3>& c) {
    std::size_t r = 0;
    for (std::size_t d = 0; d < n; ++d) r = r * a.dims[d].procs + c[d];
    return r;
  };
  auto padded = [&](const std::array<std::size_t, 3>& c) {
    std::array<std::size_t, 3> e{};
    for (std::size_t d = 0; d < n; ++d) e[d] = a.dims[d].local_extent(c[d]) + 2 * a.halo[d];
    return e;
  };
  const std::array<std::size_t, 3> me_c = coords_of(mine);
  const std::array<std::size_t, 3> me_e = padded(me_c);
  x->stride = strides_of(me_e.data(), n, a.element);
  // The neighbour coordinates me_c + sign * dir (false: none, beyond a non-periodic edge).
  auto neighbour = [&](const std::array<int, 3>& dir, int sign, std::array<std::size_t, 3>& c) {
    for (std::size_t d = 0; d < n; ++d) {
      c[d] = me_c[d];
      if (dir[d] == 0) continue;
      const auto p = static_cast<std::ptrdiff_t>(a.dims[d].procs);
      std::ptrdiff_t k = static_cast<std::ptrdiff_t>(me_c[d]) + sign * dir[d];
      if (k < 0 || k >= p) {
        if (!periodic[d]) return false;
        k = (k % p + p) % p;
      }
      c[d] = static_cast<std::size_t>(k);
    }
    return true;
  };
  std::array<std::size_t, 3> counts{};
  for (std::size_t d = 0; d < n; ++d) counts[d] = 3;
  std::array<std::vector<segment>, 3> segs;
  for_each_combination(std::span(counts.data(), n), [&](const std::array<std::size_t, 3>& k) {
    std::array<int, 3> dir{};
    bool centre = true;
    for (std::size_t d = 0; d < n; ++d) {
      dir[d] = static_cast<int>(k[d]) - 1;
      if (dir[d] != 0 && a.halo[d] == 0) return;  // an empty halo box
      // Along a dimension without halo the box spans this rank's cells (and its partner's,
      // at the same coordinate): none there, nothing moves either way.
      if (dir[d] == 0 && a.dims[d].local_extent(me_c[d]) == 0) return;
      centre = centre && dir[d] == 0;
    }
    if (centre) return;
    const std::size_t slot = slot_of(dir, n);
    std::array<std::size_t, 3> c{};
    // Receiving: my halo in direction dir comes from me + dir; grant it that epoch.
    if (neighbour(dir, +1, c)) {
      const std::size_t from = rank_of(c);
      x->expected.push_back(slot);
      const std::uintptr_t word = a.bases[from] + a.control + slot * sizeof(std::uint64_t);
      x->grant_words.emplace_back(a.world_ranks[from], word);
    }
    // Sending: my cells on the far side fill the halo in direction dir of me - dir.
    if (neighbour(dir, -1, c)) {
      const std::size_t to = rank_of(c);
      halo_plan::send s;
      s.target = a.world_ranks[to];
      s.slot = slot;
      s.base = a.bases[to];
      const std::array<std::size_t, 3> to_e = padded(c);
      s.stride = strides_of(to_e.data(), n, a.element);
      s.mapped =
          to == mine
              ? x->mine
              : static_cast<std::byte*>(local_address(s.target, s.base, s.stride[0] * to_e[0]));
      s.arrival = global_ptr<std::uint64_t>(
          s.target, s.base + a.control + (exchange_slots + slot) * sizeof(std::uint64_t));
      std::array<std::size_t, 3> nseg{};
      for (std::size_t d = 0; d < n; ++d) {
        segments_of(dir[d], a.dims[d].local_extent(c[d]), a.dims[d].local_extent(me_c[d]),
                    a.halo[d], segs[d]);
        nseg[d] = segs[d].size();
      }
      for_each_combination(std::span(nseg.data(), n), [&](const std::array<std::size_t, 3>& i) {
        box b;
        for (std::size_t d = 0; d < n; ++d) {
          const segment& g = segs[d][i[d]];
          b.dst[d] = g.dst;
          b.src[d] = g.src;
          b.len[d] = g.len;
        }
        s.boxes.push_back(b);
      });
      if (s.mapped == nullptr) {  // one layout put per box: its two types
        const datatype element_type =
            datatype::contiguous(static_cast<count_t>(a.element), byte_type());
        for (const box& b : s.boxes) {
          std::array<std::vector<std::ptrdiff_t>, 3> src_off, dst_off;
          std::array<std::vector<count_t>, 3> lengths;
          std::array<const std::vector<std::ptrdiff_t>*, 3> so{}, dof{};
          std::array<const std::vector<count_t>*, 3> ls{};
          for (std::size_t d = 0; d < n; ++d) {
            src_off[d].assign(1, static_cast<std::ptrdiff_t>(b.src[d]));
            dst_off[d].assign(1, static_cast<std::ptrdiff_t>(b.dst[d]));
            lengths[d].assign(1, static_cast<count_t>(b.len[d]));
            so[d] = &src_off[d];
            dof[d] = &dst_off[d];
            ls[d] = &lengths[d];
          }
          s.src_types.push_back(nested_runs(std::span(so.data(), n), std::span(ls.data(), n),
                                            std::span(x->stride.data(), n), element_type));
          s.dst_types.push_back(nested_runs(std::span(dof.data(), n), std::span(ls.data(), n),
                                            std::span(s.stride.data(), n), element_type));
        }
      }
      x->sends.push_back(std::move(s));
    }
  });
  return x;
}

future<> exchange_halo(const std::shared_ptr<const halo_plan>& plan, std::uint64_t epoch) {
  auto x = std::make_shared<halo_exchange_state>(plan, epoch);
  for (const global_ptr<std::uint64_t>& w : plan->grant_words) {
    future<> f = oneside::store(w, epoch);
    if (!f.is_ready()) x->grant_stores.push_back(std::move(f));
  }
  return make_pending_future([x] { return x->poll(); });
}

}  // namespace oneside::pgas::detail
