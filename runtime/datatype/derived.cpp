// The derived datatype constructors (MPI 4.1 §5.1): argument checks, bounds by MPI's rules,
// and the flattening of one element into byte runs, element runs and a signature, done once
// when the type is made.
//
// Each constructor describes its typemap as a sequence of blocks, a block being `copies`
// consecutive copies of an old type (copy k at disp + k × old extent), in typemap order.
// The blocks are walked twice: a measuring pass checks every bound and size for overflow
// and counts the runs to come (so a rejected call allocates nothing and an accepted one
// reserves once), then a building pass appends shifted copies of the old type's runs,
// merging a run into the previous one when they touch. A block of an old type whose one
// run spans its extent becomes one run however many copies it has, so
// contiguous(1 << 20, double) is one run built in constant time.
//
// datatype_impl::args per combiner (the call's integer arguments, as encode_layout ships
// them): contiguous [count]; vector, hvector [count, blocklength, stride];
// indexed, hindexed [n, blocklengths..., displacements...];
// indexed_block, hindexed_block [n, blocklength, displacements...];
// struct [n, blocklengths..., byte displacements...] (children: the n types);
// subarray [ndims, order, sizes..., subsizes..., starts...]; resized [lb, extent]; dup [].
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <oneside/runtime/datatype.hpp>

#include "runtime/check.hpp"
#include "runtime/datatype_impl.hpp"

namespace oneside {
namespace detail {
namespace {

// The most runs (byte runs, element runs, signature runs, each) and blocks with entries one
// type may have: 2^25 runs of 16 bytes are 512 MiB. Bigger types are refused with
// error(intern) rather than exhausting memory.
constexpr std::size_t max_runs = std::size_t{1} << 25;
// Names longer than this are cut (a type built from itself twice per level doubles it).
constexpr std::size_t max_name = 240;
// Arrays in names show at most this many entries.
constexpr std::size_t max_name_entries = 8;

[[noreturn]] void raise_overflow(std::string_view call) {
  raise(error_class::arg, {.call = call}, "the datatype's bounds or size overflow 64 bits");
}

[[noreturn]] void raise_too_large(std::string_view call) {
  raise(error_class::intern, {.call = call},
        "the datatype would flatten into more than 2^25 runs or blocks");
}

template <class T>
T checked_add(T a, T b, std::string_view call) {
  T r{};
  if (__builtin_add_overflow(a, b, &r)) raise_overflow(call);
  return r;
}

template <class T>
T checked_sub(T a, T b, std::string_view call) {
  T r{};
  if (__builtin_sub_overflow(a, b, &r)) raise_overflow(call);
  return r;
}

template <class T>
T checked_mul(T a, T b, std::string_view call) {
  T r{};
  if (__builtin_mul_overflow(a, b, &r)) raise_overflow(call);
  return r;
}

// a + b, saturating at max_runs + 1 (run counts only need to be compared with the limit).
std::size_t add_runs(std::size_t a, std::size_t b) {
  return std::min(a + std::min(b, max_runs + 1), max_runs + 1);
}
std::size_t mul_runs(std::size_t copies, std::size_t n) {
  if (n == 0) return 0;
  return copies > (max_runs + 1) / n ? max_runs + 1 : copies * n;
}

// `valid`: the handle has an impl (a moved-from one has none).
void check_handle(bool valid, std::string_view call) {
  ONESIDE_CHECK(valid, error_class::type, {.call = call},
                "the datatype handle is empty (moved from)");
}

void check_count(count_t n, std::string_view what, std::string_view call) {
  ONESIDE_CHECK(n >= 0, error_class::count, {.call = call},
                std::string(what).append(" is negative (").append(std::to_string(n)).append(")"));
}

void check_same_length(std::size_t a, std::size_t b, std::string_view what, std::string_view call) {
  ONESIDE_CHECK(a == b, error_class::arg, {.call = call},
                std::string(what)
                    .append(" have different lengths (")
                    .append(std::to_string(a))
                    .append(" and ")
                    .append(std::to_string(b))
                    .append(")"));
}

// --- measuring pass ------------------------------------------------------------------

struct interval {
  bool any = false;
  std::ptrdiff_t lo = 0;
  std::ptrdiff_t hi = 0;
  void add(std::ptrdiff_t l, std::ptrdiff_t h) {
    if (!any) {
      lo = l;
      hi = h;
      any = true;
    } else {
      lo = std::min(lo, l);
      hi = std::max(hi, h);
    }
  }
};

bool has_entries(const datatype_impl& t) {
  return t.basic_count > 0 || t.explicit_bounds;
}

// True when one run of `runs` covers a whole extent, so copies one extent apart merge into
// one run.
bool spans_extent(const std::vector<byte_run>& runs, std::ptrdiff_t extent) {
  return runs.size() == 1 && static_cast<std::ptrdiff_t>(runs[0].length) == extent;
}
bool spans_extent(const std::vector<element_run>& runs, std::size_t stride, std::ptrdiff_t extent) {
  return runs.size() == 1 && static_cast<std::ptrdiff_t>(runs[0].count * stride) == extent;
}

// Everything about the new type that needs no allocation: size, bounds, basic type,
// alignment, and how many runs the building pass will produce.
class measure {
 public:
  explicit measure(std::string_view call) : call_(call) {}

  void operator()(const datatype_impl& old, std::ptrdiff_t disp, std::size_t copies) {
    if (copies == 0 || !has_entries(old)) return;
    if (++blocks_ > max_runs) raise_too_large(call_);
    if (copies > static_cast<std::size_t>(PTRDIFF_MAX)) raise_overflow(call_);
    const auto last_copy = checked_mul(static_cast<std::ptrdiff_t>(copies - 1), old.extent, call_);
    const std::ptrdiff_t last_disp = checked_add(disp, last_copy, call_);
    const std::ptrdiff_t lo = checked_add(disp, old.lb, call_);
    const std::ptrdiff_t hi = checked_add(checked_add(last_disp, old.lb, call_), old.extent, call_);
    (old.explicit_bounds ? markers : bounds).add(lo, hi);
    if (old.basic_count == 0) return;

    data.add(checked_add(disp, old.true_lb, call_),
             checked_add(checked_add(last_disp, old.true_lb, call_), old.true_extent, call_));
    size = checked_add(size, checked_mul(copies, old.size, call_), call_);
    basic_count = checked_add(basic_count, checked_mul(copies, old.basic_count, call_), call_);
    alignment = std::max(alignment, old.alignment);
    if (old.is_mixed()) {
      mixed = true;
    } else if (!has_basic) {
      basic = old.basic;
      has_basic = true;
    } else if (basic != old.basic) {
      mixed = true;
    }
    runs =
        add_runs(runs, spans_extent(old.runs, old.extent) ? 1 : mul_runs(copies, old.runs.size()));
    const std::size_t stride = basic_type_extent(old.basic);
    element_runs = add_runs(element_runs, spans_extent(old.element_runs, stride, old.extent)
                                              ? 1
                                              : mul_runs(copies, old.element_runs.size()));
    // Only a mixed type stores a signature of more than one run; a block of a homogeneous
    // old type is one run of it.
    signature = add_runs(signature, old.is_mixed() ? mul_runs(copies, old.signature.size()) : 1);
    if (runs > max_runs || element_runs > max_runs || signature > max_runs) {
      raise_too_large(call_);
    }
  }

  std::size_t size = 0;
  std::size_t basic_count = 0;
  std::size_t alignment = 1;
  basic_type basic = mixed_basic_type;
  bool has_basic = false;
  bool mixed = false;
  interval data;     // data bytes of every copy
  interval bounds;   // [lb, ub) of copies without markers
  interval markers;  // [lb, ub) of copies with markers
  std::size_t runs = 0;
  std::size_t element_runs = 0;
  std::size_t signature = 0;

 private:
  std::string_view call_;
  std::size_t blocks_ = 0;
};

// --- building pass -------------------------------------------------------------------

std::size_t& amount(byte_run& r) {
  return r.length;
}
std::size_t& amount(element_run& r) {
  return r.count;
}
std::size_t amount(const byte_run& r) {
  return r.length;
}
std::size_t amount(const element_run& r) {
  return r.count;
}

// Appends r, merging it into the last run when the last one ends where r starts
// (`unit`: bytes per amount, 1 for byte runs, the basic stride for element runs).
template <class Run>
void append_run(std::vector<Run>& out, Run r, std::size_t unit) {
  if (!out.empty()) {
    Run& last = out.back();
    if (last.offset + static_cast<std::ptrdiff_t>(amount(last) * unit) == r.offset) {
      amount(last) += amount(r);
      return;
    }
  }
  out.push_back(r);
}

// Appends `copies` copies of `runs` (copy k shifted by disp + k × extent).
template <class Run>
void append_copies(std::vector<Run>& out, const std::vector<Run>& runs, std::ptrdiff_t disp,
                   std::size_t copies, std::ptrdiff_t extent, std::size_t unit) {
  if (runs.size() == 1 && static_cast<std::ptrdiff_t>(amount(runs[0]) * unit) == extent) {
    Run r = runs[0];
    r.offset += disp;
    amount(r) *= copies;
    append_run(out, r, unit);
    return;
  }
  std::ptrdiff_t base = disp;
  for (std::size_t k = 0; k < copies; ++k, base += extent) {
    for (Run r : runs) {
      r.offset += base;
      append_run(out, r, unit);
    }
  }
}

void append_signature(std::vector<signature_run>& out, signature_run s) {
  if (!out.empty() && out.back().type == s.type) {
    out.back().count += s.count;
    return;
  }
  out.push_back(s);
}

class flatten {
 public:
  flatten(const measure& m, datatype_impl& out) : out_(out), mixed_(m.mixed) {
    out_.runs.reserve(m.runs);
    if (!mixed_) {
      stride_ = basic_type_extent(m.basic);
      out_.element_runs.reserve(m.element_runs);
    } else {
      out_.signature.reserve(m.signature);
    }
  }

  void operator()(const datatype_impl& old, std::ptrdiff_t disp, std::size_t copies) {
    if (copies == 0 || old.basic_count == 0) return;
    append_copies(out_.runs, old.runs, disp, copies, old.extent, 1);
    if (!mixed_) {
      append_copies(out_.element_runs, old.element_runs, disp, copies, old.extent, stride_);
    } else if (!old.is_mixed()) {
      append_signature(out_.signature, signature_run{old.basic, copies * old.basic_count});
    } else {
      for (std::size_t k = 0; k < copies; ++k) {
        for (const signature_run& s : old.signature) append_signature(out_.signature, s);
      }
    }
  }

 private:
  datatype_impl& out_;
  bool mixed_;
  std::size_t stride_ = 0;
};

bool is_contiguous_layout(const datatype_impl& t) {
  if (t.size == 0) return t.extent == 0;
  return t.runs.size() == 1 && t.runs[0].offset == 0 &&
         t.extent == static_cast<std::ptrdiff_t>(t.size);
}

// Builds the impl of a type whose typemap is the blocks `blocks(visit)` visits.
// `fallback_basic`: the basic type when no block has elements. `pad`: apply the struct
// alignment rule (MPI's epsilon) when no marker sets the upper bound.
template <class Blocks>
std::shared_ptr<datatype_impl> build(std::string_view call, Blocks&& blocks,
                                     basic_type fallback_basic, bool pad) {
  measure m(call);
  blocks(m);

  // Bounds, all checked before anything is allocated.
  std::ptrdiff_t lb = 0;
  std::ptrdiff_t ub = 0;
  const bool explicit_bounds = m.markers.any;
  if (m.markers.any) {
    lb = m.markers.lo;
    ub = m.markers.hi;
  } else if (m.bounds.any) {
    lb = m.bounds.lo;
    ub = m.bounds.hi;
    if (pad && m.basic_count > 0) {
      const auto align = static_cast<std::ptrdiff_t>(m.alignment);
      const std::ptrdiff_t rem = checked_sub(ub, lb, call) % align;
      if (rem != 0) ub = checked_add(ub, align - rem, call);
    }
  }
  const std::ptrdiff_t extent = checked_sub(ub, lb, call);
  const std::ptrdiff_t true_extent = m.data.any ? checked_sub(m.data.hi, m.data.lo, call) : 0;

  auto impl = std::make_shared<datatype_impl>();
  impl->size = m.size;
  impl->basic_count = m.basic_count;
  // A type without elements is never mixed: it takes the fallback, or byte.
  if (fallback_basic == mixed_basic_type) fallback_basic = basic_type::byte;
  impl->basic = m.mixed ? mixed_basic_type : (m.has_basic ? m.basic : fallback_basic);
  impl->alignment = m.alignment;
  impl->lb = lb;
  impl->extent = extent;
  impl->true_lb = m.data.any ? m.data.lo : 0;
  impl->true_extent = true_extent;
  impl->explicit_bounds = explicit_bounds;

  flatten f(m, *impl);
  blocks(f);
  if (!m.mixed && m.basic_count > 0) impl->signature = {signature_run{impl->basic, m.basic_count}};
  impl->contiguous = is_contiguous_layout(*impl);
  return impl;
}

// --- names ---------------------------------------------------------------------------

template <class T>
void append_array(std::string& s, std::span<const T> v) {
  s.push_back('[');
  for (std::size_t i = 0; i < v.size() && i < max_name_entries; ++i) {
    if (i > 0) s.push_back(',');
    s.append(std::to_string(v[i]));
  }
  if (v.size() > max_name_entries) s.append(",...");
  s.push_back(']');
}

std::string finish_name(std::string s) {
  if (s.size() > max_name) {
    s.resize(max_name - 3);
    s.append("...");
  }
  return s;
}

std::string call_name(std::string_view combiner) {
  std::string s(combiner);
  s.push_back('(');
  return s;
}

datatype finish(std::shared_ptr<datatype_impl> impl, type_combiner c, std::string name,
                std::vector<std::int64_t> args, std::vector<datatype> children) {
  impl->combiner = c;
  impl->name = finish_name(std::move(name));
  impl->args = std::move(args);
  impl->children = std::move(children);
  return datatype_impl::make_handle(std::move(impl));
}

// The blocks of hvector (vector converts its stride to bytes first). A vector whose blocks
// follow each other without gaps has the typemap of one block of count × blocklength
// copies, which is cheaper to flatten.
auto hvector_blocks(count_t count, count_t blocklength, std::ptrdiff_t stride_bytes,
                    const datatype_impl& old, std::string_view call) {
  const auto n = static_cast<std::size_t>(count);
  const auto bl = static_cast<std::size_t>(blocklength);
  const bool gapless =
      blocklength > 0 && count > 1 && old.extent > 0 &&
      stride_bytes == checked_mul(static_cast<std::ptrdiff_t>(blocklength), old.extent, call);
  const std::size_t total = gapless ? checked_mul(n, bl, call) : 0;
  return [n, bl, stride_bytes, &old, gapless, total, call](auto&& visit) {
    if (bl == 0 || !has_entries(old)) return;  // nothing to place, however many blocks
    if (gapless) {
      visit(old, 0, total);
      return;
    }
    std::ptrdiff_t disp = 0;
    for (std::size_t i = 0; i < n; ++i) {
      visit(old, disp, bl);
      if (i + 1 < n) disp = checked_add(disp, stride_bytes, call);
    }
  };
}

datatype make_hvector(count_t count, count_t blocklength, std::ptrdiff_t stride_bytes,
                      const datatype& old, type_combiner c, count_t stride_arg,
                      std::string_view call) {
  const datatype_impl& o = old.impl();
  auto impl =
      build(call, hvector_blocks(count, blocklength, stride_bytes, o, call), o.basic, false);
  std::string name = call_name(c == type_combiner::vector ? "vector" : "hvector");
  name.append(std::to_string(count))
      .append(",")
      .append(std::to_string(blocklength))
      .append(",")
      .append(std::to_string(stride_arg))
      .append(",")
      .append(o.name)
      .append(")");
  return finish(std::move(impl), c, std::move(name), {count, blocklength, stride_arg}, {old});
}

// indexed, hindexed, indexed_block, hindexed_block: block i is blocklength(i) copies at
// byte displacement disp_bytes(i).
template <class Blocklength, class DispBytes>
auto indexed_blocks(std::size_t n, Blocklength blocklength, DispBytes disp_bytes,
                    const datatype_impl& old) {
  return [n, blocklength, disp_bytes, &old](auto&& visit) {
    for (std::size_t i = 0; i < n; ++i) {
      visit(old, disp_bytes(i), static_cast<std::size_t>(blocklength(i)));
    }
  };
}

// Displacements in extents of old, converted to bytes before any block is visited so that
// an overflow is reported by the measuring pass.
std::vector<std::ptrdiff_t> scale_displacements(std::span<const count_t> displacements,
                                                std::ptrdiff_t extent, std::string_view call) {
  // Checked before allocation: a product that overflows is an argument error.
  for (const count_t d : displacements) (void)checked_mul(d, extent, call);
  std::vector<std::ptrdiff_t> bytes(displacements.size());
  for (std::size_t i = 0; i < displacements.size(); ++i) bytes[i] = displacements[i] * extent;
  return bytes;
}

template <class Disp>
datatype make_indexed(std::span<const count_t> blocklengths,
                      std::span<const std::ptrdiff_t> disp_bytes, const datatype& old,
                      type_combiner c, std::span<const Disp> disp_args, std::string_view call) {
  const datatype_impl& o = old.impl();
  auto impl =
      build(call,
            indexed_blocks(
                blocklengths.size(), [blocklengths](std::size_t i) { return blocklengths[i]; },
                [disp_bytes](std::size_t i) { return disp_bytes[i]; }, o),
            o.basic, false);
  std::string name = call_name(c == type_combiner::indexed ? "indexed" : "hindexed");
  append_array(name, blocklengths);
  name.push_back(',');
  append_array(name, disp_args);
  name.append(",").append(o.name).append(")");
  std::vector<std::int64_t> args;
  args.reserve(1 + 2 * blocklengths.size());
  args.push_back(static_cast<std::int64_t>(blocklengths.size()));
  args.insert(args.end(), blocklengths.begin(), blocklengths.end());
  args.insert(args.end(), disp_args.begin(), disp_args.end());
  return finish(std::move(impl), c, std::move(name), std::move(args), {old});
}

template <class Disp>
datatype make_indexed_block(count_t blocklength, std::span<const std::ptrdiff_t> disp_bytes,
                            const datatype& old, type_combiner c, std::span<const Disp> disp_args,
                            std::string_view call) {
  const datatype_impl& o = old.impl();
  auto impl = build(call,
                    indexed_blocks(
                        disp_bytes.size(), [blocklength](std::size_t) { return blocklength; },
                        [disp_bytes](std::size_t i) { return disp_bytes[i]; }, o),
                    o.basic, false);
  std::string name =
      call_name(c == type_combiner::indexed_block ? "indexed_block" : "hindexed_block");
  name.append(std::to_string(blocklength)).append(",");
  append_array(name, disp_args);
  name.append(",").append(o.name).append(")");
  std::vector<std::int64_t> args;
  args.reserve(2 + disp_args.size());
  args.push_back(static_cast<std::int64_t>(disp_args.size()));
  args.push_back(blocklength);
  args.insert(args.end(), disp_args.begin(), disp_args.end());
  return finish(std::move(impl), c, std::move(name), std::move(args), {old});
}

// Copies the layout of `old` (everything but how it was made).
std::shared_ptr<datatype_impl> copy_layout(const datatype_impl& old) {
  auto impl = std::make_shared<datatype_impl>();
  impl->basic = old.basic;
  impl->size = old.size;
  impl->lb = old.lb;
  impl->extent = old.extent;
  impl->true_lb = old.true_lb;
  impl->true_extent = old.true_extent;
  impl->explicit_bounds = old.explicit_bounds;
  impl->alignment = old.alignment;
  impl->runs = old.runs;
  impl->element_runs = old.element_runs;
  impl->signature = old.signature;
  impl->basic_count = old.basic_count;
  impl->contiguous = old.contiguous;
  return impl;
}

}  // namespace
}  // namespace detail

datatype datatype::contiguous(count_t count, const datatype& old) {
  constexpr std::string_view call = "datatype::contiguous";
  detail::check_handle(old.impl_ != nullptr, call);
  detail::check_count(count, "count", call);
  const detail::datatype_impl& o = old.impl();
  const auto n = static_cast<std::size_t>(count);
  auto impl = detail::build(
      call, [&o, n](auto&& visit) { visit(o, 0, n); }, o.basic, false);
  std::string name = detail::call_name("contiguous");
  name.append(std::to_string(count)).append(",").append(o.name).append(")");
  return detail::finish(std::move(impl), detail::type_combiner::contiguous, std::move(name),
                        {count}, {old});
}

datatype datatype::vector(count_t count, count_t blocklength, count_t stride, const datatype& old) {
  constexpr std::string_view call = "datatype::vector";
  detail::check_handle(old.impl_ != nullptr, call);
  detail::check_count(count, "count", call);
  detail::check_count(blocklength, "blocklength", call);
  // The stride matters only between blocks; with one block any stride is fine.
  const std::ptrdiff_t stride_bytes =
      count > 1 ? detail::checked_mul(stride, old.impl().extent, call) : 0;
  return detail::make_hvector(count, blocklength, stride_bytes, old, detail::type_combiner::vector,
                              stride, call);
}

datatype datatype::hvector(count_t count, count_t blocklength, std::ptrdiff_t stride_bytes,
                           const datatype& old) {
  constexpr std::string_view call = "datatype::hvector";
  detail::check_handle(old.impl_ != nullptr, call);
  detail::check_count(count, "count", call);
  detail::check_count(blocklength, "blocklength", call);
  return detail::make_hvector(count, blocklength, count > 1 ? stride_bytes : 0, old,
                              detail::type_combiner::hvector, stride_bytes, call);
}

datatype datatype::indexed(std::span<const count_t> blocklengths,
                           std::span<const count_t> displacements, const datatype& old) {
  constexpr std::string_view call = "datatype::indexed";
  detail::check_handle(old.impl_ != nullptr, call);
  detail::check_same_length(blocklengths.size(), displacements.size(),
                            "blocklengths and displacements", call);
  for (const count_t b : blocklengths) detail::check_count(b, "a blocklength", call);
  const std::vector<std::ptrdiff_t> bytes =
      detail::scale_displacements(displacements, old.impl().extent, call);
  return detail::make_indexed(blocklengths, bytes, old, detail::type_combiner::indexed,
                              displacements, call);
}

datatype datatype::hindexed(std::span<const count_t> blocklengths,
                            std::span<const std::ptrdiff_t> byte_displacements,
                            const datatype& old) {
  constexpr std::string_view call = "datatype::hindexed";
  detail::check_handle(old.impl_ != nullptr, call);
  detail::check_same_length(blocklengths.size(), byte_displacements.size(),
                            "blocklengths and byte_displacements", call);
  for (const count_t b : blocklengths) detail::check_count(b, "a blocklength", call);
  return detail::make_indexed(blocklengths, byte_displacements, old,
                              detail::type_combiner::hindexed, byte_displacements, call);
}

datatype datatype::indexed_block(count_t blocklength, std::span<const count_t> displacements,
                                 const datatype& old) {
  constexpr std::string_view call = "datatype::indexed_block";
  detail::check_handle(old.impl_ != nullptr, call);
  detail::check_count(blocklength, "blocklength", call);
  const std::vector<std::ptrdiff_t> bytes =
      detail::scale_displacements(displacements, old.impl().extent, call);
  return detail::make_indexed_block(blocklength, std::span<const std::ptrdiff_t>(bytes), old,
                                    detail::type_combiner::indexed_block, displacements, call);
}

datatype datatype::hindexed_block(count_t blocklength,
                                  std::span<const std::ptrdiff_t> byte_displacements,
                                  const datatype& old) {
  constexpr std::string_view call = "datatype::hindexed_block";
  detail::check_handle(old.impl_ != nullptr, call);
  detail::check_count(blocklength, "blocklength", call);
  return detail::make_indexed_block(blocklength, byte_displacements, old,
                                    detail::type_combiner::hindexed_block, byte_displacements,
                                    call);
}

datatype datatype::structure(std::span<const count_t> blocklengths,
                             std::span<const std::ptrdiff_t> byte_displacements,
                             std::span<const datatype> types) {
  constexpr std::string_view call = "datatype::structure";
  detail::check_same_length(blocklengths.size(), byte_displacements.size(),
                            "blocklengths and byte_displacements", call);
  detail::check_same_length(blocklengths.size(), types.size(), "blocklengths and types", call);
  for (const count_t b : blocklengths) detail::check_count(b, "a blocklength", call);
  for (const datatype& t : types) detail::check_handle(t.impl_ != nullptr, call);

  // Without elements the struct takes the one basic type its members agree on.
  basic_type fallback = types.empty() ? basic_type::byte : types[0].impl().basic;
  for (const datatype& t : types) {
    if (t.impl().basic != fallback) fallback = basic_type::byte;
  }
  if (fallback == detail::mixed_basic_type) fallback = basic_type::byte;

  auto impl = detail::build(
      call,
      [&](auto&& visit) {
        for (std::size_t i = 0; i < types.size(); ++i) {
          visit(types[i].impl(), byte_displacements[i], static_cast<std::size_t>(blocklengths[i]));
        }
      },
      fallback, true);
  std::string name = detail::call_name("struct");
  detail::append_array(name, blocklengths);
  name.push_back(',');
  detail::append_array(name, byte_displacements);
  name.append(",[");
  for (std::size_t i = 0; i < types.size() && i < detail::max_name_entries; ++i) {
    if (i > 0) name.push_back(',');
    name.append(types[i].impl().name);
  }
  if (types.size() > detail::max_name_entries) name.append(",...");
  name.append("])");
  std::vector<std::int64_t> args;
  args.reserve(1 + 2 * types.size());
  args.push_back(static_cast<std::int64_t>(types.size()));
  args.insert(args.end(), blocklengths.begin(), blocklengths.end());
  args.insert(args.end(), byte_displacements.begin(), byte_displacements.end());
  return detail::finish(std::move(impl), detail::type_combiner::struct_, std::move(name),
                        std::move(args), std::vector<datatype>(types.begin(), types.end()));
}

datatype datatype::subarray(std::span<const count_t> sizes, std::span<const count_t> subsizes,
                            std::span<const count_t> starts, array_order order,
                            const datatype& old) {
  constexpr std::string_view call = "datatype::subarray";
  detail::check_handle(old.impl_ != nullptr, call);
  detail::check_same_length(sizes.size(), subsizes.size(), "sizes and subsizes", call);
  detail::check_same_length(sizes.size(), starts.size(), "sizes and starts", call);
  ONESIDE_CHECK(!sizes.empty(), error_class::arg, {.call = call},
                "a subarray needs at least one dimension");
  ONESIDE_CHECK(order == array_order::c || order == array_order::fortran, error_class::arg,
                {.call = call}, "order is neither c nor fortran");
  const detail::datatype_impl& o = old.impl();
  std::ptrdiff_t elements = 1;  // of the full array
  bool empty = false;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::string dim = std::string("in dimension ").append(std::to_string(k)).append(": ");
    ONESIDE_CHECK(sizes[k] >= 1, error_class::arg, {.call = call},
                  std::string(dim).append("size must be at least 1"));
    ONESIDE_CHECK(subsizes[k] >= 0 && subsizes[k] <= sizes[k], error_class::arg, {.call = call},
                  std::string(dim).append("subsize must be in [0, size]"));
    ONESIDE_CHECK(starts[k] >= 0 && starts[k] <= sizes[k] - subsizes[k], error_class::arg,
                  {.call = call}, std::string(dim).append("start must be in [0, size - subsize]"));
    elements = detail::checked_mul(elements, sizes[k], call);
    empty = empty || subsizes[k] == 0;
  }
  const std::ptrdiff_t full_extent = detail::checked_mul(elements, o.extent, call);

  // Dimensions in C order (the last varies fastest); a trailing dimension taken whole
  // merges into the one before it, which leaves the typemap unchanged but makes the blocks
  // longer (a whole array is one block).
  const std::size_t ndims = sizes.size();
  std::vector<count_t> sz(ndims);
  std::vector<count_t> sub(ndims);
  std::vector<count_t> st(ndims);
  for (std::size_t k = 0; k < ndims; ++k) {
    const std::size_t from = order == array_order::c ? k : ndims - 1 - k;
    sz[k] = sizes[from];
    sub[k] = subsizes[from];
    st[k] = starts[from];
  }
  std::size_t n = ndims;
  while (n > 1 && sub[n - 1] == sz[n - 1]) {
    sz[n - 2] *= sz[n - 1];
    sub[n - 2] *= sz[n - 1];
    st[n - 2] *= sz[n - 1];
    --n;
  }
  // stride[k]: elements between consecutive indices of dimension k.
  std::vector<std::ptrdiff_t> stride(n, 1);
  for (std::size_t k = n - 1; k > 0; --k) stride[k - 1] = stride[k] * sz[k];

  auto blocks = [&](auto&& visit) {
    if (empty || !detail::has_entries(o)) return;
    // An odometer over the outer dimensions (all but the last), in storage order.
    std::vector<count_t> index(st.begin(), st.begin() + static_cast<std::ptrdiff_t>(n));
    const auto copies = static_cast<std::size_t>(sub[n - 1]);
    while (true) {
      std::ptrdiff_t element = 0;
      for (std::size_t k = 0; k < n; ++k) element += index[k] * stride[k];
      visit(o, element * o.extent, copies);
      std::size_t k = n - 1;  // the last dimension is the block itself
      while (true) {
        if (k == 0) return;
        --k;
        if (++index[k] < st[k] + sub[k]) break;
        index[k] = st[k];
      }
    }
  };
  auto impl = detail::build(call, blocks, o.basic, false);
  // As if resized to the whole array (MPI §5.1.3).
  impl->lb = 0;
  impl->extent = full_extent;
  impl->explicit_bounds = true;
  impl->contiguous = detail::is_contiguous_layout(*impl);

  std::string name = detail::call_name("subarray");
  detail::append_array(name, sizes);
  name.push_back(',');
  detail::append_array(name, subsizes);
  name.push_back(',');
  detail::append_array(name, starts);
  name.append(order == array_order::c ? ",c," : ",fortran,").append(o.name).append(")");
  std::vector<std::int64_t> args;
  args.reserve(2 + 3 * ndims);
  args.push_back(static_cast<std::int64_t>(ndims));
  args.push_back(static_cast<std::int64_t>(order));
  args.insert(args.end(), sizes.begin(), sizes.end());
  args.insert(args.end(), subsizes.begin(), subsizes.end());
  args.insert(args.end(), starts.begin(), starts.end());
  return detail::finish(std::move(impl), detail::type_combiner::subarray, std::move(name),
                        std::move(args), {old});
}

datatype datatype::resized(const datatype& old, std::ptrdiff_t lb, std::ptrdiff_t extent) {
  constexpr std::string_view call = "datatype::resized";
  detail::check_handle(old.impl_ != nullptr, call);
  ONESIDE_CHECK(extent > 0, error_class::arg, {.call = call},
                std::string("extent must be positive, not ").append(std::to_string(extent)));
  (void)detail::checked_add(lb, extent, call);
  const detail::datatype_impl& o = old.impl();
  auto impl = detail::copy_layout(o);
  impl->lb = lb;
  impl->extent = extent;
  impl->explicit_bounds = true;
  impl->contiguous = detail::is_contiguous_layout(*impl);
  std::string name = detail::call_name("resized");
  name.append(o.name)
      .append(",")
      .append(std::to_string(lb))
      .append(",")
      .append(std::to_string(extent))
      .append(")");
  return detail::finish(std::move(impl), detail::type_combiner::resized, std::move(name),
                        {lb, extent}, {old});
}

datatype datatype::dup(const datatype& old) {
  constexpr std::string_view call = "datatype::dup";
  detail::check_handle(old.impl_ != nullptr, call);
  const detail::datatype_impl& o = old.impl();
  std::string name = detail::call_name("dup");
  name.append(o.name).append(")");
  return detail::finish(detail::copy_layout(o), detail::type_combiner::dup, std::move(name), {},
                        {old});
}

}  // namespace oneside
