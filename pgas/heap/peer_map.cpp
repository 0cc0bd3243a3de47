// The directory of heap segments and node peers' mappings of them (peer_map.hpp).
#include "heap/peer_map.hpp"

#include <string>

#include <oneside/runtime/collectives.hpp>

#include "error/check.hpp"

namespace oneside::pgas::detail {

peer_map::peer_map(transport::backend& t, const team& world)
    : transport_(t),
      own_(t.allocate_segment(sizeof(segment_directory_page))),
      own_page_(static_cast<segment_directory_page*>(own_.base())),
      peers_(static_cast<std::size_t>(world.size())) {
  // The segment comes zeroed: count 0.
  const std::vector<std::uint64_t> dirs =
      allgather(world, static_cast<std::uint64_t>(own_.address()));
  for (rank_t r : t.node_ranks()) {
    auto p = std::make_unique<peer>();
    p->rank = r;
    p->dir_pin = t.pin(r, static_cast<std::uintptr_t>(dirs[static_cast<std::size_t>(r)]),
                       sizeof(segment_directory_page));
    ONESIDE_CHECK(
        static_cast<bool>(p->dir_pin), error_class::intern, {.call = "runtime open", .target = r},
        "the heap directory of node peer " + std::to_string(r) + " is not load/store reachable");
    p->dir = static_cast<const segment_directory_page*>(p->dir_pin.get());
    peers_[static_cast<std::size_t>(r)] = std::move(p);
  }
}

peer_map::~peer_map() = default;

void peer_map::publish(const void* base, std::size_t len) {
  std::lock_guard lock(publish_mutex_);
  const std::uint64_t n = own_page_->count.load(std::memory_order_relaxed);
  ONESIDE_CHECK(n < segment_directory_page::capacity, error_class::no_mem,
                {.call = "allocate", .bytes = len},
                "this rank's heaps have " + std::to_string(n) +
                    " segments, the most the pgas layer lists (raise ONESIDE_HEAP_SEGMENT_BYTES "
                    "so fewer segments serve the same memory)");
  own_page_->entries[n] = {reinterpret_cast<std::uintptr_t>(base), len};
  own_page_->count.store(n + 1, std::memory_order_release);
}

void* peer_map::refresh(peer& p, std::uintptr_t addr, std::size_t len) noexcept {
  std::lock_guard lock(p.mutex);
  std::uint32_t have = p.count.load(std::memory_order_relaxed);
  const auto listed = static_cast<std::uint32_t>(std::min<std::uint64_t>(
      p.dir->count.load(std::memory_order_acquire), segment_directory_page::capacity));
  try {
    for (; have < listed; ++have) {
      const segment_directory_page::entry e = p.dir->entries[have];
      transport::pinned pin = transport_.pin(p.rank, static_cast<std::uintptr_t>(e.base),
                                             static_cast<std::size_t>(e.len));
      if (!pin) break;  // not reachable after all: the slow path serves it
      p.maps[have] = {static_cast<std::uintptr_t>(e.base), static_cast<std::size_t>(e.len),
                      static_cast<std::byte*>(pin.get())};
      p.pins.push_back(std::move(pin));
      p.count.store(have + 1, std::memory_order_release);
    }
  } catch (...) {
    // A mapping that failed (out of address space, a closing runtime): the caller takes the
    // transport's path instead.
  }
  for (std::uint32_t i = 0; i < have; ++i) {
    const mapping& m = p.maps[i];
    if (addr - m.base < m.len && len <= m.len - (addr - m.base)) {
      return m.local + (addr - m.base);
    }
  }
  return nullptr;
}

}  // namespace oneside::pgas::detail
