// The free-list allocator of the global heap: boundary tags, first fit in heap order,
// coalescing on free, and the checks that reject misuse before anything changes.
#include "pgas/free_list.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <string_view>

#include <oneside/runtime/error.hpp>

#include "runtime/check.hpp"
#include "runtime/hex.hpp"

namespace oneside::pgas::detail {

namespace {

using oneside::detail::hex;

// A tag word: cookie (bits 40..63) | size (bits 4..39, a multiple of 16) | in-use (bit 0).
using word = std::uint64_t;
constexpr std::size_t tag_bytes = sizeof(word);
constexpr int cookie_shift = 40;
constexpr word in_use_bit = 1;
constexpr word size_mask = ((word{1} << cookie_shift) - 1) & ~word{15};
constexpr word cookie_mask = ~((word{1} << cookie_shift) - 1);
constexpr std::size_t granule = 16;
static_assert(free_list::max_arena_bytes <= (std::size_t{1} << cookie_shift));

// Arena memory is plain bytes the user also writes: tags and links go through memcpy (one
// move each), never through a typed lvalue.
word load(const std::byte* at) noexcept {
  word w;
  std::memcpy(&w, at, sizeof w);
  return w;
}
void store(std::byte* at, word w) noexcept {
  std::memcpy(at, &w, sizeof w);
}

std::uintptr_t address(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p);
}

// The cookie of a tag stored at `at`: 24 bits of a mix of the header's address, so a header
// word copied elsewhere, a footer word or user data is not taken for a header.
word cookie(const std::byte* at) noexcept {
  word x = address(at);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  return x & cookie_mask;  // (a final x ^= x >> 33 would leave bits 40..63 as they are)
}

word make_tag(const std::byte* b, std::size_t size, bool in_use) noexcept {
  return cookie(b) | word{size} | (in_use ? in_use_bit : 0);
}
std::size_t size_of(word w) noexcept {
  return static_cast<std::size_t>(w & size_mask);
}
bool is_in_use(word w) noexcept {
  return (w & in_use_bit) != 0;
}

// Writes a block's header and footer word.
void set_tags(std::byte* b, std::size_t size, word w) noexcept {
  store(b, w);
  store(b + size - tag_bytes, w);
}

void set_block(std::byte* b, std::size_t size, bool in_use) noexcept {
  set_tags(b, size, make_tag(b, size, in_use));
}

// A free block's links, right after its header.
std::byte* next_of(const std::byte* b) noexcept {
  std::byte* n;
  std::memcpy(&n, b + tag_bytes, sizeof n);
  return n;
}
std::byte* prev_of(const std::byte* b) noexcept {
  std::byte* p;
  std::memcpy(&p, b + tag_bytes + sizeof p, sizeof p);
  return p;
}
void set_next(std::byte* b, std::byte* n) noexcept {
  std::memcpy(b + tag_bytes, &n, sizeof n);
}
void set_prev(std::byte* b, std::byte* p) noexcept {
  std::memcpy(b + tag_bytes + sizeof p, &p, sizeof p);
}

// The block size holding `bytes` usable bytes.
std::size_t block_bytes_for(std::size_t bytes) noexcept {
  return std::max(free_list::min_block,
                  (bytes + free_list::block_overhead + granule - 1) & ~(granule - 1));
}

std::string not_a_block(const void* p, std::string_view why) {
  return hex(p) + " is not a block of this heap (" + std::string(why) + ")";
}

// Out of line, so that allocate's fast path builds no string and needs no frame for one.
[[noreturn, gnu::cold, gnu::noinline]] void bad_alignment(std::size_t bytes, std::size_t align) {
  oneside::detail::raise(
      error_class::arg, {.call = "allocate", .bytes = bytes},
      "alignment " + std::to_string(align) + " is not a power of two from 1 to 4096");
}

[[noreturn]] void violation(std::string_view what) {
  oneside::detail::raise(error_class::intern, {.call = "free_list::check_consistency"}, what);
}

}  // namespace

void free_list::add_arena(void* base, std::size_t bytes, std::size_t reserved) {
  const error_context where{.call = "add_arena", .bytes = bytes};
  ONESIDE_CHECK(base != nullptr, error_class::arg, where, "the base is null");
  ONESIDE_CHECK(address(base) % arena_alignment == 0, error_class::arg, where,
                "base " + hex(base) + " is not 4096-aligned");
  ONESIDE_CHECK(bytes != 0 && bytes % arena_alignment == 0 && bytes <= max_arena_bytes,
                error_class::arg, where,
                "an arena's size is a non-zero multiple of 4096 bytes, at most 2^40");
  ONESIDE_CHECK(address(base) <= UINTPTR_MAX - bytes, error_class::arg, where,
                "the arena at " + hex(base) + " wraps around the address space");
  reserved = std::min(reserved, bytes) / arena_alignment * arena_alignment;
  ONESIDE_CHECK(reserved >= arena_alignment && (reserved == bytes || reserve_), error_class::arg,
                where,
                "an arena's first page must be reserved, and the rest too unless the list has a "
                "reserve function");
  auto* const lo = static_cast<std::byte*>(base);
  const std::lock_guard lock(lock_);
  for (const arena& a : arenas_) {
    ONESIDE_CHECK(
        address(lo) + bytes <= address(a.base) || address(a.base) + a.bytes <= address(lo),
        error_class::arg, where,
        "the arena at " + hex(base) + " overlaps the arena at " + hex(a.base));
  }
  by_address_.reserve(arenas_.size() + 1);  // both pushes below succeed or neither happens
  arenas_.push_back(
      arena{.base = lo,
            .bytes = bytes,
            .first_free = nullptr,
            .last_free = nullptr,
            .reserved_end = reserved == bytes ? UINTPTR_MAX : address(lo) + reserved});
  const std::size_t ai = arenas_.size() - 1;
  by_address_.insert(
      std::upper_bound(by_address_.begin(), by_address_.end(), address(lo),
                       [](std::uintptr_t x, const arena_range& r) { return x < address(r.base); }),
      arena_range{.base = lo, .bytes = bytes, .index = ai});
  // Fences: in-use blocks of size 0 at both ends.
  store(lo, make_tag(lo, 0, true));
  store(lo + bytes - tag_bytes, make_tag(lo + bytes - tag_bytes, 0, true));
  std::byte* const b = lo + tag_bytes;
  set_block(b, bytes - arena_overhead, false);
  insert(ai, b);
  total_bytes_ += bytes;
  ++free_blocks_;
}

const free_list::arena_range* free_list::range_of(const void* p) const noexcept {
  // The last arena starting at or below p (a binary search), if p lies inside it.
  const std::uintptr_t at = address(p);
  const arena_range* r = by_address_.data();
  std::size_t n = arenas_.size();  // the same count, and a shift away from arenas_'s bounds
  if (n == 0) return nullptr;
  while (n > 1) {
    const std::size_t half = n / 2;
    if (address(r[half].base) <= at) r += half;
    n -= half;
  }
  // Below the first arena, at - base wraps around past every arena's size.
  return at - address(r->base) < r->bytes ? r : nullptr;
}

// Classifies p (reads only, and only inside p's arena).
free_list::lookup free_list::find_block(const void* p) const noexcept {
  if (p == nullptr) return {pointer_kind::null, nullptr, 0, 0};
  const arena_range* const r = range_of(p);
  if (r == nullptr) return {pointer_kind::in_no_arena, nullptr, 0, 0};
  const std::uintptr_t at = address(p);
  const std::uintptr_t end = address(r->base) + r->bytes - tag_bytes;  // the closing fence
  if (at % granule != 0 || at < address(r->base) + 2 * tag_bytes ||
      end - (at - tag_bytes) < min_block) {
    return {pointer_kind::misplaced, nullptr, 0, 0};
  }
  std::byte* const b = r->base + (at - tag_bytes - address(r->base));
  const word w = load(b);
  if ((w & cookie_mask) != cookie(b)) return {pointer_kind::misplaced, nullptr, 0, 0};
  if (!is_in_use(w)) return {pointer_kind::freed, nullptr, 0, 0};
  const std::size_t size = size_of(w);
  if (size < min_block || size > end - address(b) || load(b + size - tag_bytes) != w) {
    return {pointer_kind::damaged, nullptr, 0, 0};
  }
  return {pointer_kind::live, b, r->index, w};
}

// What is left in front stays a free block in b's place, what is left behind becomes a free
// block after it (or, when too small for a block, part of the new one).
void free_list::take(std::size_t ai, std::byte* b, word tag, std::size_t lead, std::size_t need) {
  arena& a = arenas_[ai];
  const std::size_t size = size_of(tag);
  std::size_t tail = size - lead - need;
  if (tail < min_block) {
    need += tail;
    tail = 0;
  }
  std::byte* const block = b + lead;
  std::byte* const rest = block + need;
  if (tail != 0) set_block(rest, tail, false);
  if (lead == 0) {
    if (tail == 0) {
      unlink(a, b);
      --free_blocks_;
    } else {
      replace(a, b, rest);
    }
  } else {
    set_block(b, lead, false);
    if (tail != 0) {
      link(b, next_of(b), rest);
      if (a.last_free == b) a.last_free = rest;
      ++free_blocks_;
    }
  }
  // Without a lead the block starts at b, whose cookie the free block's header holds.
  const word block_cookie = lead == 0 ? tag & cookie_mask : cookie(block);
  set_tags(block, need, block_cookie | word{need} | in_use_bit);
  used_bytes_ += need;
  ++live_blocks_;
}

std::size_t free_list::first_block_extent(std::size_t bytes, std::size_t align) noexcept {
  // The fence and the free block's header, a lead block in front for a large alignment, the
  // block, and the header and links of the free block after it.
  const std::size_t lead = align > granule ? align + min_block : 0;
  return 2 * tag_bytes + lead + block_bytes_for(bytes) + min_block;
}

void* free_list::allocate(std::size_t bytes, std::size_t align, std::string_view call) {
  shortfall missing;
  for (;;) {
    if (void* p = allocate_in(bytes, align, &missing)) [[likely]] {
      return p;
    }
    if (missing.ai == SIZE_MAX) return nullptr;
    reserve_for(missing, call);
    missing = shortfall{};
  }
}

void* free_list::try_allocate(std::size_t bytes, std::size_t align) {
  shortfall missing;
  return allocate_in(bytes, align, &missing);
}

// Called without the lock: another thread may reserve the same stretch meanwhile, which costs
// the reserve function a second call and nothing else.
void free_list::reserve_for(const shortfall& m, std::string_view call) {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
  {
    const std::lock_guard lock(lock_);
    base = arenas_[m.ai].base;
    bytes = arenas_[m.ai].bytes;
  }
  const auto pages = [](std::size_t n) {
    return (n + arena_alignment - 1) / arena_alignment * arena_alignment;
  };
  const std::size_t exact = std::min(bytes, pages(m.to));
  std::size_t to = std::min(bytes, pages(std::max(m.to, m.from + reserve_ahead)));
  try {
    reserve_(base, m.from, to - m.from, call);
  } catch (...) {
    if (to == exact) throw;
    to = exact;  // what this block needs, when there is no room for more
    reserve_(base, m.from, to - m.from, call);
  }
  const std::lock_guard lock(lock_);
  arena& a = arenas_[m.ai];
  a.reserved_end = to == bytes ? UINTPTR_MAX : std::max(a.reserved_end, address(base) + to);
}

void* free_list::allocate_in(std::size_t bytes, std::size_t align, shortfall* missing) {
  // (align & (align - 1)) rather than std::has_single_bit, which is a library call without
  // -mpopcnt.
  if (align == 0 || (align & (align - 1)) != 0 || align > max_alignment) [[unlikely]] {
    bad_alignment(bytes, align);
  }
  if (bytes > max_arena_bytes) return nullptr;
  const std::size_t need = block_bytes_for(bytes);
  const std::lock_guard lock(lock_);
  for (std::size_t ai = 0; ai < arenas_.size(); ++ai) {
    const arena& a = arenas_[ai];
    for (std::byte* b = a.first_free; b != nullptr; b = b == a.last_free ? nullptr : next_of(b)) {
      const word w = load(b);
      const std::size_t size = size_of(w);
      // Payloads (b + 8) are 16-aligned; a larger alignment leaves a free block in front,
      // which must be empty or a block of its own.
      std::size_t lead = 0;
      if (align > granule) {
        const std::uintptr_t payload = address(b) + tag_bytes;
        lead = ((payload + align - 1) & ~(align - 1)) - payload;
        if (lead != 0 && lead < min_block) lead += align;
      }
      if (lead + need <= size) {
        // What taking it writes: the block, and the tags and links of a free block after it.
        const std::uintptr_t touched = address(b) + lead + need + min_block;
        if (touched > a.reserved_end) [[unlikely]] {
          const std::size_t end = touched - address(a.base);
          *missing = shortfall{
              .ai = ai, .from = a.reserved_end - address(a.base), .to = std::min(a.bytes, end)};
          return nullptr;
        }
        take(ai, b, w, lead, need);
        return b + lead + tag_bytes;
      }
    }
  }
  return nullptr;
}

void free_list::deallocate(void* p) {
  if (p == nullptr) return;
  const std::lock_guard lock(lock_);
  const lookup found = find_block(p);
  if (found.kind != pointer_kind::live) [[unlikely]] {
    reject(found.kind, p, "deallocate");
  }
  std::byte* const b = found.block;
  arena& a = arenas_[found.arena];
  const word own_cookie = found.tag & cookie_mask;  // checked by find_block
  const std::size_t size = size_of(found.tag);
  used_bytes_ -= size;
  --live_blocks_;
  const word before = load(b - tag_bytes);  // the previous block's footer or the fence
  std::byte* const after = b + size;
  const word next = load(after);  // the next block's header or the fence
  const bool merge_before = !is_in_use(before);
  const bool merge_after = !is_in_use(next);
  // Whatever merges, b's header says "freed" from here on (a second free is reported as
  // such); its footer is rewritten only where it stays a footer.
  if (merge_before) {
    store(b, own_cookie | word{size});
    std::byte* const prev = b - size_of(before);
    std::size_t merged = size_of(before) + size;
    if (merge_after) {
      unlink(a, after);
      --free_blocks_;
      merged += size_of(next);
    }
    set_block(prev, merged, false);
  } else if (merge_after) {
    const std::size_t merged = size + size_of(next);
    set_tags(b, merged, own_cookie | word{merged});
    replace(a, after, b);
  } else {
    set_tags(b, size, own_cookie | word{size});
    insert(found.arena, b);
    ++free_blocks_;
  }
}

void free_list::check_block(const void* p, std::string_view call) const {
  const std::lock_guard lock(lock_);
  const lookup found = find_block(p);
  if (found.kind != pointer_kind::live) [[unlikely]] {
    reject(found.kind, p, call);
  }
}

std::size_t free_list::block_size(const void* p) const {
  const std::lock_guard lock(lock_);
  const lookup found = find_block(p);
  if (found.kind != pointer_kind::live) [[unlikely]] {
    reject(found.kind, p, "block_size");
  }
  return size_of(found.tag) - block_overhead;
}

free_list_stats free_list::stats() const {
  const std::lock_guard lock(lock_);
  std::size_t largest = 0;
  for (const std::byte* b = head_; b != nullptr; b = next_of(b)) {
    largest = std::max(largest, size_of(load(b)));
  }
  return free_list_stats{
      .total_bytes = total_bytes_,
      .used_bytes = used_bytes_,
      .free_bytes = total_bytes_ - used_bytes_ - arenas_.size() * arena_overhead,
      .largest_free = largest == 0 ? 0 : largest - block_overhead,
      .arena_count = arenas_.size(),
      .live_blocks = live_blocks_,
      .free_blocks = free_blocks_,
  };
}

// Cold: only misuse gets here.
[[gnu::cold]] void free_list::reject(pointer_kind kind, const void* p, std::string_view call) {
  std::string what;
  switch (kind) {
    case pointer_kind::null:
      what = "null is not a block of this heap";
      break;
    case pointer_kind::in_no_arena:
      what = not_a_block(p, "it lies in no arena");
      break;
    case pointer_kind::freed:
      what = hex(p) + " was freed already";
      break;
    case pointer_kind::damaged:
      what = not_a_block(p, "its boundary tags are damaged or forged");
      break;
    case pointer_kind::misplaced:
    case pointer_kind::live:
      what = not_a_block(p, "no block starts there");
      break;
  }
  oneside::detail::raise(error_class::arg, {.call = call}, what);
}

// Puts the free block b (of arena ai, with no free neighbour) into the list in heap order.
// Its arena's part of the list is found in O(1); inside it the walk starts from the nearer
// end (by address).
void free_list::insert(std::size_t ai, std::byte* b) {
  arena& a = arenas_[ai];
  if (a.first_free == nullptr) {
    std::byte* pred = nullptr;  // the last free block of an earlier arena
    for (std::size_t j = ai; j-- > 0 && pred == nullptr;) pred = arenas_[j].last_free;
    link(pred, pred != nullptr ? next_of(pred) : head_, b);
    a.first_free = b;
    a.last_free = b;
  } else if (b < a.first_free) {
    link(prev_of(a.first_free), a.first_free, b);
    a.first_free = b;
  } else if (b > a.last_free) {
    link(a.last_free, next_of(a.last_free), b);
    a.last_free = b;
  } else if (b - a.first_free <= a.last_free - b) {
    std::byte* pos = next_of(a.first_free);
    while (pos < b) pos = next_of(pos);
    link(prev_of(pos), pos, b);
  } else {
    std::byte* pos = prev_of(a.last_free);
    while (pos > b) pos = prev_of(pos);
    link(pos, next_of(pos), b);
  }
}

// Makes n follow p in the list; p null makes n the head, n null makes p the tail.
void free_list::join(std::byte* p, std::byte* n) noexcept {
  if (p != nullptr) {
    set_next(p, n);
  } else {
    head_ = n;
  }
  if (n != nullptr) set_prev(n, p);
}

// Puts b between the neighbours p and n (either may be null).
void free_list::link(std::byte* p, std::byte* n, std::byte* b) noexcept {
  join(p, b);
  join(b, n);
}

void free_list::unlink(arena& a, std::byte* b) noexcept {
  std::byte* const p = prev_of(b);
  std::byte* const n = next_of(b);
  join(p, n);
  if (a.first_free == b && a.last_free == b) {
    a.first_free = nullptr;
    a.last_free = nullptr;
  } else if (a.first_free == b) {
    a.first_free = n;
  } else if (a.last_free == b) {
    a.last_free = p;
  }
}

// b takes old_block's place in the list (the same arena, no other free block between them).
void free_list::replace(arena& a, std::byte* old_block, std::byte* b) noexcept {
  link(prev_of(old_block), next_of(old_block), b);
  if (a.first_free == old_block) a.first_free = b;
  if (a.last_free == old_block) a.last_free = b;
}

void free_list::check_consistency() const {
  const std::lock_guard lock(lock_);
  std::vector<std::byte*> expected;  // every free block, in heap order
  std::size_t total = 0;
  std::size_t used = 0;
  std::size_t live = 0;
  for (std::size_t ai = 0; ai < arenas_.size(); ++ai) {
    const arena& a = arenas_[ai];
    const std::string where = "arena " + std::to_string(ai) + " at " + hex(a.base);
    const auto at = [&](const std::byte* b) {
      return where + ", block at offset " + std::to_string(address(b) - address(a.base));
    };
    std::byte* const end = a.base + a.bytes - tag_bytes;
    if (load(a.base) != make_tag(a.base, 0, true) || load(end) != make_tag(end, 0, true)) {
      violation(where + ": a fence word is damaged");
    }
    total += a.bytes;
    const std::size_t first_expected = expected.size();
    bool previous_free = false;
    std::byte* b = a.base + tag_bytes;
    while (b != end) {
      const word w = load(b);
      const std::size_t size = size_of(w);
      if ((w & cookie_mask) != cookie(b)) violation(at(b) + ": the header's cookie is wrong");
      if (size < min_block || size > static_cast<std::size_t>(end - b)) {
        violation(at(b) + ": size " + std::to_string(size) + " does not fit the arena");
      }
      if (load(b + size - tag_bytes) != w) violation(at(b) + ": header and footer differ");
      if (is_in_use(w)) {
        used += size;
        ++live;
        previous_free = false;
      } else {
        if (previous_free) violation(at(b) + ": two adjacent free blocks (not coalesced)");
        expected.push_back(b);
        previous_free = true;
      }
      b += size;
    }
    const bool has_free = expected.size() > first_expected;
    if (a.first_free != (has_free ? expected[first_expected] : nullptr) ||
        a.last_free != (has_free ? expected.back() : nullptr)) {
      violation(where + ": its first or last free block is not the one the tags show");
    }
  }
  // The list must be exactly `expected`; nodes are compared before they are followed.
  const std::byte* prev = nullptr;
  const std::byte* node = head_;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (node != expected[i]) {
      violation("free list entry " + std::to_string(i) + " is " + hex(node) + ", expected " +
                hex(expected[i]) + " (out of order, missing or foreign)");
    }
    if (prev_of(node) != prev)
      violation("free list entry " + std::to_string(i) + ": bad back link");
    prev = node;
    node = next_of(node);
  }
  if (node != nullptr) violation("the free list has more entries than there are free blocks");
  if (total != total_bytes_ || used != used_bytes_ || live != live_blocks_ ||
      expected.size() != free_blocks_) {
    violation("the counters disagree with the blocks (total " + std::to_string(total_bytes_) +
              " vs " + std::to_string(total) + ", used " + std::to_string(used_bytes_) + " vs " +
              std::to_string(used) + ", live " + std::to_string(live_blocks_) + " vs " +
              std::to_string(live) + ", free " + std::to_string(free_blocks_) + " vs " +
              std::to_string(expected.size()) + ")");
  }
}

}  // namespace oneside::pgas::detail
