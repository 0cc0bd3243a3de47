// The one checking helper (STYLE.md R5): validate, then act. ONESIDE_CHECK raises
// oneside::error with a formatted message when its condition is false; ONESIDE_ASSERT
// guards internal invariants only and is compiled out in release builds.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <oneside/runtime/error.hpp>

#define ONESIDE_CHECK(cond, ec, ...)               \
  do {                                             \
    if (!(cond)) [[unlikely]] {                    \
      ::oneside::detail::raise((ec), __VA_ARGS__); \
    }                                              \
  } while (false)

#ifdef NDEBUG
#define ONESIDE_ASSERT(cond) \
  do {                       \
  } while (false)
#else
#define ONESIDE_ASSERT(cond)                                                                    \
  do {                                                                                          \
    if (!(cond)) [[unlikely]] {                                                                 \
      std::fprintf(stderr, "oneside: internal assertion failed: %s (%s:%d)\n", #cond, __FILE__, \
                   __LINE__);                                                                   \
      std::abort();                                                                             \
    }                                                                                           \
  } while (false)
#endif

namespace oneside::detail {
// Throws error(intern) naming the call and the system error (errno) of a failed system call.
[[noreturn]] void raise_system(std::string_view call, std::string_view what, int err);
}  // namespace oneside::detail
