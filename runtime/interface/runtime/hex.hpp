// Addresses in error messages, as "0x7f3a…" (the pgas layer names heap addresses this way).
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <string>

namespace oneside::detail {

inline std::string hex(std::uintptr_t a) {
  std::array<char, 2 * sizeof(std::uintptr_t)> digits{};
  const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), a, 16);
  return "0x" + std::string(digits.data(), end.ptr);
}
inline std::string hex(const void* p) {
  return hex(reinterpret_cast<std::uintptr_t>(p));
}

}  // namespace oneside::detail
