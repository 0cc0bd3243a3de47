// The names of remote atomic operations on one word: what is done (op) on which type. Shared
// by the pgas layer's atomics (<oneside/pgas/atomic.hpp>) and the transport that carries them;
// not API by themselves (namespace detail).
#pragma once

#include <cstddef>
#include <cstdint>

namespace oneside::detail {

enum class amo_op : std::uint8_t {
  load,  // fetch only
  store,
  add,
  band,
  bor,
  bxor,
  min,
  max,
  swap,
  compare_swap,
};
inline constexpr int amo_op_count = 10;

enum class amo_type : std::uint8_t { i32, u32, i64, u64, f32, f64 };
inline constexpr int amo_type_count = 6;

constexpr std::size_t amo_type_size(amo_type t) noexcept {
  return (t == amo_type::i32 || t == amo_type::u32 || t == amo_type::f32) ? 4 : 8;
}

}  // namespace oneside::detail
