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

// The future of an operation to `r` the access interface just issued: ready when it is not in
// flight, else its ticket in the layer's completion counter (taken now, after the issue, so
// that no flush begun before the issue can count it complete).
inline future<> ticket_future(pgas_context& s, rank_t r, bool in_flight) noexcept {
  if (!in_flight) return {};
  return future_access::make_ticket(op_ticket{r, s.ops().issue()});
}

}  // namespace oneside::pgas::detail
