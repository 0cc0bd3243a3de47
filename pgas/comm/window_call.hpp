// What the pgas calls that go through the layer's window share (communication.cpp,
// atomic.cpp): the checks the window would not make or name clearly, the naming of the
// window's errors after the user's call, and displacements (absolute addresses).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/error.hpp>

#include "context/pgas_context.hpp"

namespace oneside::pgas::detail {

// The pgas context, after rejecting the null pointer (arg) and ranks outside the world (rank: the
// window would take -2 for proc_null and name its own group).
pgas_context& checked_context(std::uintptr_t addr, rank_t r, const char* call);

// Runs window calls, naming the pgas call in what they raise: "rput via window::put (…)".
template <class F>
decltype(auto) through_window(const char* call, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const error& e) {
    std::string what = e.what();
    const std::size_t at = what.find(": window::");
    if (at != std::string::npos) what.insert(at + 2, std::string(call) + " via ");
    throw error(e.error_class(), what);
  }
}

inline rma::disp_t disp_of(std::uintptr_t addr) noexcept {
  return static_cast<rma::disp_t>(addr);
}

}  // namespace oneside::pgas::detail
