// Predefined reduction operations and the (op, type) rules of the spec (COM-13 … COM-15).
#pragma once

#include <cstdint>
#include <string_view>

namespace oneside {

enum class basic_type : std::uint8_t;

// The predefined operations. replace and no_op exist only for the accumulate family
// (COM-14, COM-15); collectives accept the first twelve.
enum class op : std::uint8_t {
  sum,
  prod,
  min,
  max,
  land,
  lor,
  lxor,
  band,
  bor,
  bxor,
  minloc,
  maxloc,
  replace,
  no_op,
};

// Where an op is used; decides whether replace and no_op are allowed.
enum class op_use : std::uint8_t {
  collective,      // reduce, allreduce, scan, exscan: no replace, no no_op
  accumulate,      // accumulate, raccumulate: replace, no no_op
  get_accumulate,  // get_accumulate, rget_accumulate, fetch_and_op: replace and no_op
};

std::string_view op_name(op o) noexcept;

// True when `o` is defined for elements of type `t` in that use (COM-13):
//   sum, prod: integers, floating point, complex;  min, max: integers, floating point;
//   land, lor, lxor: integers and bool;  band, bor, bxor: integers and std::byte;
//   minloc, maxloc: value_index pair types only;  replace, no_op: every type.
// "Integers" are the signed/unsigned integer types; char, wchar_t and charN_t are
// characters, which no reduction accepts (MPI_CHAR is not a reduction type).
bool op_is_valid(op o, basic_type t, op_use use) noexcept;

}  // namespace oneside
