// Executes a transport atomic on memory this process can load and store: the direct path of
// the shm transport and the body of the owner-side (agent) path for memory peers cannot
// reach. Every path that updates a location atomically ends here, so they are atomic with
// each other (CPU atomics, sequentially consistent).
#pragma once

#include <oneside/runtime/transport.hpp>

namespace oneside::transport::detail {

// Applies `args` to the naturally aligned element at `p`; writes the previous value's bits to
// `result` when not null. Bitwise ops on floating types are not defined (callers reject them);
// compare_swap and swap on floating types compare and move bits.
void amo_apply(void* p, const amo_args& args, void* result) noexcept;

// True when `args` names a defined (op, type) pair.
bool amo_is_defined(amo_op op, amo_type type) noexcept;

}  // namespace oneside::transport::detail
