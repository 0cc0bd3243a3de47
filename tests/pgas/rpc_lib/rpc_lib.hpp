// Functions for rpc_test.cpp that live in a shared library of their own, loaded by every rank
// at an address of its own: rpc must name them by their object, not by their address.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oneside::test::rpc_lib {

// The weighted sum of v, and the rank that computed it (in the high 16 bits).
std::int64_t weighted_sum(const std::vector<std::int64_t>& v, std::int64_t weight);
// `s` repeated `times` times, followed by the rank that built it.
std::string repeat(std::string s, int times);
// The address of weighted_sum in this process (differs between ranks under ASLR).
std::uintptr_t weighted_sum_address();

}  // namespace oneside::test::rpc_lib
