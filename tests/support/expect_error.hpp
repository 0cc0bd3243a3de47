// An error expectation shared by the multi-rank tests: the class of the oneside::error a call
// must raise and the call its message must name (STYLE.md R5).
#pragma once

#include <cstddef>
#include <exception>
#include <source_location>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>

#include <oneside/runtime/error.hpp>

namespace oneside::test {

// True when `message` contains `call` as a whole identifier ("window::put (" names "put",
// "window::rput" does not).
inline bool names_call(std::string_view message, std::string_view call) {
  const auto ident = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  for (std::size_t at = message.find(call); at != std::string_view::npos;
       at = message.find(call, at + 1)) {
    const bool left_ok = at == 0 || !ident(message[at - 1]);
    const std::size_t end = at + call.size();
    const bool right_ok = end >= message.size() || !ident(message[end]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

// Runs f, which must throw oneside::error of class `ec` whose message names `call` (R5: errors
// name the call). Reports at the caller's line. Returns true when the class matched.
template <class F>
bool expect_error(error_class ec, std::string_view call, F&& f,
                  const std::source_location& loc = std::source_location::current()) {
  try {
    std::forward<F>(f)();
  } catch (const oneside::error& e) {
    bool ok = true;
    if (e.error_class() != ec) {
      ADD_FAILURE_AT(loc.file_name(), static_cast<int>(loc.line()))
          << call << ": expected error class " << error_class_name(ec) << ", got "
          << error_class_name(e.error_class()) << ": " << e.what();
      ok = false;
    }
    if (!names_call(e.what(), call)) {
      ADD_FAILURE_AT(loc.file_name(), static_cast<int>(loc.line()))
          << "the message of the " << error_class_name(ec) << " error does not name the call '"
          << call << "': " << e.what();
    }
    return ok;
  } catch (const std::exception& e) {
    ADD_FAILURE_AT(loc.file_name(), static_cast<int>(loc.line()))
        << call << ": expected oneside::error(" << error_class_name(ec)
        << "), got another exception: " << e.what();
    return false;
  }
  ADD_FAILURE_AT(loc.file_name(), static_cast<int>(loc.line()))
      << call << ": expected oneside::error(" << error_class_name(ec) << "), nothing was raised";
  return false;
}

}  // namespace oneside::test
