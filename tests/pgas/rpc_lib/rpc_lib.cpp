// A shared library of functions that rpc_test.cpp calls on other ranks (rpc_lib.hpp).
#include "rpc_lib.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <oneside/runtime/team.hpp>

namespace oneside::test::rpc_lib {

std::int64_t weighted_sum(const std::vector<std::int64_t>& v, std::int64_t weight) {
  std::int64_t sum = 0;
  for (const std::int64_t x : v) sum += x * weight;
  return sum + (static_cast<std::int64_t>(oneside::world().rank()) << 48);
}

std::string repeat(std::string s, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += s;
  return out + "@" + std::to_string(oneside::world().rank());
}

std::uintptr_t weighted_sum_address() {
  return reinterpret_cast<std::uintptr_t>(&weighted_sum);
}

}  // namespace oneside::test::rpc_lib
