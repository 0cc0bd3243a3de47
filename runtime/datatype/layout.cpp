// Run counts, type matching, footprints, pack/unpack and the wire encoding of datatypes
// (see layout.hpp).
//
// Encoding (version 1). Integers are LEB128 varints: "u" unsigned, "s" signed (zigzag).
//   u8 version (1), u node_count (>= 1), then node_count nodes; the last one is the type.
//   A node is u8 combiner (type_combiner's value), then
//     predefined:  u8 basic_type
//     otherwise:   u nargs, nargs × s arg (datatype_impl::args), u nchildren,
//                  nchildren × u ref, ref being the index of an earlier node.
// Nodes are in post-order and a type reachable twice (struct {t, t}, or predefined int in
// several places) is one node, so the encoding grows with the calls that built the type,
// not with its flattened runs: vector(1000, 1, 2, double) is 10 bytes. The decoder calls
// the public constructors with the decoded arguments, so every check of theirs applies
// and the result has the same layout, name and signature as the original.
#include "runtime/layout.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneside/runtime/copy.hpp>

#include "runtime/check.hpp"

namespace oneside::detail {

void raise_mixed_element_runs(const datatype& type) {
  raise(error_class::type, {.call = "for_each_element_run", .rule = "COM-12"},
        std::string("element runs need a type made of one basic type, not ").append(type.name()));
}

namespace {

// Runs for `count` elements of `runs` (one element's runs, extent apart), given that
// element i's last run merges into element i+1's first exactly when they touch.
template <class Run, class Span>
std::size_t run_count(const std::vector<Run>& runs, count_t count, std::ptrdiff_t extent,
                      Span span) {
  if (count <= 0 || runs.empty()) return 0;
  const auto n = static_cast<std::size_t>(count);
  const Run& front = runs.front();
  const Run& back = runs.back();
  if (runs.size() == 1) return span(front) == extent ? 1 : n;
  // Runs inside one element never touch (they were merged when the type was built), so a
  // merged boundary run cannot grow further.
  const bool boundary_merges = back.offset + span(back) == front.offset + extent;
  return n * runs.size() - (boundary_merges ? n - 1 : 0);
}

}  // namespace

std::size_t byte_run_count(const datatype& type, count_t count) {
  const datatype_impl& t = type.impl();
  return run_count(t.runs, count, t.extent,
                   [](const byte_run& r) { return static_cast<std::ptrdiff_t>(r.length); });
}

std::size_t element_run_count(const datatype& type, count_t count) {
  const datatype_impl& t = type.impl();
  if (t.is_mixed()) raise_mixed_element_runs(type);
  const auto stride = static_cast<std::ptrdiff_t>(basic_type_extent(t.basic));
  return run_count(t.element_runs, count, t.extent, [stride](const element_run& r) {
    return static_cast<std::ptrdiff_t>(r.count) * stride;
  });
}

// --- overlap -------------------------------------------------------------------------

namespace {

// True when the runs, taken in order, each start at or after the end of the previous one.
bool increasing_and_disjoint(const std::vector<byte_run>& runs) {
  for (std::size_t i = 1; i < runs.size(); ++i) {
    if (runs[i].offset < runs[i - 1].offset + static_cast<std::ptrdiff_t>(runs[i - 1].length)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool has_overlapping_entries(const datatype& type, count_t count) {
  const datatype_impl& t = type.impl();
  if (count <= 0 || t.runs.empty()) return false;
  // Elements i and j can share a byte only when |i - j| × extent < true_extent, so the
  // first `elements` elements show every kind of overlap there is.
  if (t.extent <= 0) return count > 1 || !increasing_and_disjoint(t.runs);  // (not built)
  std::uint64_t elements = 1;
  if (count > 1 && t.true_extent > t.extent) {
    elements = static_cast<std::uint64_t>(t.true_extent / t.extent) + 1;
    elements = std::min(elements, static_cast<std::uint64_t>(count));
  }
  if (elements == 1 && increasing_and_disjoint(t.runs)) return false;
  std::vector<byte_run> all;
  all.reserve(t.runs.size() * elements);
  for (std::uint64_t i = 0; i < elements; ++i) {
    const auto base = static_cast<std::ptrdiff_t>(i) * t.extent;
    for (const byte_run& r : t.runs) all.push_back({base + r.offset, r.length});
  }
  std::sort(all.begin(), all.end(),
            [](const byte_run& a, const byte_run& b) { return a.offset < b.offset; });
  return !increasing_and_disjoint(all);
}

// --- type matching -------------------------------------------------------------------

namespace {

// Walks the signature of count × type as a stream of basic types, a pair expanded into
// its value type and int (MPI's typemap of FLOAT_INT and friends).
class signature_stream {
 public:
  signature_stream(const std::vector<signature_run>& sig, count_t count)
      : sig_(sig), reps_(count > 0 && !sig.empty() ? static_cast<std::uint64_t>(count) : 0) {
    if (reps_ > 0) left_ = sig_[0].count;
    skip_empty();
  }

  bool done() const noexcept { return reps_ == 0; }
  basic_type type() const noexcept {
    const basic_type t = sig_[i_].type;
    if (!is_pair_type(t)) return t;
    return half_ == 0 ? pair_value_type(t) : basic_type::int_;
  }
  // How many equal basic types follow from here within the current run.
  std::size_t available() const noexcept { return is_pair_type(sig_[i_].type) ? 1 : left_; }
  void consume(std::size_t n) noexcept {
    if (is_pair_type(sig_[i_].type)) {
      half_ ^= 1;
      if (half_ == 0) --left_;
    } else {
      left_ -= n;
    }
    skip_empty();
  }

 private:
  void skip_empty() noexcept {
    while (reps_ > 0 && left_ == 0) {
      if (++i_ == sig_.size()) {
        i_ = 0;
        if (--reps_ == 0) return;
      }
      left_ = sig_[i_].count;
    }
  }

  const std::vector<signature_run>& sig_;
  std::uint64_t reps_;
  std::size_t i_ = 0;
  std::size_t left_ = 0;
  int half_ = 0;  // of a pair: 0 value, 1 index
};

// Basic types in count × type with pairs counted twice; false on overflow.
bool expanded_length(const datatype_impl& t, count_t count, std::uint64_t& out) {
  std::uint64_t per_element = 0;
  for (const signature_run& s : t.signature) {
    const std::uint64_t n = is_pair_type(s.type) ? 2 * s.count : s.count;
    if (__builtin_add_overflow(per_element, n, &per_element)) return false;
  }
  return !__builtin_mul_overflow(per_element, static_cast<std::uint64_t>(count), &out);
}

}  // namespace

bool signatures_match(count_t count_a, const datatype& a, count_t count_b, const datatype& b) {
  if (count_a < 0 || count_b < 0) return false;
  const datatype_impl& ta = a.impl();
  const datatype_impl& tb = b.impl();
  std::uint64_t length_a = 0;
  std::uint64_t length_b = 0;
  if (!expanded_length(ta, count_a, length_a) || !expanded_length(tb, count_b, length_b)) {
    return false;
  }
  if (length_a != length_b) return false;
  if (length_a == 0) return true;
  // Homogeneous types of one basic type: the lengths decide. (A pair against its own
  // members, value_index<int> against int, needs the walk.)
  if (!ta.is_mixed() && !tb.is_mixed() && ta.basic == tb.basic) return true;
  if (ta.signature == tb.signature && count_a == count_b) return true;
  signature_stream sa(ta.signature, count_a);
  signature_stream sb(tb.signature, count_b);
  while (!sa.done() && !sb.done()) {
    if (sa.type() != sb.type()) return false;
    const std::size_t n = std::min(sa.available(), sb.available());
    sa.consume(n);
    sb.consume(n);
  }
  return sa.done() && sb.done();
}

// --- footprint, pack, unpack ---------------------------------------------------------

footprint memory_footprint(const datatype& type, count_t count) {
  const datatype_impl& t = type.impl();
  if (count <= 0 || t.size == 0) return {0, 0};
  std::ptrdiff_t last = 0;
  std::ptrdiff_t hi = 0;
  // An overflowing footprint saturates, so it fails every bounds check.
  if (__builtin_mul_overflow(count - 1, t.extent, &last) ||
      __builtin_add_overflow(last, t.true_lb + t.true_extent, &hi)) {
    return {std::numeric_limits<std::ptrdiff_t>::min(), std::numeric_limits<std::ptrdiff_t>::max()};
  }
  return {t.true_lb, hi};
}

void pack(const datatype& type, count_t count, const void* src, void* dst) {
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
  for_each_byte_run(type, count, [&](std::ptrdiff_t offset, std::size_t length) {
    oneside::detail::copy_bytes(to, from + offset, length);
    to += length;
  });
}

void unpack(const datatype& type, count_t count, const void* src, void* dst) {
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
  for_each_byte_run(type, count, [&](std::ptrdiff_t offset, std::size_t length) {
    oneside::detail::copy_bytes(to + offset, from, length);
    from += length;
  });
}

// --- encoding ------------------------------------------------------------------------

namespace {

constexpr std::uint8_t encoding_version = 1;
constexpr std::string_view decode_call = "decode_layout";

class writer {
 public:
  void byte(std::uint8_t b) { out_.push_back(static_cast<std::byte>(b)); }
  void uvarint(std::uint64_t v) {
    while (v >= 0x80) {
      byte(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    byte(static_cast<std::uint8_t>(v));
  }
  void svarint(std::int64_t v) {
    // zigzag: 0, -1, 1, -2, … → 0, 1, 2, 3, …
    const auto u = static_cast<std::uint64_t>(v);
    uvarint((u << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0));
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
};

// Writes the nodes of `t` and everything it was built from (post-order, each once).
class encoder {
 public:
  std::size_t node(const datatype& t) {
    const datatype_impl* const key = &t.impl();
    if (const auto it = index_.find(key); it != index_.end()) return it->second;
    const datatype_impl& impl = *key;
    std::vector<std::size_t> refs;
    refs.reserve(impl.children.size());
    for (const datatype& c : impl.children) refs.push_back(node(c));
    w.byte(static_cast<std::uint8_t>(impl.combiner));
    if (impl.is_predefined()) {
      w.byte(static_cast<std::uint8_t>(impl.basic));
    } else {
      w.uvarint(impl.args.size());
      for (const std::int64_t a : impl.args) w.svarint(a);
      w.uvarint(refs.size());
      for (const std::size_t r : refs) w.uvarint(r);
    }
    const std::size_t i = index_.size();
    index_.emplace(key, i);
    return i;
  }
  std::size_t nodes() const noexcept { return index_.size(); }

  writer w;

 private:
  std::unordered_map<const datatype_impl*, std::size_t> index_;
};

[[noreturn]] void raise_malformed(std::string_view what) {
  raise(error_class::type, {.call = decode_call},
        std::string("malformed datatype encoding: ").append(what));
}

class reader {
 public:
  explicit reader(std::span<const std::byte> in) : in_(in) {}

  std::size_t remaining() const noexcept { return in_.size() - at_; }
  std::uint8_t byte() {
    if (at_ == in_.size()) raise_malformed("truncated");
    return static_cast<std::uint8_t>(in_[at_++]);
  }
  std::uint64_t uvarint() {
    std::uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      const std::uint8_t b = byte();
      if (shift == 63 && b > 1) raise_malformed("varint overflows 64 bits");
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
      if (shift == 63) raise_malformed("varint longer than 10 bytes");
    }
  }
  std::int64_t svarint() {
    const std::uint64_t u = uvarint();
    const auto magnitude = static_cast<std::int64_t>(u >> 1);
    return (u & 1) != 0 ? -magnitude - 1 : magnitude;
  }
  // A count of items each at least one byte long: at most what is left.
  std::size_t length() {
    const std::uint64_t n = uvarint();
    if (n > remaining()) raise_malformed("a length exceeds the input");
    return static_cast<std::size_t>(n);
  }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

// Calls the constructor of `c` with decoded arguments, after checking their shape.
datatype construct(type_combiner c, const std::vector<std::int64_t>& args,
                   const std::vector<datatype>& children) {
  const auto shape = [&](bool ok) {
    if (!ok) raise_malformed("wrong number of arguments or types for the combiner");
  };
  const auto n_of = [&](std::size_t per, std::size_t extra) {
    // args = [n, …] with `per` entries per block and `extra` other entries after n.
    shape(!args.empty() && args[0] >= 0);
    const auto n = static_cast<std::uint64_t>(args[0]);
    shape(n <= args.size() && args.size() == 1 + extra + per * n);
    return static_cast<std::size_t>(n);
  };
  const std::span<const std::int64_t> a(args);
  switch (c) {
    case type_combiner::contiguous:
      shape(args.size() == 1 && children.size() == 1);
      return datatype::contiguous(args[0], children[0]);
    case type_combiner::vector:
      shape(args.size() == 3 && children.size() == 1);
      return datatype::vector(args[0], args[1], args[2], children[0]);
    case type_combiner::hvector:
      shape(args.size() == 3 && children.size() == 1);
      return datatype::hvector(args[0], args[1], args[2], children[0]);
    case type_combiner::indexed:
    case type_combiner::hindexed: {
      const std::size_t n = n_of(2, 0);
      shape(children.size() == 1);
      const auto bl = a.subspan(1, n);
      const auto disp = a.subspan(1 + n, n);
      if (c == type_combiner::indexed) return datatype::indexed(bl, disp, children[0]);
      const std::vector<std::ptrdiff_t> bytes(disp.begin(), disp.end());
      return datatype::hindexed(bl, bytes, children[0]);
    }
    case type_combiner::indexed_block:
    case type_combiner::hindexed_block: {
      const std::size_t n = n_of(1, 1);
      shape(children.size() == 1);
      const auto disp = a.subspan(2, n);
      if (c == type_combiner::indexed_block) {
        return datatype::indexed_block(args[1], disp, children[0]);
      }
      const std::vector<std::ptrdiff_t> bytes(disp.begin(), disp.end());
      return datatype::hindexed_block(args[1], bytes, children[0]);
    }
    case type_combiner::struct_: {
      const std::size_t n = n_of(2, 0);
      shape(children.size() == n);
      const std::vector<std::ptrdiff_t> bytes(a.begin() + 1 + static_cast<std::ptrdiff_t>(n),
                                              a.end());
      return datatype::structure(a.subspan(1, n), bytes, children);
    }
    case type_combiner::subarray: {
      const std::size_t n = n_of(3, 1);
      shape(children.size() == 1 && (args[1] == 0 || args[1] == 1));
      return datatype::subarray(a.subspan(2, n), a.subspan(2 + n, n), a.subspan(2 + 2 * n, n),
                                static_cast<datatype::array_order>(args[1]), children[0]);
    }
    case type_combiner::resized:
      shape(args.size() == 2 && children.size() == 1);
      return datatype::resized(children[0], args[0], args[1]);
    case type_combiner::dup:
      shape(args.empty() && children.size() == 1);
      return datatype::dup(children[0]);
    case type_combiner::predefined:
      break;
  }
  raise_malformed("unknown combiner");
}

datatype decode_nodes(reader& r) {
  if (r.byte() != encoding_version) raise_malformed("unknown version");
  const std::size_t count = r.length();
  if (count == 0) raise_malformed("no type");
  std::vector<datatype> nodes;
  nodes.reserve(count);
  std::vector<std::int64_t> args;
  std::vector<datatype> children;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t c = r.byte();
    if (c > static_cast<std::uint8_t>(type_combiner::hindexed_block)) {
      raise_malformed("unknown combiner");
    }
    const auto combiner = static_cast<type_combiner>(c);
    if (combiner == type_combiner::predefined) {
      const std::uint8_t b = r.byte();
      if (b >= basic_type_count) raise_malformed("unknown basic type");
      nodes.push_back(datatype::predefined(static_cast<basic_type>(b)));
      continue;
    }
    args.resize(r.length());
    for (std::int64_t& a : args) a = r.svarint();
    children.clear();
    const std::size_t n = r.length();
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t ref = r.uvarint();
      if (ref >= i) raise_malformed("a reference to a node not decoded yet");
      children.push_back(nodes[static_cast<std::size_t>(ref)]);
    }
    nodes.push_back(construct(combiner, args, children));
  }
  if (r.remaining() != 0) raise_malformed("trailing bytes");
  return nodes.back();
}

}  // namespace

std::vector<std::byte> encode_layout(const datatype& type) {
  encoder e;
  e.node(type);
  // The header goes first; nodes were written as they were reached.
  writer head;
  head.byte(encoding_version);
  head.uvarint(e.nodes());
  std::vector<std::byte> out = head.take();
  const std::vector<std::byte> body = e.w.take();
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

datatype decode_layout(std::span<const std::byte> bytes) {
  reader r(bytes);
  try {
    return decode_nodes(r);
  } catch (const error& e) {
    if (e.error_class() == error_class::type) throw;
    // A constructor rejected the decoded arguments: the input is malformed.
    raise_malformed(e.what());
  }
}

}  // namespace oneside::detail
