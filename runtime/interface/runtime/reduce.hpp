// The reduction kernels behind accumulate, get_accumulate, fetch_and_op and the reducing
// collectives: inout[i] = inout[i] (op) in[i] over arrays of one basic type. The left
// operand (inout) is the value that comes first: the target's old value in an accumulate,
// the lower ranks' partial result in a reduction.
//
// Buffer contract, for every kernel:
// - `inout` and `in` each hold `count` elements laid out as an array of the basic type's
//   C++ type (stride sizeof, i.e. basic_type_extent(t), which for pair types is more than
//   basic_type_size(t)). Derived layouts are packed into such arrays by the caller.
// - Any alignment is accepted: elements are loaded and stored with memcpy, which compiles
//   to plain unaligned loads and stores, so bytes straight out of a message buffer or a
//   packed struct need no copy. (The kernels still vectorize; see reduce.cpp.)
// - `inout` and `in` must not overlap. With count == 0 nothing is touched and both may be
//   null; no_op never reads `in`, so it may be null (COM-15).
// - Only data bytes are written: a pair type's padding in `inout` is left as it was.
// - Not atomic: callers that need element-wise atomicity (SEM-3) hold the target's
//   accumulate lock or use transport atomics around a kernel call.
//
// Semantics (COM-13 … COM-15):
// - sum, prod: arithmetic. Integers wrap modulo 2^bits, signed ones included (computed in
//   the unsigned type, so there is no undefined behaviour on overflow).
// - min, max: `in < inout ? in : inout` and `inout < in ? in : inout`: when the operands
//   compare equal or unordered (a NaN on either side) the left operand is kept, so a NaN
//   propagates from inout but not from in, and min(+0.0, -0.0) keeps the left zero. This
//   is exactly what x86's minps/maxps compute, so the loops vectorize.
// - land, lor, lxor: nonzero is true; the result is 0 or 1 of the element type. bool
//   elements are read as bytes, so any nonzero byte is true and none is undefined.
// - band, bor, bxor: bitwise, on integers and std::byte.
// - minloc, maxloc: compare values with the same rule as min and max; on equal values the
//   smaller index wins, whichever side it came from.
// - replace: inout = in.  no_op: nothing.
#pragma once

#include <cstddef>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/op.hpp>

namespace oneside::detail {

// inout[i] = inout[i] (op) in[i] for i in [0, count), elements of one basic type.
using reduce_fn = void (*)(void* inout, const void* in, std::size_t count) noexcept;

// The kernel of (o, t); nullptr when op_is_valid(o, t, op_use::get_accumulate) is false
// (that use allows every op that is defined at all). Constant time: a table lookup.
reduce_fn reduce_function(op o, basic_type t) noexcept;

// Applies the kernel of (o, t). Precondition: reduce_function(o, t) != nullptr (checked by
// ONESIDE_ASSERT in debug builds; an invalid pair does nothing in release builds).
// The kernel of the baseline instruction set, whatever the CPU supports (reduce_function may
// pick a vector variant at run time). For tests that compare the two.
reduce_fn baseline_reduce_function(op o, basic_type t) noexcept;

void reduce_apply(op o, basic_type t, void* inout, const void* in, std::size_t count) noexcept;

}  // namespace oneside::detail
