// The C++ type behind each basic_type (the inverse of datatype.hpp's basic_type_of), so
// per-type tables (predefined datatypes, reduction kernels) are built by iterating over the
// enum instead of listing every type by hand in each table.
#pragma once

#include <complex>
#include <cstddef>
#include <tuple>
#include <utility>

#include <oneside/runtime/datatype.hpp>

namespace oneside::detail {

// In the order of basic_type; the static_assert below proves the order.
using basic_cpp_types =
    std::tuple<bool, char, wchar_t, char8_t, char16_t, char32_t, signed char, unsigned char, short,
               unsigned short, int, unsigned, long, unsigned long, long long, unsigned long long,
               float, double, long double, std::complex<float>, std::complex<double>,
               std::complex<long double>, std::byte, value_index<float>, value_index<double>,
               value_index<long>, value_index<int>, value_index<short>, value_index<long double>>;

template <std::size_t I>
using basic_cpp_type_at = std::tuple_element_t<I, basic_cpp_types>;

template <basic_type B>
using basic_cpp_type = basic_cpp_type_at<static_cast<std::size_t>(B)>;

template <std::size_t... Is>
constexpr bool basic_cpp_types_match_enum(std::index_sequence<Is...>) noexcept {
  return ((static_cast<std::size_t>(basic_type_v<basic_cpp_type_at<Is>>) == Is) && ...);
}
static_assert(std::tuple_size_v<basic_cpp_types> == basic_type_count);
static_assert(basic_cpp_types_match_enum(std::make_index_sequence<basic_type_count>{}));

template <class T>
inline constexpr bool is_value_index_v = false;
template <class V>
inline constexpr bool is_value_index_v<value_index<V>> = true;

// Bytes of data in one element, as MPI_Type_size counts them: a pair type's value and
// index without the padding between or after them; sizeof(T) for every other type (long
// double counts as its sizeof, as MPI_LONG_DOUBLE does).
template <class T>
constexpr std::size_t data_size_of() noexcept {
  if constexpr (is_value_index_v<T>) {
    return sizeof(T::value) + sizeof(T::index);
  } else {
    return sizeof(T);
  }
}

}  // namespace oneside::detail
