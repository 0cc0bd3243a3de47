// Lookup of registered active-message handlers, for the transports' dispatch loops.
#pragma once

#include "runtime/transport.hpp"

namespace oneside::transport::detail {
// The handler registered under `id`, or null. Lock-free; callable from the agent thread.
am_handler find_am_handler(am_handler_id id) noexcept;
// What every transport checks before sending an active message: a registered handler and a
// payload of at most `max_payload` bytes, error(arg) otherwise.
void check_am_send(rank_t dst, am_handler_id handler, std::size_t bytes, std::size_t max_payload);
// Runs the handler `id` for a message from `source` to this rank (`self`, for what it prints),
// giving it `front`; aborts the job, saying why, for an unknown handler or one that throws
// (origins check arguments before sending, so either is a broken invariant).
void run_am_handler(backend& front, rank_t self, rank_t source, am_handler_id id,
                    std::span<const std::byte> payload) noexcept;
// Its second half: a payload of at most `max_payload` bytes.
void check_am_payload(rank_t dst, std::size_t bytes, std::size_t max_payload);
}  // namespace oneside::transport::detail
