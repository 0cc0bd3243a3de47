// The compiled half of the atomics (atomic.hpp) and of global_ref's get/put (global_ref.hpp):
// the checks, and the owner's path for words this process does not load and store. Every path
// is a CPU atomic on the word (here, at the owner's agent, or at its MPI progress thread), so
// all are atomic with each other, whatever the job's layout.
#include <cstddef>
#include <cstdint>
#include <string>

#include <oneside/pgas/atomic.hpp>
#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/global_ref.hpp>

#include "comm/remote.hpp"
#include "runtime/check.hpp"
#include "runtime/hex.hpp"
#include "runtime/transport.hpp"

namespace oneside::pgas::detail {

using oneside::detail::hex;
using oneside::detail::raise;

void* atomic_address(rank_t r, std::uintptr_t addr, std::size_t bytes, const char* call) {
  pgas_context& s = checked_context(addr, r, call);
  if (addr % bytes != 0) [[unlikely]] {
    raise(error_class::arg, {.call = call, .target = r},
          "the word at " + hex(addr) + " is not " + std::to_string(bytes) +
              "-byte aligned (atomics need naturally aligned words)");
  }
  return s.local_address(r, addr, bytes);
}

std::uint64_t atomic_fetch_remote(atomic_op o, atomic_type t, rank_t r, std::uintptr_t addr,
                                  std::uint64_t operand, std::uint64_t compare, const char* call) {
  pgas_context& s = get_context(call);
  const rma::detail::access_target at =
      resolve_remote(s, r, addr, transport::amo_type_size(t), call);
  // The owner wakes its own waiters when the word changed (transport::backend::amo).
  const std::uint64_t old = rma::detail::fetch(s.transport(), at, {o, t, operand, compare});
  return transport::amo_type_size(t) == 4 ? old & 0xFFFFFFFFU : old;
}

future<> atomic_update_remote(atomic_op o, atomic_type t, rank_t r, std::uintptr_t addr,
                              std::uint64_t operand, const char* call) {
  pgas_context& s = get_context(call);
  const rma::detail::access_target at =
      resolve_remote(s, r, addr, transport::amo_type_size(t), call);
  return ticket_future(s, r, rma::detail::update(s.transport(), at, {o, t, operand, 0}));
}

// ---- global_ref ----------------------------------------------------------------------------

void ref_get(rank_t r, std::uintptr_t addr, void* dst, std::size_t bytes, const char* call) {
  get_now(r, addr, dst, bytes, call);
}

void ref_put(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes, const char* call) {
  put_remote(r, addr, src, bytes, call).wait();
}

void ref_wake(rank_t r) noexcept {
  wake_after_write(r);
}

}  // namespace oneside::pgas::detail
