// The pgas layer's per-process context (internal): made on every rank when the runtime opens
// (the job-wide dynamic window is collective) and released when it closes. It holds the
// window every pgas operation goes through (in a lock_all epoch for its whole life), this
// rank's heap, the map of node peers' heap memory and the table of load/store-reachable ranks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/transport.hpp>

#include "heap/global_heap.hpp"
#include "heap/peer_map.hpp"
#include "heap/symmetric_heap.hpp"

namespace oneside::detail {
struct context;
}

namespace oneside::pgas::detail {

class pgas_context {
 public:
  explicit pgas_context(oneside::detail::context& c);
  pgas_context(const pgas_context&) = delete;
  pgas_context& operator=(const pgas_context&) = delete;
  ~pgas_context();

  transport::backend& transport() noexcept { return transport_; }
  const oneside::team& world() const noexcept { return world_; }
  rank_t rank() const noexcept { return rank_; }
  int size() const noexcept { return static_cast<int>(local_.size()); }
  bool is_local_rank(rank_t r) const noexcept {
    return static_cast<std::size_t>(r) < local_.size() && local_[static_cast<std::size_t>(r)] != 0;
  }
  // The doorbell that wakes node peer r after a write this process made in r's memory through
  // a mapping; null for this rank (its writers wake themselves, see wake_after_write) and for
  // ranks that are not node peers.
  oneside::detail::doorbell* peer_bell(rank_t r) const noexcept {
    return static_cast<std::size_t>(r) < bells_.size() ? bells_[static_cast<std::size_t>(r)]
                                                       : nullptr;
  }
  // Whether CPU atomics on node peers' memory and the transport's atomics act on one value
  // (shm: yes; a network transport: no, so every atomic takes the window's path).
  bool cpu_atomics() const noexcept { return cpu_atomics_; }
  // Whether an atomic may be a CPU atomic on the mapped word: CPU atomics are the transport's
  // and every rank of the job loads and stores every other's heap. Otherwise some rank
  // reaches each word through the window, whose accumulate paths lock the word's stripe and
  // use plain stores, so every atomic (the owner's too) must take the window's path.
  bool atomics_direct() const noexcept { return atomics_direct_; }
  global_heap& heap() noexcept { return *heap_; }
  symmetric_heap& symmetric() noexcept { return *symmetric_; }
  peer_map& peers() noexcept { return *peers_; }
  rma::window& window() noexcept { return window_; }

  // quiet()'s bookkeeping: operations issued through the window that a flush_all completes.
  // Called after issuing one; returns its ticket.
  std::uint64_t note_window_operation() noexcept {
    return issued_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }
  // Whether a flush_all since the operation of `ticket` was issued has completed it (so its
  // future need not flush its target again).
  bool flushed_through(std::uint64_t ticket) const noexcept {
    return flushed_.load(std::memory_order_acquire) >= ticket;
  }
  // flush_all when an operation was issued since the last one (any thread's).
  void flush_if_needed() {
    const std::uint64_t n = issued_.load(std::memory_order_acquire);
    if (flushed_.load(std::memory_order_acquire) < n) flush_through(n);
  }
  // The pointer through which this process loads and stores (r, addr … addr + bytes), or
  // null (see pgas::detail::local_address).
  void* local_address(rank_t r, std::uintptr_t addr, std::size_t bytes) noexcept {
    if (r == rank_) return reinterpret_cast<void*>(addr);
    if (!is_local_rank(r)) return nullptr;
    if (void* p = peers_->resolve(r, addr, bytes)) return p;  // heap memory: no virtual call
    return transport_.direct(r, addr, bytes);                 // other exposed memory
  }

 private:
  void flush_through(std::uint64_t issued);

  transport::backend& transport_;
  const oneside::team& world_;
  rank_t rank_;
  bool cpu_atomics_;
  bool atomics_direct_;
  std::vector<char> local_;                        // by world rank: load/store reachable from here
  std::vector<oneside::detail::doorbell*> bells_;  // by world rank: see peer_bell
  std::atomic<std::uint64_t> issued_{0};
  std::atomic<std::uint64_t> flushed_{0};
  std::unique_ptr<peer_map> peers_;
  // Destroyed before the window (whose free is collective at close, local when a rank fails),
  // declared first so that it goes after it: the segments outlive the window.
  std::unique_ptr<global_heap> heap_;
  std::unique_ptr<symmetric_heap> symmetric_;  // likewise
  rma::window window_;
};

// The pgas context of the open runtime; error(not_open) naming `call` when none is open.
pgas_context& get_context(std::string_view call);
// Where the open runtime's pgas context is (pgas_context.cpp sets and clears it).
inline std::atomic<pgas_context*> g_current_context{nullptr};
// The pgas context, or null when the runtime is not open (no error).
inline pgas_context* get_context_if_open() noexcept {
  return g_current_context.load(std::memory_order_acquire);
}
// get_context for a call named by a C string: its length is only taken on the error path (the
// operations' hot paths pass their names this way).
inline pgas_context& get_context(const char* call) {
  if (pgas_context* s = get_context_if_open()) [[likely]] {
    return *s;
  }
  return get_context(std::string_view(call));
}

}  // namespace oneside::pgas::detail
