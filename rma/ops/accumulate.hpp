// The active message that applies accumulate-family operations at their target, for memory
// node peers cannot load and store (windows over user memory). Runs on the target's agent
// thread, under the same stripe locks as the direct path.
#pragma once

#include <span>

#include "runtime/transport.hpp"

namespace oneside::rma::detail {

void apply_accumulate_message(transport::backend& t, rank_t source,
                              std::span<const std::byte> payload);

}  // namespace oneside::rma::detail
