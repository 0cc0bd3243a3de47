// Datatypes: the predefined element types (every C++ arithmetic type, std::byte, complex
// numbers and the value/index pairs of minloc/maxloc) and the derived types built from them
// with MPI's constructors (contiguous, vector, hvector, indexed, hindexed, indexed_block,
// hindexed_block, struct, subarray, resized, dup), with their size, bounds and extent.
// A datatype is an immutable, cheaply copied handle; predefined ones live for the program,
// a derived one as long as a handle to it (or to a type built from it) exists.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
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

// A datatype: a typemap (a sequence of basic elements at byte displacements) with MPI's
// bounds. The derived constructors follow MPI 4.1 §5.1 (MPI_Type_contiguous, _vector,
// _create_hvector, _indexed, _create_hindexed, _create_indexed_block,
// _create_hindexed_block, _create_struct, _create_subarray, _create_resized, _dup):
// - A constructor places copies of its old type(s); copy k of a block starts k extents of
//   the old type after the block's displacement. The typemap order is the order of the
//   blocks as given (unsorted displacements stay unsorted) and, in a block, of the copies.
// - lb and ub: without markers, the lowest and highest bounds of the copies (old lb and
//   old lb + extent); resized sets explicit lb/ub markers, which every type built from it
//   inherits and which, in a struct, win over the bounds of marker-less members (MPI's
//   sticky lb/ub rule). A struct without markers pads its extent up to a multiple of the
//   strictest alignment of the basic types inside (MPI's epsilon, as every implementation
//   applies it: only in the struct constructor).
// - true_lb and true_extent span the data bytes only, markers and padding excluded.
// - subarray is its data in a full array: lb 0 and extent prod(sizes) × old extent (as if
//   resized; markers of the old type do not move them).
// Every constructor returns a committed, immutable type: there is no separate commit or
// free, and types may be shared between threads. Arguments are checked before anything is
// built; errors: `count` for a negative count or block length; `arg` for spans of
// different lengths, subarray sizes/subsizes/starts out of range, a non-positive extent in
// resized, bounds or a size that overflow 64 bits; `type` for an empty (moved-from)
// handle; `intern` when the flattened type would exceed 2^25 runs or blocks (512 MiB).
// Names: a predefined type is named after its C++ type ("double", "value_index<int>"); a
// derived one after its call, e.g. "vector(3,2,5,int)", "indexed([1,2],[0,5],double)",
// "struct([1,1],[0,8],[int,double])", "subarray([4,5],[2,3],[1,1],c,int)",
// "resized(int,0,8)", "dup(int)"; arrays longer than 8 show their first 8 entries and
// "...", and a name longer than 240 characters is cut with "...".
class datatype {
 public:
  // The predefined datatype of T (int, double, value_index<double>, std::byte, …).
  template <predefined_element T>
  static const datatype& of() noexcept {
    static const datatype& type = predefined(basic_type_v<T>);  // looked up once per T
    return type;
  }
  static const datatype& predefined(basic_type t) noexcept;

  // count copies of old, one after the other (MPI_Type_contiguous).
  static datatype contiguous(count_t count, const datatype& old);
  // count blocks of blocklength copies, block i starting i × stride extents of old after the
  // first (MPI_Type_vector). stride may be negative or zero.
  static datatype vector(count_t count, count_t blocklength, count_t stride, const datatype& old);
  // As vector, with the stride in bytes (MPI_Type_create_hvector).
  static datatype hvector(count_t count, count_t blocklength, std::ptrdiff_t stride_bytes,
                          const datatype& old);
  // Block i: blocklengths[i] copies at displacements[i] extents of old
  // (MPI_Type_indexed). The spans must have equal lengths.
  static datatype indexed(std::span<const count_t> blocklengths,
                          std::span<const count_t> displacements, const datatype& old);
  // As indexed, with byte displacements (MPI_Type_create_hindexed).
  static datatype hindexed(std::span<const count_t> blocklengths,
                           std::span<const std::ptrdiff_t> byte_displacements, const datatype& old);
  // As indexed with one block length for every block (MPI_Type_create_indexed_block).
  static datatype indexed_block(count_t blocklength, std::span<const count_t> displacements,
                                const datatype& old);
  // As hindexed with one block length (MPI_Type_create_hindexed_block).
  static datatype hindexed_block(count_t blocklength,
                                 std::span<const std::ptrdiff_t> byte_displacements,
                                 const datatype& old);
  // Block i: blocklengths[i] copies of types[i] at byte_displacements[i]
  // (MPI_Type_create_struct). The three spans must have equal lengths.
  static datatype structure(std::span<const count_t> blocklengths,
                            std::span<const std::ptrdiff_t> byte_displacements,
                            std::span<const datatype> types);
  // Array storage order of subarray: c is row-major (the last index varies fastest),
  // fortran column-major (the first index varies fastest).
  enum class array_order : std::uint8_t { c, fortran };
  // The subarray subsizes at starts of an array of sizes elements of old
  // (MPI_Type_create_subarray), elements in storage order. At least one dimension; per
  // dimension sizes >= 1, 0 <= subsizes <= sizes, 0 <= starts <= sizes - subsizes.
  static datatype subarray(std::span<const count_t> sizes, std::span<const count_t> subsizes,
                           std::span<const count_t> starts, array_order order, const datatype& old);
  // old with lb and extent replaced (MPI_Type_create_resized); extent must be positive.
  static datatype resized(const datatype& old, std::ptrdiff_t lb, std::ptrdiff_t extent);
  // A new type with old's layout (MPI_Type_dup); it compares unequal to old.
  static datatype dup(const datatype& old);

  // Bytes of data in one element of this type (MPI_Type_size).
  std::size_t size() const noexcept { return summary_.size; }
  // Lower bound and extent (MPI_Type_get_extent), and the true ones (MPI_Type_get_true_extent).
  std::ptrdiff_t lb() const noexcept;
  std::ptrdiff_t extent() const noexcept { return summary_.extent; }
  std::ptrdiff_t true_lb() const noexcept;
  std::ptrdiff_t true_extent() const noexcept;
  // The one basic type every element is made of. For a mixed type (see is_mixed) this is
  // basic_type::count_, which names no type. A type without basic elements (count 0, or
  // only markers) takes the basic type of its old type, a struct the common basic type of
  // its member types; std::byte when they disagree (such a type is not mixed).
  basic_type basic() const noexcept { return summary_.basic; }
  // Number of basic elements in one element (vector(3,2,5,int): 6). A value_index pair is
  // one basic element.
  std::size_t basic_count() const noexcept { return summary_.basic_count; }
  // True when the basic types inside are not all the same (a struct of int and double);
  // such a type can be moved (put, get) but not accumulated (COM-12).
  bool is_mixed() const noexcept { return summary_.mixed; }
  bool is_predefined() const noexcept { return summary_.predefined; }
  // True when `count` elements occupy size()*count contiguous bytes starting at the
  // buffer (a single data run at offset 0 and extent() == size()).
  bool is_contiguous() const noexcept { return summary_.contiguous; }
  // "double", "value_index<int>", "vector(3,2,5,int)", … (see above).
  std::string_view name() const noexcept;

  friend bool operator==(const datatype& a, const datatype& b) noexcept {
    return a.impl_ == b.impl_;
  }

  const detail::datatype_impl& impl() const noexcept { return *impl_; }

 private:
  explicit datatype(std::shared_ptr<const detail::datatype_impl> impl) noexcept;
  friend struct detail::datatype_impl;
  // A copy of what the hot paths ask (the type is immutable), so those accessors are loads
  // rather than calls into the library.
  struct summary {
    std::size_t size = 0;
    std::ptrdiff_t extent = 0;
    std::size_t basic_count = 0;
    basic_type basic = basic_type::count_;
    bool predefined = false;
    bool contiguous = false;
    bool mixed = false;
  };
  std::shared_ptr<const detail::datatype_impl> impl_;
  summary summary_;
};

// Name of a basic type ("unsigned long", "value_index<double>", "std::byte").
std::string_view basic_type_name(basic_type t) noexcept;
// Bytes of data in one element of a basic type, as MPI_Type_size counts them (equal to
// datatype::predefined(t).size()). For the value_index pairs this is the value plus the
// index without padding (value_index<double>: 12), less than the array stride sizeof (16),
// which is the predefined type's extent(). 0 for a value outside the enum.
std::size_t basic_type_size(basic_type t) noexcept;

}  // namespace oneside
