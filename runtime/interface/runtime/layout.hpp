// How the rma layer walks a datatype's memory: the byte runs and element runs of `count`
// consecutive elements, type matching (COM-6), the memory a transfer touches (COM-8),
// packing, and the encoding that ships a target datatype by value to the process that
// interprets it (COM-7, SYN-36, rule 13 of the checklist).
//
// Element i of a buffer of `count` elements starts at i × extent from the buffer. Every
// function takes count >= 0 (the rma layer checks counts first, COM-10); a count of 0
// touches nothing. Thread-safe: datatypes are immutable.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/types.hpp>

#include "runtime/datatype_impl.hpp"

namespace oneside::detail {

// Raises error(type): element runs were asked of a mixed type.
[[noreturn]] void raise_mixed_element_runs(const datatype& type);

// Byte runs of `count` consecutive elements of `type` (element i starts at i*extent), in
// typemap order, with runs adjacent in memory (also across element boundaries) merged.
// f(std::ptrdiff_t offset, std::size_t length). A type whose one run spans its extent
// (every contiguous type) gives one run for any count; otherwise the cost is one call per
// run, with no allocation.
template <class F>
void for_each_byte_run(const datatype& type, count_t count, F&& f) {
  const datatype_impl& t = type.impl();
  if (count <= 0 || t.runs.empty()) return;
  const byte_run* const first = t.runs.data();
  const byte_run* const end = first + t.runs.size();
  const std::ptrdiff_t extent = t.extent;
  if (t.runs.size() == 1 && static_cast<std::ptrdiff_t>(first->length) == extent) {
    f(first->offset, first->length * static_cast<std::size_t>(count));
    return;
  }
  std::ptrdiff_t at = first->offset;
  std::size_t length = first->length;
  const byte_run* r = first + 1;
  std::ptrdiff_t base = 0;
  for (count_t i = 0;;) {
    for (; r != end; ++r) {
      const std::ptrdiff_t offset = base + r->offset;
      if (at + static_cast<std::ptrdiff_t>(length) == offset) {
        length += r->length;
      } else {
        f(at, length);
        at = offset;
        length = r->length;
      }
    }
    if (++i == count) break;
    base += extent;
    r = first;
  }
  f(at, length);
}

// Element runs of `count` elements of a homogeneous type (not is_mixed(); error(type)
// otherwise): f(std::ptrdiff_t offset, std::size_t n_basic_elements), element k of a run
// at offset + k × basic_type_extent(type.basic()) — an array the reduction kernels of
// reduce.hpp take as is. Merged across element boundaries like for_each_byte_run.
template <class F>
void for_each_element_run(const datatype& type, count_t count, F&& f) {
  const datatype_impl& t = type.impl();
  if (t.is_mixed()) raise_mixed_element_runs(type);
  if (count <= 0 || t.element_runs.empty()) return;
  const element_run* const first = t.element_runs.data();
  const element_run* const end = first + t.element_runs.size();
  const std::ptrdiff_t extent = t.extent;
  const auto stride = static_cast<std::ptrdiff_t>(basic_type_extent(t.basic));
  if (t.element_runs.size() == 1 && static_cast<std::ptrdiff_t>(first->count) * stride == extent) {
    f(first->offset, first->count * static_cast<std::size_t>(count));
    return;
  }
  std::ptrdiff_t at = first->offset;
  std::size_t n = first->count;
  const element_run* r = first + 1;
  std::ptrdiff_t base = 0;
  for (count_t i = 0;;) {
    for (; r != end; ++r) {
      const std::ptrdiff_t offset = base + r->offset;
      if (at + static_cast<std::ptrdiff_t>(n) * stride == offset) {
        n += r->count;
      } else {
        f(at, n);
        at = offset;
        n = r->count;
      }
    }
    if (++i == count) break;
    base += extent;
    r = first;
  }
  f(at, n);
}

// Number of runs for_each_byte_run gives for `count` elements (to size iovec arrays), in
// constant time.
std::size_t byte_run_count(const datatype& type, count_t count);
// Number of runs for_each_element_run gives, in constant time; error(type) if mixed.
std::size_t element_run_count(const datatype& type, count_t count);

// True when two data bytes of count elements of `type` are the same byte: a type with
// overlapping entries must not be the target of a put or accumulate, nor the origin of a get
// (COM-7, COM-9). Linear in the runs of one element when they are in increasing order (and
// the elements do not reach into each other), O(r log r) with a sort otherwise.
bool has_overlapping_entries(const datatype& type, count_t count);

// True when count_a × a and count_b × b have the same type signature (the same sequence of
// basic types), MPI's type matching (COM-6). As in MPI, a value_index pair is its value
// type followed by int: one value_index<int> matches two int. Constant time for two
// homogeneous types; otherwise linear in the signature runs of the shorter walk.
bool signatures_match(count_t count_a, const datatype& a, count_t count_b, const datatype& b);

// The bytes of memory touched by count elements, relative to the buffer start:
// [lo, hi) = [true_lb, (count-1)*extent + true_lb + true_extent); {0, 0} for count 0 or a
// type without data. Bounds checks of a target (COM-8, rule 13) use this against the
// target's window.
struct footprint {
  std::ptrdiff_t lo;
  std::ptrdiff_t hi;
  friend bool operator==(const footprint&, const footprint&) = default;
};
footprint memory_footprint(const datatype& type, count_t count);

// Packs count elements from src (laid out as type) into dst (count × size() data bytes
// back to back, in typemap order: MPI's packed form, so a pair's padding is dropped), and
// the reverse. The buffers must not overlap.
void pack(const datatype& type, count_t count, const void* src, void* dst);
void unpack(const datatype& type, count_t count, const void* src, void* dst);

// Serialization of a datatype's layout for shipping to another process (an active message
// carries the target datatype by value, SYN-36 / rule 13): a compact byte encoding of the
// calls that built the type (so the decoder builds "the same datatype with the same calls",
// COM-7), and its decoder. A type used twice inside another is encoded once. See layout.cpp
// for the format.
std::vector<std::byte> encode_layout(const datatype& type);
// Throws error(type) on malformed input (bad version, truncated, trailing bytes, unknown
// combiner or basic type, bad references, arguments a constructor rejects).
datatype decode_layout(std::span<const std::byte> bytes);

}  // namespace oneside::detail
