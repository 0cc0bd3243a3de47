// The representation behind a oneside::datatype handle. Every datatype, predefined or
// derived, is described the same way: its size, bounds and extent, its type signature
// (for matching origin against target), its data flattened once into byte runs (so a
// transfer moves iovecs, never element by element) and, for a type made of one basic type,
// into element runs (so an accumulate applies a reduction kernel to whole arrays). A derived
// type also keeps the call that made it (combiner, integer arguments, old types), which is
// what encode_layout ships to a target (layout.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <oneside/runtime/datatype.hpp>

namespace oneside::detail {

// How a datatype was made (MPI_Type_get_envelope's combiner). The values are part of the
// encoding of layout.hpp: append, never reorder.
enum class type_combiner : std::uint8_t {
  predefined,
  contiguous,
  vector,
  hvector,
  indexed,
  hindexed,
  indexed_block,
  struct_,
  subarray,
  resized,
  dup,
  hindexed_block,
};

// `length` data bytes at byte `offset` from the start of one element. Offsets may be
// negative (a type's lb may be).
struct byte_run {
  std::ptrdiff_t offset;
  std::size_t length;
  friend bool operator==(const byte_run&, const byte_run&) = default;
};

// `count` consecutive basic elements starting at byte `offset`, element k at
// offset + k × basic_type_extent(basic) (the stride of an array of the basic type's C++
// type, so a run is exactly what the reduction kernels of reduce.hpp take).
struct element_run {
  std::ptrdiff_t offset;
  std::size_t count;
  friend bool operator==(const element_run&, const element_run&) = default;
};

// `count` consecutive basic elements of type `type` in a type signature.
struct signature_run {
  basic_type type;
  std::size_t count;
  friend bool operator==(const signature_run&, const signature_run&) = default;
};

// datatype_impl::basic of a type made of several basic types (a struct of int and double).
// Such a type can be moved but not accumulated (COM-12).
inline constexpr basic_type mixed_basic_type = basic_type::count_;

struct datatype_impl {
  type_combiner combiner = type_combiner::predefined;
  // The one basic type every element is made of, or mixed_basic_type. A type without basic
  // elements takes the basic type it was built from (datatype::basic() documents the rule).
  basic_type basic = mixed_basic_type;
  // Bytes of data in one element, holes and padding excluded (MPI_Type_size).
  std::size_t size = 0;
  // Bounds as MPI defines them: lb/extent include markers and the struct padding rule
  // (resized may move them); true_lb/true_extent span the data bytes only. A type without
  // data has true_lb = true_extent = 0; one without data and markers also lb = extent = 0.
  std::ptrdiff_t lb = 0;
  std::ptrdiff_t extent = 0;
  std::ptrdiff_t true_lb = 0;
  std::ptrdiff_t true_extent = 0;
  // True when lb and ub come from explicit markers (set by resized and subarray, inherited
  // by every type built from such a type) rather than from the data: MPI's "sticky" bounds,
  // which win over data bounds in a struct and suppress its alignment padding.
  bool explicit_bounds = false;
  // The strictest alignment of the basic types inside; a struct's extent is padded to it.
  std::size_t alignment = 1;
  // The data bytes of one element in typemap order (the order data is packed in, which is
  // not necessarily increasing offset); runs adjacent both in the typemap and in memory are
  // merged. Their lengths add up to `size`. A predefined type without holes is {0, size}.
  std::vector<byte_run> runs;
  // For a type that is not mixed: its basic elements in typemap order, consecutive ones at
  // the stride basic_type_extent(basic) merged (so a padded pair type's elements merge even
  // though their byte runs do not touch). Their counts add up to basic_count. Empty for a
  // mixed type.
  std::vector<element_run> element_runs;
  // The type signature, run-length encoded: equal adjacent basic types are merged, so a
  // homogeneous type has exactly one entry {basic, basic_count}. Two transfers match when
  // the signatures of count × type expand to the same sequence (signatures_match in
  // layout.hpp, which also expands a pair into its value and int as MPI does).
  std::vector<signature_run> signature;
  // Number of basic elements in one element (the sum of the signature's counts).
  std::size_t basic_count = 0;
  // True when `count` elements occupy exactly count × size contiguous bytes starting at the
  // buffer (one run {0, size} and extent == size; or no data and extent 0).
  bool contiguous = false;
  std::string name;
  // The constructor call (MPI_Type_get_contents): its integer arguments in the order of
  // the call (see derived.cpp for each combiner) and the old types. Empty when predefined.
  std::vector<std::int64_t> args;
  std::vector<datatype> children;

  bool is_predefined() const noexcept { return combiner == type_combiner::predefined; }
  bool is_mixed() const noexcept { return basic == mixed_basic_type; }

  // Wraps an impl in a public handle (datatype's constructor is private to this struct).
  static datatype make_handle(std::shared_ptr<const datatype_impl> impl) noexcept;
};

// Bytes from one element of a basic type to the next in an array of the C++ type
// (sizeof; larger than basic_type_size() for pair types with padding).
std::size_t basic_type_extent(basic_type t) noexcept;
// alignof the basic type's C++ type; 0 for a value outside the enum.
std::size_t basic_type_alignment(basic_type t) noexcept;
// The basic type of a pair's value (float for value_index<float>), or t itself when t is
// not a pair type. MPI's signature of a pair is (value, int).
basic_type pair_value_type(basic_type t) noexcept;
bool is_pair_type(basic_type t) noexcept;

}  // namespace oneside::detail
