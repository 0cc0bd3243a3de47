// The symmetric heap (symmetric_heap.hpp) and the calls of symmetric_heap.hpp (public) and of
// global_ptr::on that need it.
#include "heap/symmetric_heap.hpp"

#include <algorithm>
#include <exception>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include <oneside/pgas/symmetric_heap.hpp>
#include <oneside/runtime/collectives.hpp>

#include "context/pgas_context.hpp"
#include "runtime/check.hpp"
#include "runtime/hex.hpp"

namespace oneside::pgas::detail {
namespace {

using oneside::detail::hex;
using oneside::detail::raise;

constexpr std::size_t page = free_list::arena_alignment;
constexpr unsigned offset_bits = 40;  // free_list::max_arena_bytes == 1 << 40
static_assert(free_list::max_arena_bytes == std::size_t{1} << offset_bits);
// The largest request any segment could serve (its size plus alignment, tags and fences
// stays below free_list::max_arena_bytes); larger ones are error(no_mem) at once.
constexpr std::size_t max_request = free_list::max_arena_bytes - 2 * free_list::max_alignment;

constexpr std::size_t round_up(std::size_t n, std::size_t to) noexcept {
  return (n + to - 1) / to * to;
}

std::int64_t clamp64(std::size_t v) noexcept {
  constexpr auto top = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
  return static_cast<std::int64_t>(std::min(v, top));
}

bool valid_alignment(std::size_t align) noexcept {
  return align != 0 && (align & (align - 1)) == 0 && align <= free_list::max_alignment;
}

// The smallest and largest of `v` over the world, in one allreduce (min of v and of -v).
struct range {
  std::int64_t lo;
  std::int64_t hi;
  bool is_one_value() const noexcept { return lo == hi; }
};
std::array<range, 2> world_range(const team& world, std::int64_t a, std::int64_t b) {
  const std::array<std::int64_t, 4> mine{a, b, -a, -b};
  std::array<std::int64_t, 4> low{};
  allreduce(world, mine, low, op::min);
  return {range{low[0], -low[2]}, range{low[1], -low[3]}};
}

}  // namespace

symmetric_heap::symmetric_heap(transport::backend& t, const team& world, std::size_t segment_bytes,
                               std::size_t cap)
    : transport_(t),
      world_(world),
      rank_(world.rank()),
      ranks_(static_cast<std::size_t>(world.size())),
      segment_bytes_(round_up(segment_bytes == 0 ? page : segment_bytes, page)),
      cap_(cap) {
  // Segments are reserved as blocks reach into them (only allocate(), a collective of one
  // thread per rank, adds segments or calls this).
  list_.set_reserve(
      [this](void* base, std::size_t offset, std::size_t bytes, std::string_view call) {
        for (const transport::segment& s : segments_) {
          if (s.base() == base) return transport_.reserve(s, offset, bytes, call);
        }
        raise(error_class::intern, {.call = call}, "the symmetric heap has no segment there");
      });
}

symmetric_heap::~symmetric_heap() = default;

void* symmetric_heap::allocate(std::size_t bytes, std::size_t align) {
  const error_context where{.call = "symmetric_allocate", .bytes = bytes};
  // 1. The same request on every rank, before anything changes. Every rank sees the same
  // ranges, so every rank raises alike.
  const std::array<range, 2> asked = world_range(world_, clamp64(bytes), clamp64(align));
  if (!asked[0].is_one_value() || !asked[1].is_one_value()) {
    raise(error_class::arg, where,
          "the ranks asked for different blocks (bytes from " + std::to_string(asked[0].lo) +
              " to " + std::to_string(asked[0].hi) + ", alignment from " +
              std::to_string(asked[1].lo) + " to " + std::to_string(asked[1].hi) +
              "): every rank must pass the same n, T and align; nothing was allocated");
  }
  ONESIDE_CHECK(valid_alignment(align), error_class::arg, where,
                "alignment " + std::to_string(align) + " is not a power of two from 1 to 4096");
  ONESIDE_CHECK(bytes <= max_request, error_class::no_mem, where,
                "larger than the symmetric heap can ever serve");

  // 2. The same calls on the same segments give the same offsets; the allreduce that checks
  // so is also the barrier (every rank has its block when any returns). A rank whose block
  // reaches memory it cannot reserve says so (-2) instead of its offset.
  constexpr std::int64_t no_room = -1;
  constexpr std::int64_t unreserved = -2;
  std::exception_ptr why_unreserved;
  void* p = nullptr;
  const auto place = [&] {
    try {
      p = list_.allocate(bytes, align, where.call);
    } catch (const error& e) {
      if (e.error_class() != error_class::no_mem) throw;
      why_unreserved = std::current_exception();
      return world_range(world_, unreserved, 0)[0];
    }
    return world_range(
        world_, p != nullptr ? offset_of(reinterpret_cast<std::uintptr_t>(p)) : no_room, 0)[0];
  };
  range got = place();
  if (got.lo >= no_room && got.hi < 0) {
    // No rank had room (all alike): a new segment everywhere, then again.
    grow(bytes, align);
    got = place();
  }
  if (got.is_one_value() && got.lo >= 0) return p;
  if (p != nullptr) list_.deallocate(p);
  if (got.lo == unreserved) {
    if (why_unreserved) std::rethrow_exception(why_unreserved);
    raise(error_class::no_mem, where,
          "another rank could not reserve shared memory for its block, so no rank allocated it");
  }
  raise(error_class::intern, where,
        "the ranks' symmetric heaps diverged (the block would lie at heap offsets " +
            std::to_string(got.lo) + " to " + std::to_string(got.hi) + ")");
}

void symmetric_heap::grow(std::size_t bytes, std::size_t align) {
  const error_context where{.call = "symmetric_allocate", .bytes = bytes};
  // What one block of `bytes` at `align` needs in a fresh segment, tags and fences included;
  // the same on every rank, as the request is.
  const std::size_t need = round_up(
      bytes + align + free_list::block_overhead + free_list::min_block + free_list::arena_overhead,
      page);
  const std::size_t size = std::max(segment_bytes_, need);
  const std::size_t n = count_.load(std::memory_order_relaxed);
  const std::size_t reserved_front = round_up(free_list::first_block_extent(bytes, align), page);

  // This rank's segment, or why there is none (not raised yet: every rank must reach the
  // allgather).
  std::string why;
  std::exception_ptr no_memory;  // the transport's own no_mem, raised as it is on this rank
  transport::segment seg;
  if (n == max_segments) {
    why = "the symmetric heap has " + std::to_string(max_segments) + " segments already";
  } else if (cap_ != 0 && total_bytes_ + size > cap_) {
    why = "the symmetric heap would exceed its cap of " + std::to_string(cap_) +
          " bytes (ONESIDE_HEAP_MAX_BYTES; " + std::to_string(total_bytes_) +
          " bytes in segments, " + std::to_string(size) + " more needed)";
  } else {
    try {
      // Reserved as far as the block it is made for reaches, and its last page (the free
      // list's end fence); the rest as blocks reach it.
      seg = transport_.allocate_segment(
          size, {.call = where.call, .reserve_front = reserved_front, .reserve_back = page});
    } catch (const error& e) {
      why = std::string("no segment of ") + std::to_string(size) + " bytes: " + e.what();
      if (e.error_class() == error_class::no_mem) no_memory = std::current_exception();
    } catch (const std::exception& e) {
      why = std::string("no segment of ") + std::to_string(size) + " bytes: " + e.what();
    }
  }
  const std::array<std::uint64_t, 2> mine{why.empty() ? seg.address() : 0, size};
  std::vector<std::uint64_t> all(2 * ranks_);
  allgather(world_, mine, all);
  rank_t failed = no_rank;
  bool sizes_differ = false;
  for (std::size_t r = 0; r < ranks_; ++r) {
    if (all[2 * r] == 0 && failed == no_rank) failed = static_cast<rank_t>(r);
    if (all[2 * r + 1] != size) sizes_differ = true;
  }
  if (failed != no_rank || sizes_differ) {
    if (no_memory) std::rethrow_exception(no_memory);
    ONESIDE_CHECK(why.empty(), error_class::no_mem, where, why);
    ONESIDE_CHECK(
        failed == no_rank, error_class::no_mem, where,
        "rank " + std::to_string(failed) + " could not grow its symmetric heap, so no rank did");
    raise(error_class::arg, where,
          "the ranks would grow their symmetric heaps by segments of different sizes "
          "(ONESIDE_HEAP_SEGMENT_BYTES must be the same on every rank)");
  }

  list_.add_arena(seg.base(), size, reserved_front);
  segment_row& row = rows_[n];
  row.bytes = size;
  row.bases = std::make_unique<std::uintptr_t[]>(ranks_);
  for (std::size_t r = 0; r < ranks_; ++r) row.bases[r] = static_cast<std::uintptr_t>(all[2 * r]);
  total_bytes_ += size;
  segments_.push_back(std::move(seg));
  count_.store(n + 1, std::memory_order_release);
}

void symmetric_heap::deallocate(rank_t from, std::uintptr_t addr) {
  const error_context where{.call = "symmetric_free", .target = from};
  // This rank's copy, its offset and whether it is a live block, without raising: every rank
  // must reach the agreement, then all raise alike.
  std::int64_t at = -1;  // null
  std::exception_ptr problem;
  void* mine = nullptr;
  if (addr != 0) {
    at = -2;  // not in the symmetric heap (or a bad rank)
    if (from < 0 || static_cast<std::size_t>(from) >= ranks_) {
      problem = std::make_exception_ptr(error(
          error_class::rank,
          oneside::detail::format_error(error_class::rank, where,
                                        "rank " + std::to_string(from) + " is not in the world (" +
                                            std::to_string(ranks_) + " ranks)")));
    } else if (const std::uintptr_t local = translate(from, addr, rank_); local == 0) {
      problem = std::make_exception_ptr(error(
          error_class::arg,
          oneside::detail::format_error(error_class::arg, where,
                                        hex(addr) + " of rank " + std::to_string(from) +
                                            " is not in the symmetric heap (symmetric_allocate)")));
    } else {
      at = offset_of(local);
      mine = reinterpret_cast<void*>(local);
      try {
        list_.check_block(mine, "symmetric_free");
      } catch (const oneside::error&) {
        problem = std::current_exception();
      }
    }
  }
  const std::array<range, 2> seen = world_range(world_, at, problem != nullptr ? 1 : 0);
  if (!seen[0].is_one_value()) {
    raise(error_class::arg, where,
          "the ranks passed different blocks (heap offsets " + std::to_string(seen[0].lo) + " to " +
              std::to_string(seen[0].hi) + "; -1 is null, -2 outside the symmetric " +
              "heap): every rank must free the same block; nothing was freed");
  }
  if (problem != nullptr) std::rethrow_exception(problem);
  ONESIDE_CHECK(seen[1].hi == 0, error_class::arg, where,
                "the block is no live block of the symmetric heap on another rank; nothing was "
                "freed");
  if (mine != nullptr) list_.deallocate(mine);
}

heap_stats_t symmetric_heap::stats() const {
  return as_heap_stats(list_.stats());
}

std::uintptr_t symmetric_heap::translate(rank_t from, std::uintptr_t addr,
                                         rank_t to) const noexcept {
  const std::size_t n = count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    const segment_row& row = rows_[i];
    const std::uintptr_t base = row.bases[static_cast<std::size_t>(from)];
    if (addr - base < row.bytes) return row.bases[static_cast<std::size_t>(to)] + (addr - base);
  }
  return 0;
}

std::int64_t symmetric_heap::offset_of(std::uintptr_t addr) const noexcept {
  const std::size_t n = count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    const segment_row& row = rows_[i];
    const std::uintptr_t base = row.bases[static_cast<std::size_t>(rank_)];
    if (addr - base < row.bytes) {
      return static_cast<std::int64_t>((i << offset_bits) | (addr - base));
    }
  }
  return -1;
}

std::uintptr_t symmetric_address(rank_t from, std::uintptr_t addr, rank_t to) {
  pgas_context& s = get_context("global_ptr::on");
  const auto ranks = static_cast<rank_t>(s.size());
  ONESIDE_CHECK(
      to >= 0 && to < ranks, error_class::rank, {.call = "global_ptr::on", .target = to},
      "rank " + std::to_string(to) + " is not in the world (" + std::to_string(ranks) + " ranks)");
  ONESIDE_CHECK(from >= 0 && from < ranks, error_class::rank,
                {.call = "global_ptr::on", .target = from},
                "the pointer's rank " + std::to_string(from) + " is not in the world (" +
                    std::to_string(ranks) + " ranks)");
  const std::uintptr_t a = s.symmetric().translate(from, addr, to);
  ONESIDE_CHECK(a != 0, error_class::arg, {.call = "global_ptr::on", .target = from},
                hex(addr) + " of rank " + std::to_string(from) +
                    " is not in the symmetric heap (symmetric_allocate)");
  return a;
}

global_ptr<void> symmetric_allocate_bytes(std::size_t bytes, std::size_t align) {
  pgas_context& s = get_context("symmetric_allocate");
  void* p = s.symmetric().allocate(bytes, align);
  return global_ptr<void>(s.rank(), reinterpret_cast<std::uintptr_t>(p));
}

void symmetric_free_block(global_ptr<void> p) {
  pgas_context& s = get_context("symmetric_free");
  s.symmetric().deallocate(p.where(), p.address());
}

}  // namespace oneside::pgas::detail

namespace oneside {

heap_stats_t symmetric_heap_stats() {
  return pgas::detail::get_context("symmetric_heap_stats").symmetric().stats();
}

}  // namespace oneside
