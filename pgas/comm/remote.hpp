// What the pgas calls that reach memory this process does not load and store share
// (communication.cpp, atomic.cpp): the checks of a global pointer, resolution through the rma
// layer's access interface, and the futures of operations in flight.
#pragma once

#include <cstddef>
#include <cstdint>

#include <oneside/pgas/future.hpp>

#include "context/pgas_context.hpp"
#include "rma/access.hpp"

namespace oneside::pgas::detail {

// The pgas context, after rejecting the null pointer (arg) and ranks outside the world (rank),
// naming `call`.
pgas_context& checked_context(std::uintptr_t addr, rank_t r, const char* call);

// (r, addr … addr + bytes) checked (also: memory r exposed, else rma_range) and resolved.
inline rma::detail::access_target resolve_remote(pgas_context& s, rank_t r, std::uintptr_t addr,
                                                 std::size_t bytes, const char* call) {
  return rma::detail::resolve(s.transport(), r, addr, bytes, call);
}

// At most this many operations to one target are in flight without the layer completing
// them (one flush of the target per this many): a transport may hold memory for each until
// its target is flushed (the MPI transport's staged copies and message buffers), and
// operations whose futures are dropped (atomic_add, rput: completion observed through
// quiet(), fence() or a barrier) would otherwise pile up without bound.
inline constexpr std::uint32_t max_in_flight_per_target = 4096;

// Completes what was issued to `r` through `ticket`, because max_in_flight_per_target were
// in flight. Continuations this readies never run inside the operation's call: the next
// progress() of any thread (every wait makes progress) runs them (future/deferred.hpp).
void bound_in_flight(pgas_context& s, rank_t r, std::uint64_t ticket);

// The future of an operation to `r` the access interface just issued: ready when it is not in
// flight, else its ticket in the layer's completion counter (taken now, after the issue, so
// that no flush begun before the issue can count it complete). No heap object either way: a
// dropped one costs nothing but its place in the target's count.
inline future<> ticket_future(pgas_context& s, rank_t r, bool in_flight) {
  if (!in_flight) return {};
  const std::uint64_t ticket = s.ops().issue();
  if (s.in_flight(r).fetch_add(1, std::memory_order_relaxed) + 1 >= max_in_flight_per_target)
      [[unlikely]] {
    bound_in_flight(s, r, ticket);
  }
  return future_access::make_ticket(op_ticket{r, ticket});
}

}  // namespace oneside::pgas::detail
