// The pgas layer's per-process context (internal): made on every rank when the runtime opens
// and released when it closes. It holds this rank's heaps, the counter that completes the
// operations the layer issues through the rma access interface (rma/interface/rma/access.hpp:
// quiet(), the futures of remote puts and updates), and the doorbells of node peers. Which
// memory this process loads and stores is the transport's table (transport::reach_table).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "heap/global_heap.hpp"
#include "heap/symmetric_heap.hpp"
#include "rma/access.hpp"
#include "runtime/transport.hpp"

namespace oneside::pgas::detail {

class aggregator_impl;

// The live aggregators of this rank, which quiet() flushes (aggregate/aggregator.cpp). `count`
// lets quiet() skip the lock when there are none.
struct aggregator_set {
  std::atomic<int> count{0};
  std::mutex mutex;
  std::vector<aggregator_impl*> live;
};
// The counts that let quiet() wait for the rpc_ff this rank issued (rpc/rpc.cpp): by target,
// the calls issued (directly, or by an aggregator when it shipped them) and those the target
// acknowledged as run; by source, the calls run here and the count that source asked to hear
// of. `unacked` (issued minus acknowledged, over all targets) lets quiet() skip everything with
// one load when nothing is outstanding.
struct rpc_ff_ledger {
  explicit rpc_ff_ledger(std::size_t ranks)
      : issued(std::make_unique<std::atomic<std::uint64_t>[]>(ranks)),
        acked(std::make_unique<std::atomic<std::uint64_t>[]>(ranks)),
        executed(std::make_unique<std::atomic<std::uint64_t>[]>(ranks)),
        requested(std::make_unique<std::atomic<std::uint64_t>[]>(ranks)),
        ack_sent(std::make_unique<std::atomic<std::uint64_t>[]>(ranks)) {}
  std::unique_ptr<std::atomic<std::uint64_t>[]> issued;     // by target
  std::unique_ptr<std::atomic<std::uint64_t>[]> acked;      // by target
  std::unique_ptr<std::atomic<std::uint64_t>[]> executed;   // by source
  std::unique_ptr<std::atomic<std::uint64_t>[]> requested;  // by source
  std::unique_ptr<std::atomic<std::uint64_t>[]> ack_sent;   // by source: the last count acked
  std::atomic<std::int64_t> unacked{0};
};

class pgas_context;
// Flushes every aggregator in s's set (quiet()).
void flush_aggregators(pgas_context& s);
// Waits until every rpc_ff counted in s's ledger as issued so far ran at its target (quiet();
// rpc/rpc.cpp). Sends each target with calls outstanding one query; never call it on an agent.
void wait_rpc_ff(pgas_context& s);

class pgas_context {
 public:
  // Made at every runtime open, on every rank (collective: the heap's first segment).
  pgas_context();
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
  // The lowest world rank of r's node (the ranks that load and store each other's memory).
  rank_t node_leader(rank_t r) const noexcept { return node_leader_[static_cast<std::size_t>(r)]; }
  aggregator_set& aggregators() noexcept { return aggregators_; }
  rpc_ff_ledger& rpc_ff() noexcept { return rpc_ff_; }
  global_heap& heap() noexcept { return *heap_; }
  symmetric_heap& symmetric() noexcept { return *symmetric_; }
  // The operations issued through the access interface and their completion.
  rma::detail::completion_counter& ops() noexcept { return ops_; }
  // Operations issued to r since the layer last bounded them (comm/remote.hpp,
  // ticket_future): what a transport holds for operations in flight stays bounded even when
  // nobody waits for them.
  std::atomic<std::uint32_t>& in_flight(rank_t r) noexcept {
    return in_flight_[static_cast<std::size_t>(r)];
  }
  // The pointer through which this process loads and stores (r, addr … addr + bytes): memory
  // r exposed that is mapped here (every rank's own exposed memory, and node peers' on shm),
  // else null. Inline: the transport's table, no virtual call.
  void* local_address(rank_t r, std::uintptr_t addr, std::size_t bytes) noexcept {
    return reach_.local(r, addr, bytes);
  }

 private:
  transport::backend& transport_;
  transport::reach_table& reach_;
  const oneside::team& world_;
  rank_t rank_;
  std::vector<char> local_;                        // by world rank: load/store reachable from here
  std::vector<oneside::detail::doorbell*> bells_;  // by world rank: see peer_bell
  std::vector<rank_t> node_leader_;                // by world rank
  aggregator_set aggregators_;
  rpc_ff_ledger rpc_ff_;
  rma::detail::completion_counter ops_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> in_flight_;  // by world rank
  std::unique_ptr<global_heap> heap_;
  std::unique_ptr<symmetric_heap> symmetric_;
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
