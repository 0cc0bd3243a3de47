// Lookup of registered active-message handlers, for the transports' dispatch loops.
#pragma once

#include <oneside/runtime/transport.hpp>

namespace oneside::transport::detail {
// The handler registered under `id`, or null. Lock-free; callable from the agent thread.
am_handler find_am_handler(am_handler_id id) noexcept;
}  // namespace oneside::transport::detail
