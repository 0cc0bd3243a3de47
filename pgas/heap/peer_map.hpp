// Where the pgas layer finds node peers' heap memory without asking the transport: every rank
// lists its heap segments (the global heap's and the symmetric heap's) in a directory page
// of exposed memory whose address all ranks learn at open; a rank maps the segments of its
// node peers (transport pin) the first time it needs them and then resolves (rank, address)
// to a local pointer with a table scan, no virtual call and no lock. Segments are listed
// until the runtime closes (the heaps never give one back earlier).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <oneside/runtime/team.hpp>
#include <oneside/runtime/transport.hpp>

namespace oneside::pgas::detail {

// The page a rank lists its segments in. Written by its owner only (append, then count),
// read by node peers through their mapping.
struct segment_directory_page {
  static constexpr std::size_t capacity = 250;
  struct entry {
    std::uint64_t base;
    std::uint64_t len;
  };
  std::atomic<std::uint64_t> count;  // entries published, release-stored after each append
  std::uint64_t reserved;
  entry entries[capacity];
};

class peer_map {
 public:
  // Collective over the world (an allgather of directory addresses).
  explicit peer_map(transport::backend& t, const team& world);
  peer_map(const peer_map&) = delete;
  peer_map& operator=(const peer_map&) = delete;
  ~peer_map();

  // Lists [base, base + len) of this rank in its directory. Error(no_mem) when it is full.
  void publish(const void* base, std::size_t len);

  // The local pointer to [addr, addr + len) of rank r when that memory lies in one of r's
  // listed segments and r is this rank or a node peer; else null.
  void* resolve(rank_t r, std::uintptr_t addr, std::size_t len) noexcept {
    if (static_cast<std::size_t>(r) >= peers_.size()) return nullptr;
    peer* p = peers_[static_cast<std::size_t>(r)].get();
    if (p == nullptr) return nullptr;
    const std::uint32_t n = p->count.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < n; ++i) {
      const mapping& m = p->maps[i];
      if (addr - m.base < m.len && len <= m.len - (addr - m.base)) {
        return m.local + (addr - m.base);
      }
    }
    return refresh(*p, addr, len);
  }

 private:
  struct mapping {
    std::uintptr_t base;
    std::size_t len;
    std::byte* local;
  };
  struct peer {
    rank_t rank = 0;
    const segment_directory_page* dir = nullptr;  // r's directory, mapped here
    transport::pinned dir_pin;
    std::atomic<std::uint32_t> count{0};  // maps[0, count) are complete
    std::array<mapping, segment_directory_page::capacity> maps{};
    std::vector<transport::pinned> pins;  // the segments' mappings; under mutex
    std::mutex mutex;                     // one refresh at a time
  };

  // Maps the segments r listed since the last look, then resolves again (slow path).
  void* refresh(peer& p, std::uintptr_t addr, std::size_t len) noexcept;

  transport::backend& transport_;
  transport::segment own_;  // this rank's directory page
  segment_directory_page* own_page_;
  std::mutex publish_mutex_;
  std::vector<std::unique_ptr<peer>> peers_;  // by world rank; null unless load/store reachable
};

}  // namespace oneside::pgas::detail
