// Datatypes: the predefined element types (every C++ arithmetic type, std::byte, complex
// numbers and the value/index pairs of minloc/maxloc) with their size and extent.
// A datatype is an immutable, cheaply copied handle; predefined ones live for the program.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>

#include <oneside/runtime/types.hpp>

namespace oneside {

// The element pair used by minloc/maxloc (MPI's FLOAT_INT, DOUBLE_INT, LONG_INT, 2INT,
// SHORT_INT, LONG_DOUBLE_INT). Ties resolve to the smaller index.
template <class V>
struct value_index {
  V value;
  int index;
  friend bool operator==(const value_index&, const value_index&) = default;
};

// Every predefined element type. The order is part of no contract.
enum class basic_type : std::uint8_t {
  boolean,
  character,       // char
  wide_character,  // wchar_t
  char8,
  char16,
  char32,
  signed_char,
  unsigned_char,
  short_int,
  unsigned_short,
  int_,
  unsigned_int,
  long_int,
  unsigned_long,
  long_long,
  unsigned_long_long,
  float_,
  double_,
  long_double,
  complex_float,
  complex_double,
  complex_long_double,
  byte,
  float_int,
  double_int,
  long_int_pair,  // value_index<long>
  int_int,
  short_int_pair,  // value_index<short>
  long_double_int,
  count_  // number of predefined types; not a type
};

inline constexpr std::size_t basic_type_count = static_cast<std::size_t>(basic_type::count_);

namespace detail {
template <class T>
struct basic_type_of;  // maps a C++ type to its basic_type; undefined for other types
template <basic_type B>
struct basic_tag {
  static constexpr basic_type value = B;
};
// clang-format off
template <> struct basic_type_of<bool> : basic_tag<basic_type::boolean> {};
template <> struct basic_type_of<char> : basic_tag<basic_type::character> {};
template <> struct basic_type_of<wchar_t> : basic_tag<basic_type::wide_character> {};
template <> struct basic_type_of<char8_t> : basic_tag<basic_type::char8> {};
template <> struct basic_type_of<char16_t> : basic_tag<basic_type::char16> {};
template <> struct basic_type_of<char32_t> : basic_tag<basic_type::char32> {};
template <> struct basic_type_of<signed char> : basic_tag<basic_type::signed_char> {};
template <> struct basic_type_of<unsigned char> : basic_tag<basic_type::unsigned_char> {};
template <> struct basic_type_of<short> : basic_tag<basic_type::short_int> {};
template <> struct basic_type_of<unsigned short> : basic_tag<basic_type::unsigned_short> {};
template <> struct basic_type_of<int> : basic_tag<basic_type::int_> {};
template <> struct basic_type_of<unsigned> : basic_tag<basic_type::unsigned_int> {};
template <> struct basic_type_of<long> : basic_tag<basic_type::long_int> {};
template <> struct basic_type_of<unsigned long> : basic_tag<basic_type::unsigned_long> {};
template <> struct basic_type_of<long long> : basic_tag<basic_type::long_long> {};
template <> struct basic_type_of<unsigned long long> : basic_tag<basic_type::unsigned_long_long> {};
template <> struct basic_type_of<float> : basic_tag<basic_type::float_> {};
template <> struct basic_type_of<double> : basic_tag<basic_type::double_> {};
template <> struct basic_type_of<long double> : basic_tag<basic_type::long_double> {};
template <> struct basic_type_of<std::complex<float>> : basic_tag<basic_type::complex_float> {};
template <> struct basic_type_of<std::complex<double>> : basic_tag<basic_type::complex_double> {};
template <> struct basic_type_of<std::complex<long double>> : basic_tag<basic_type::complex_long_double> {};
template <> struct basic_type_of<std::byte> : basic_tag<basic_type::byte> {};
template <> struct basic_type_of<value_index<float>> : basic_tag<basic_type::float_int> {};
template <> struct basic_type_of<value_index<double>> : basic_tag<basic_type::double_int> {};
template <> struct basic_type_of<value_index<long>> : basic_tag<basic_type::long_int_pair> {};
template <> struct basic_type_of<value_index<int>> : basic_tag<basic_type::int_int> {};
template <> struct basic_type_of<value_index<short>> : basic_tag<basic_type::short_int_pair> {};
template <> struct basic_type_of<value_index<long double>> : basic_tag<basic_type::long_double_int> {};
// clang-format on

struct datatype_impl;
}  // namespace detail

// A C++ type with a predefined datatype.
template <class T>
concept predefined_element = requires {
  detail::basic_type_of<std::remove_cv_t<T>>::value;
};

template <predefined_element T>
inline constexpr basic_type basic_type_v = detail::basic_type_of<std::remove_cv_t<T>>::value;

class datatype {
 public:
  // The predefined datatype of T (int, double, value_index<double>, std::byte, …).
  template <predefined_element T>
  static const datatype& of() noexcept {
    return predefined(basic_type_v<T>);
  }
  static const datatype& predefined(basic_type t) noexcept;

  // Bytes of data in one element of this type (MPI_Type_size).
  std::size_t size() const noexcept;
  // Lower bound and extent (MPI_Type_get_extent), and the true ones (MPI_Type_get_true_extent).
  std::ptrdiff_t lb() const noexcept;
  std::ptrdiff_t extent() const noexcept;
  std::ptrdiff_t true_lb() const noexcept;
  std::ptrdiff_t true_extent() const noexcept;
  // The one basic type every element is made of.
  basic_type basic() const noexcept;
  bool is_predefined() const noexcept;
  // True when `count` elements occupy size()*count contiguous bytes.
  bool is_contiguous() const noexcept;
  // "double", "value_index<int>", …
  std::string_view name() const noexcept;

  friend bool operator==(const datatype& a, const datatype& b) noexcept {
    return a.impl_ == b.impl_;
  }

  const detail::datatype_impl& impl() const noexcept { return *impl_; }

 private:
  explicit datatype(std::shared_ptr<const detail::datatype_impl> impl) noexcept;
  friend struct detail::datatype_impl;
  std::shared_ptr<const detail::datatype_impl> impl_;
};

// Name of a basic type ("unsigned long", "value_index<double>", "std::byte").
std::string_view basic_type_name(basic_type t) noexcept;
// Bytes of data in one element of a basic type, as MPI_Type_size counts them (equal to
// datatype::predefined(t).size()). For the value_index pairs this is the value plus the
// index without padding (value_index<double>: 12), less than the array stride sizeof (16),
// which is the predefined type's extent(). 0 for a value outside the enum.
std::size_t basic_type_size(basic_type t) noexcept;

}  // namespace oneside
