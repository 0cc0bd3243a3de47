// The target's side of rpc_ff messages, for senders that carry them other than one active
// message each (an aggregator batching the bytes pgas::detail::encode_rpc_ff appends), and the
// sender's means to make such a message small.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <oneside/runtime/types.hpp>

namespace oneside::pgas::detail {

// Runs one rpc_ff message from `source` as its active message would: copies it and queues the
// call on this rank's task arena (so it may be called on an agent; it does not block). The
// message is exactly what encode_rpc_ff appended. error(arg) for bytes that are no rpc_ff
// message (checked before anything is queued).
void execute_rpc_ff_message(rank_t source, std::span<const std::byte> message);

// The size of a message whose arguments are parked: its header and the rendezvous.
inline constexpr std::size_t rpc_parked_message_bytes = 72;

// Parks the arguments of an encoded message in this rank's global heap (a rendezvous, as for a
// message beyond one active message), so that it takes rpc_parked_message_bytes; nothing for
// one parked already. error(arg) for bytes that are no rpc message.
void park_rpc_arguments(std::vector<std::byte>& message);

// Frees what an encoded message that will not be sent parked.
void discard_rpc_message(std::span<const std::byte> message) noexcept;

}  // namespace oneside::pgas::detail
