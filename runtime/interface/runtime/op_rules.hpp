// The categories of basic types that the spec's op rules speak of (COM-13, COM-18) and
// which op is defined on which category. One constexpr source for op_is_valid and for the
// table of reduction kernels, so the two cannot disagree.
#pragma once

#include <cstddef>
#include <cstdint>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/op.hpp>

namespace oneside::detail {

inline constexpr std::size_t op_count = static_cast<std::size_t>(op::no_op) + 1;

// The reduction-table groups of MPI (§5.9.2), in C++ terms.
enum class type_class : std::uint8_t {
  integer,    // signed char … unsigned long long (C integer)
  floating,   // float, double, long double
  complex,    // std::complex<float|double|long double>
  logical,    // bool
  byte,       // std::byte
  character,  // char, wchar_t, char8_t, char16_t, char32_t: no reduction at all
  pair,       // value_index<V>: minloc/maxloc only
};

constexpr type_class classify(basic_type t) noexcept {
  switch (t) {
    case basic_type::boolean:
      return type_class::logical;
    case basic_type::character:
    case basic_type::wide_character:
    case basic_type::char8:
    case basic_type::char16:
    case basic_type::char32:
      return type_class::character;
    case basic_type::signed_char:
    case basic_type::unsigned_char:
    case basic_type::short_int:
    case basic_type::unsigned_short:
    case basic_type::int_:
    case basic_type::unsigned_int:
    case basic_type::long_int:
    case basic_type::unsigned_long:
    case basic_type::long_long:
    case basic_type::unsigned_long_long:
      return type_class::integer;
    case basic_type::float_:
    case basic_type::double_:
    case basic_type::long_double:
      return type_class::floating;
    case basic_type::complex_float:
    case basic_type::complex_double:
    case basic_type::complex_long_double:
      return type_class::complex;
    case basic_type::byte:
      return type_class::byte;
    case basic_type::float_int:
    case basic_type::double_int:
    case basic_type::long_int_pair:
    case basic_type::int_int:
    case basic_type::short_int_pair:
    case basic_type::long_double_int:
      return type_class::pair;
    case basic_type::count_:
      break;
  }
  return type_class::character;  // not a type: callers range-check first
}

// True when `o` is defined on elements of `t` in some use (COM-13); replace and no_op are
// defined on every type, and op_is_valid adds where they may be used (COM-14, COM-15).
constexpr bool op_defined_for(op o, basic_type t) noexcept {
  if (static_cast<std::size_t>(t) >= basic_type_count) return false;
  const type_class c = classify(t);
  switch (o) {
    case op::sum:
    case op::prod:
      return c == type_class::integer || c == type_class::floating || c == type_class::complex;
    case op::min:
    case op::max:
      return c == type_class::integer || c == type_class::floating;
    case op::land:
    case op::lor:
    case op::lxor:
      return c == type_class::integer || c == type_class::logical;
    case op::band:
    case op::bor:
    case op::bxor:
      return c == type_class::integer || c == type_class::byte;
    case op::minloc:
    case op::maxloc:
      return c == type_class::pair;
    case op::replace:
    case op::no_op:
      return true;
  }
  return false;
}

// compare_and_swap takes integer, logical and byte types (COM-18): not floating point,
// complex, characters or pairs.
constexpr bool cas_defined_for(basic_type t) noexcept {
  const type_class c = classify(t);
  return c == type_class::integer || c == type_class::logical || c == type_class::byte;
}

}  // namespace oneside::detail
