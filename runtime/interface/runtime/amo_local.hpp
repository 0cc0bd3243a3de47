// Executes a transport atomic on memory this process can load and store: the direct path of
// the shm transport and the body of the owner-side (agent) path for memory peers cannot
// reach. Every path that updates a location atomically ends here, so they are atomic with
// each other (CPU atomics, sequentially consistent).
#pragma once

#include "runtime/transport.hpp"

namespace oneside::transport::detail {

// Applies `args` to the naturally aligned element at `p`; writes the previous value's bits to
// `result` when not null. Bitwise ops on floating types are not defined (callers reject them);
// compare_swap and swap on floating types compare and move bits.
void amo_apply(void* p, const amo_args& args, void* result) noexcept;

// True when `args` names a defined (op, type) pair.
bool amo_is_defined(amo_op op, amo_type type) noexcept;

// An atomic shipped to the owner of memory the origin cannot reach (an active message).
struct amo_request {
  std::uintptr_t addr;
  std::uintptr_t result_addr;  // in the origin's address space; 0: no result wanted
  amo_args args;
};
// The owner's handler of such a message: applies it with amo_apply, wakes the owner's waiting
// threads when it changed memory, and puts the old value back to the origin when it asked
// for one.
void apply_amo_message(backend& t, rank_t source, std::span<const std::byte> payload);
// Registers apply_amo_message (once per process; every transport shares it).
am_handler_id amo_message_handler();

// What every transport checks before an atomic: a defined (op, type) pair, error(op), and a
// naturally aligned target, error(arg).
void check_amo(rank_t dst, std::uintptr_t addr, const amo_args& args);
// Ships the atomic to `dst`, whose handler applies it; with a null completion and a result,
// returns once the old value is in `result`.
void send_amo(backend& t, rank_t dst, std::uintptr_t addr, const amo_args& args, void* result,
              completion* c);

}  // namespace oneside::transport::detail
