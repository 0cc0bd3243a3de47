// What a pending request holds: the transport's completion of its operations and, for fetching
// operations, the work left once data has arrived (unpacking into the user's layout).
#pragma once

#include <functional>

#include <oneside/rma/request.hpp>

#include "runtime/transport.hpp"

namespace oneside::rma::detail {

struct request_state {
  transport::completion completion;
  std::function<void()> finish;  // runs once, after completion
};

}  // namespace oneside::rma::detail
