// What the synchronization calls (fence.cpp, pscw.cpp, passive.cpp, flush.cpp) share: the
// checks of an assertion and of a target rank, and the completion of every operation this
// process issued. Every synchronization call is a full memory and compiler barrier (SEM-13),
// even when the transport completes operations at once.
#pragma once

#include <string>
#include <string_view>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/types.hpp>

#include "window/window_impl.hpp"

namespace oneside::rma::detail {

inline constexpr unsigned all_modes = 0x1FU;

inline void check_assert(window_impl& w, std::string_view call, mode assert) {
  if ((static_cast<unsigned>(assert) & ~all_modes) != 0) [[unlikely]] {
    w.fail(error_class::assert_, w.where(call, "SYN-29"),
           "assertion " + std::to_string(static_cast<unsigned>(assert)) +
               " has bits that name no mode");
  }
}

[[noreturn, gnu::noinline]] inline void bad_target(window_impl& w, std::string_view call,
                                                   rank_t target) {
  w.fail(error_class::rank, w.where(call, "COM-10", target),
         "rank " + std::to_string(target) + " is not in the window's group");
}

inline void check_target(window_impl& w, std::string_view call, rank_t target) {
  if (target < 0 || target >= w.size) [[unlikely]] {
    bad_target(w, call, target);
  }
}

// Completes every operation this process issued, at every target.
inline void complete_all(window_impl& w) {
  w.transport->flush_all();  // a full barrier itself
}

}  // namespace oneside::rma::detail
