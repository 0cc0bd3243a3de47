// The target's side of rpc_ff messages, for senders that carry them other than one active
// message each (an aggregator batching the bytes pgas::detail::encode_rpc_ff appends).
#pragma once

#include <cstddef>
#include <span>

#include <oneside/runtime/types.hpp>

namespace oneside::pgas::detail {

// Runs one rpc_ff message from `source` as its active message would: copies it and queues the
// call on this rank's task arena (so it may be called on an agent; it does not block). The
// message is exactly what encode_rpc_ff appended. error(arg) for bytes that are no rpc_ff
// message (checked before anything is queued).
void execute_rpc_ff_message(rank_t source, std::span<const std::byte> message);

}  // namespace oneside::pgas::detail
