// The layout API of the rma layer (runtime/datatype/layout.hpp): byte and element runs of
// count elements, run counts, type matching (COM-6), footprints (COM-8), pack/unpack and
// the wire encoding (COM-7, SYN-36). Besides hand-computed cases, a property test builds
// random nested types with a fixed seed and compares everything against a typemap expanded
// naively here, entry by entry, from MPI's definitions.
#include "runtime/layout.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/error.hpp>

#include "covers.hpp"
#include "runtime/datatype_impl.hpp"

namespace {

using oneside::basic_type;
using oneside::count_t;
using oneside::datatype;
using oneside::error_class;
using oneside::value_index;
using oneside::test::covers;
using order = datatype::array_order;
using counts = std::vector<count_t>;
using disps = std::vector<std::ptrdiff_t>;
namespace detail = oneside::detail;

struct run {
  std::ptrdiff_t offset;
  std::size_t n;
  friend bool operator==(const run&, const run&) = default;
};
using runs = std::vector<run>;

std::ostream& operator<<(std::ostream& os, const run& r) {
  return os << "{" << r.offset << "," << r.n << "}";
}

runs byte_runs_of(const datatype& t, count_t count) {
  runs out;
  detail::for_each_byte_run(t, count, [&](std::ptrdiff_t o, std::size_t n) {
    out.push_back({o, n});
  });
  return out;
}

runs element_runs_of(const datatype& t, count_t count) {
  runs out;
  detail::for_each_element_run(t, count, [&](std::ptrdiff_t o, std::size_t n) {
    out.push_back({o, n});
  });
  return out;
}

void expect_error(const std::function<void()>& f, error_class ec) {
  try {
    f();
    ADD_FAILURE() << "no error raised";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), ec) << e.what();
  }
}

const datatype& int_t = datatype::of<int>();
const datatype& double_t = datatype::of<double>();

// --- hand-computed cases -------------------------------------------------------------

TEST(ByteRuns, MergeAcrossElementBoundaries) {
  // vector(2,1,2,int): [0,4) [8,12), extent 12; element 1's first run touches element 0's
  // last.
  const datatype v = datatype::vector(2, 1, 2, int_t);
  EXPECT_EQ(byte_runs_of(v, 3), (runs{{0, 4}, {8, 8}, {20, 8}, {32, 4}}));
  EXPECT_EQ(detail::byte_run_count(v, 3), 4U);
  EXPECT_EQ(byte_runs_of(v, 1), (runs{{0, 4}, {8, 4}}));
  EXPECT_EQ(byte_runs_of(v, 0), runs{});
  EXPECT_EQ(detail::byte_run_count(v, 0), 0U);
  EXPECT_EQ(byte_runs_of(int_t, 5), (runs{{0, 20}}));
  EXPECT_EQ(detail::byte_run_count(int_t, 5), 1U);
  // vector(2,1,3,int): [0,4) [12,16), extent 16: the boundary merges again.
  const datatype w = datatype::vector(2, 1, 3, int_t);
  EXPECT_EQ(byte_runs_of(w, 2), (runs{{0, 4}, {12, 8}, {28, 4}}));
  EXPECT_EQ(detail::byte_run_count(w, 2), 3U);
  // Without a merge at the boundary: vector(2,1,2,int) resized to extent 16.
  const datatype x = datatype::resized(v, 0, 16);
  EXPECT_EQ(byte_runs_of(x, 2), (runs{{0, 4}, {8, 4}, {16, 4}, {24, 4}}));
  EXPECT_EQ(detail::byte_run_count(x, 2), 4U);
}

TEST(ByteRuns, LargeCountsOfContiguousTypesAreOneRun) {
  const datatype big = datatype::contiguous(count_t{1} << 20, double_t);
  EXPECT_EQ(byte_runs_of(big, count_t{1} << 30), (runs{{0, std::size_t{8} << 50}}));
  EXPECT_EQ(detail::byte_run_count(big, count_t{1} << 30), 1U);
  // A resized type whose data fills its extent also merges into one run.
  const datatype packed = datatype::resized(datatype::of<value_index<double>>(), 0, 12);
  EXPECT_EQ(byte_runs_of(packed, 1000), (runs{{0, 12000}}));
  // An offset single run: hindexed at 8 with extent 4 (lb 8) chains too.
  const counts one{1};
  const disps at8{8};
  EXPECT_EQ(byte_runs_of(datatype::hindexed(one, at8, int_t), 3), (runs{{8, 12}}));
}

TEST(ElementRuns, PairsMergeByTheirStride) {
  const datatype& di = datatype::of<value_index<double>>();
  EXPECT_EQ(byte_runs_of(di, 3), (runs{{0, 12}, {16, 12}, {32, 12}}));
  EXPECT_EQ(element_runs_of(di, 3), (runs{{0, 3}}));
  EXPECT_EQ(detail::element_run_count(di, 3), 1U);
  const datatype v = datatype::vector(3, 2, 5, int_t);
  // Extent 48: element 1's first block continues element 0's last.
  EXPECT_EQ(element_runs_of(v, 2), (runs{{0, 2}, {20, 2}, {40, 4}, {68, 2}, {88, 2}}));
  EXPECT_EQ(detail::element_run_count(v, 2), 5U);
  const datatype gappy = datatype::resized(v, 0, 64);
  EXPECT_EQ(element_runs_of(gappy, 2),
            (runs{{0, 2}, {20, 2}, {40, 2}, {64, 2}, {84, 2}, {104, 2}}));
  EXPECT_EQ(detail::element_run_count(gappy, 2), 6U);
  // Element runs that chain across elements: vector(2,1,2,int) → (0,1) (8,2) (20,2) (32,1).
  const datatype w = datatype::vector(2, 1, 2, int_t);
  EXPECT_EQ(element_runs_of(w, 3), (runs{{0, 1}, {8, 2}, {20, 2}, {32, 1}}));
  EXPECT_EQ(detail::element_run_count(w, 3), 4U);
  // Pairs squeezed to 12 bytes: the byte runs merge, the elements do not.
  const datatype packed = datatype::resized(di, 0, 12);
  EXPECT_EQ(element_runs_of(packed, 2), (runs{{0, 1}, {12, 1}}));
}

TEST(ElementRuns, MixedTypesHaveNone) {
  covers("COM-12");
  const counts bl{1, 1};
  const disps d{0, 8};
  const std::array<datatype, 2> types{int_t, double_t};
  const datatype s = datatype::structure(bl, d, types);
  expect_error([&] { element_runs_of(s, 1); }, error_class::type);
  expect_error([&] { detail::element_run_count(s, 1); }, error_class::type);
  EXPECT_EQ(byte_runs_of(s, 2), (runs{{0, 4}, {8, 12}, {24, 8}}));
  EXPECT_EQ(detail::byte_run_count(s, 2), 3U);
}

TEST(Overlap, EntriesSharingAByteAreFound) {
  covers("COM-7", "COM-9");
  EXPECT_TRUE(detail::has_overlapping_entries(datatype::vector(3, 1, 0, int_t), 1));
  EXPECT_FALSE(detail::has_overlapping_entries(datatype::vector(2, 1, 2, int_t), 100));
  EXPECT_FALSE(detail::has_overlapping_entries(int_t, 0));
  // Unordered but disjoint.
  const counts ones{1, 1, 1};
  const disps unordered{16, 0, 8};
  EXPECT_FALSE(detail::has_overlapping_entries(datatype::hindexed(ones, unordered, double_t), 4));
  const counts d{5, 1, 9};
  EXPECT_FALSE(detail::has_overlapping_entries(datatype::indexed(ones, d, int_t), 1));
  const disps twice{8, 0, 10};
  EXPECT_TRUE(detail::has_overlapping_entries(datatype::hindexed(ones, twice, double_t), 1));
  // Elements reaching into each other: [0,4) [8,12) every 4 bytes. Elements 0 and 1 are
  // disjoint, element 2 hits element 0.
  const datatype r = datatype::resized(datatype::vector(2, 1, 2, int_t), 0, 4);
  EXPECT_FALSE(detail::has_overlapping_entries(r, 1));
  EXPECT_FALSE(detail::has_overlapping_entries(r, 2));
  EXPECT_TRUE(detail::has_overlapping_entries(r, 3));
}

TEST(Signatures, MatchAsInMessagePassing) {
  covers("COM-6");
  const datatype v = datatype::vector(3, 4, 8, int_t);
  EXPECT_TRUE(detail::signatures_match(12, int_t, 1, v));
  EXPECT_TRUE(detail::signatures_match(1, v, 12, int_t));
  EXPECT_FALSE(detail::signatures_match(13, int_t, 1, v));
  EXPECT_FALSE(detail::signatures_match(11, int_t, 1, v));
  EXPECT_FALSE(detail::signatures_match(1, int_t, 1, datatype::of<float>()));
  EXPECT_FALSE(detail::signatures_match(1, int_t, 1, datatype::of<unsigned>()));
  EXPECT_TRUE(detail::signatures_match(6, int_t, 2, datatype::contiguous(3, int_t)));
  EXPECT_TRUE(detail::signatures_match(0, int_t, 0, double_t));
  EXPECT_TRUE(detail::signatures_match(0, int_t, 1, datatype::contiguous(0, double_t)));
  EXPECT_FALSE(detail::signatures_match(-1, int_t, -1, int_t));

  const counts bl{1, 1};
  const disps d{0, 8};
  const std::array<datatype, 2> id{int_t, double_t};
  const std::array<datatype, 2> di{double_t, int_t};
  const datatype s1 = datatype::structure(bl, d, id);
  const datatype s2 = datatype::structure(bl, d, id);
  EXPECT_TRUE(detail::signatures_match(1, s1, 1, s2));
  EXPECT_TRUE(detail::signatures_match(4, s1, 2, datatype::contiguous(2, s2)));
  EXPECT_FALSE(detail::signatures_match(1, s1, 1, datatype::structure(bl, d, di)));
  EXPECT_FALSE(detail::signatures_match(2, s1, 1, s2));
  // Layout does not matter, only the sequence: a struct {int, double} against an
  // hindexed-like arrangement of the same two types in the same order.
  const disps far{-100, 100};
  EXPECT_TRUE(detail::signatures_match(3, s1, 3, datatype::structure(bl, far, id)));
  // int,double,int,double against struct {int, contiguous(2, struct{double,int}) … }
  const datatype dint = datatype::structure(bl, d, di);
  const counts bl2{1, 1, 1};
  const disps d3{0, 8, 64};
  const std::array<datatype, 3> chain{int_t, dint, double_t};
  EXPECT_TRUE(detail::signatures_match(1, datatype::structure(bl2, d3, chain), 2, s1));
}

TEST(Signatures, APairIsItsValueAndAnInt) {
  // MPI defines FLOAT_INT, 2INT … as structs of the value and an int.
  const datatype& ii = datatype::of<value_index<int>>();
  EXPECT_TRUE(detail::signatures_match(1, ii, 2, int_t));
  EXPECT_TRUE(detail::signatures_match(3, ii, 1, datatype::contiguous(6, int_t)));
  EXPECT_FALSE(detail::signatures_match(1, ii, 3, int_t));
  const datatype& fi = datatype::of<value_index<float>>();
  const counts bl{1, 1};
  const disps d{0, 4};
  const std::array<datatype, 2> f_i{datatype::of<float>(), int_t};
  const std::array<datatype, 2> i_f{int_t, datatype::of<float>()};
  EXPECT_TRUE(detail::signatures_match(2, fi, 2, datatype::structure(bl, d, f_i)));
  EXPECT_FALSE(detail::signatures_match(2, fi, 2, datatype::structure(bl, d, i_f)));
  EXPECT_FALSE(detail::signatures_match(1, fi, 1, datatype::of<value_index<double>>()));
  EXPECT_TRUE(detail::signatures_match(5, datatype::of<value_index<double>>(), 5,
                                       datatype::of<value_index<double>>()));
}

TEST(Footprint, SpansTheDataOfEveryElement) {
  covers("COM-8");
  const datatype v = datatype::vector(3, 4, 8, int_t);
  EXPECT_EQ(detail::memory_footprint(v, 1), (detail::footprint{0, 80}));
  EXPECT_EQ(detail::memory_footprint(v, 2), (detail::footprint{0, 160}));
  EXPECT_EQ(detail::memory_footprint(v, 0), (detail::footprint{0, 0}));
  const disps hd{-8, 4};
  const datatype h = datatype::hindexed_block(1, hd, int_t);
  EXPECT_EQ(detail::memory_footprint(h, 2), (detail::footprint{-8, 24}));
  // Markers do not count, data does.
  const datatype r = datatype::resized(int_t, -4, 12);
  EXPECT_EQ(detail::memory_footprint(r, 3), (detail::footprint{0, 28}));
  EXPECT_EQ(detail::memory_footprint(datatype::contiguous(0, int_t), 5), (detail::footprint{0, 0}));
  EXPECT_EQ(detail::memory_footprint(datatype::of<value_index<double>>(), 2),
            (detail::footprint{0, 28}));
  // Overflow saturates so a bounds check fails.
  const detail::footprint sat =
      detail::memory_footprint(datatype::contiguous(1 << 20, double_t), count_t{1} << 62);
  EXPECT_EQ(sat.lo, std::numeric_limits<std::ptrdiff_t>::min());
  EXPECT_EQ(sat.hi, std::numeric_limits<std::ptrdiff_t>::max());
}

TEST(Pack, VectorRoundTrip) {
  covers("COM-6", "COM-9");
  // 12 ints into the 3 blocks of 4 of vector(3,4,8,int); gaps untouched.
  const datatype v = datatype::vector(3, 4, 8, int_t);
  std::array<int, 12> packed{};
  for (int i = 0; i < 12; ++i) packed[static_cast<std::size_t>(i)] = i + 1;
  std::array<int, 20> target{};
  target.fill(-1);
  detail::unpack(v, 1, packed.data(), target.data());
  const std::array<int, 20> want{1, 2, 3,  4,  -1, -1, -1, -1, 5,  6,
                                 7, 8, -1, -1, -1, -1, 9,  10, 11, 12};
  EXPECT_EQ(target, want);
  std::array<int, 12> back{};
  detail::pack(v, 1, target.data(), back.data());
  EXPECT_EQ(back, packed);
}

TEST(Pack, PairsLoseTheirPadding) {
  const std::array<value_index<double>, 2> in{{{1.5, 7}, {2.5, 9}}};
  std::array<std::byte, 24> packed{};
  detail::pack(datatype::of<value_index<double>>(), 2, in.data(), packed.data());
  double v = 0;
  int i = 0;
  std::memcpy(&v, packed.data() + 12, sizeof v);
  std::memcpy(&i, packed.data() + 20, sizeof i);
  EXPECT_EQ(v, 2.5);
  EXPECT_EQ(i, 9);
}

// --- encoding ------------------------------------------------------------------------

void expect_same_layout(const datatype& a, const datatype& b) {
  const detail::datatype_impl& x = a.impl();
  const detail::datatype_impl& y = b.impl();
  EXPECT_EQ(x.combiner, y.combiner);
  EXPECT_EQ(x.basic, y.basic);
  EXPECT_EQ(x.size, y.size);
  EXPECT_EQ(x.lb, y.lb);
  EXPECT_EQ(x.extent, y.extent);
  EXPECT_EQ(x.true_lb, y.true_lb);
  EXPECT_EQ(x.true_extent, y.true_extent);
  EXPECT_EQ(x.explicit_bounds, y.explicit_bounds);
  EXPECT_EQ(x.alignment, y.alignment);
  EXPECT_EQ(x.runs, y.runs);
  EXPECT_EQ(x.element_runs, y.element_runs);
  EXPECT_EQ(x.signature, y.signature);
  EXPECT_EQ(x.basic_count, y.basic_count);
  EXPECT_EQ(x.contiguous, y.contiguous);
  EXPECT_EQ(x.name, y.name);
  EXPECT_EQ(x.args, y.args);
}

std::vector<datatype> sample_types() {
  const counts bl{2, 1, 3};
  const counts d{5, 0, 9};
  const disps hd{16, -8, 40};
  const std::array<datatype, 3> types{int_t, datatype::vector(2, 1, 3, double_t),
                                      datatype::resized(datatype::of<char>(), -2, 5)};
  const counts sizes{2, 3, 4};
  const counts sub{1, 2, 2};
  const counts starts{1, 0, 1};
  const datatype st = datatype::structure(bl, hd, types);
  return {
      int_t,
      datatype::of<value_index<long double>>(),
      datatype::contiguous(7, double_t),
      datatype::vector(3, 2, -5, int_t),
      datatype::hvector(3, 2, 13, datatype::of<short>()),
      datatype::indexed(bl, d, int_t),
      datatype::hindexed(bl, hd, double_t),
      datatype::indexed_block(2, d, datatype::of<float>()),
      datatype::hindexed_block(2, hd, int_t),
      st,
      datatype::subarray(sizes, sub, starts, order::c, st),
      datatype::subarray(sizes, sub, starts, order::fortran, double_t),
      datatype::resized(st, -16, 200),
      datatype::dup(datatype::vector(2, 2, 3, st)),
      datatype::contiguous(0, int_t),
  };
}

TEST(Encoding, RoundTripGivesTheSameLayout) {
  covers("COM-7", "SYN-36");
  for (const datatype& t : sample_types()) {
    SCOPED_TRACE(std::string(t.name()));
    const std::vector<std::byte> bytes = detail::encode_layout(t);
    const datatype back = detail::decode_layout(bytes);
    expect_same_layout(t, back);
    EXPECT_EQ(detail::encode_layout(back), bytes);
    std::vector<std::byte> copy = bytes;  // decoding owns nothing of the input
    const datatype again = detail::decode_layout(copy);
    copy.assign(copy.size(), std::byte{0xff});
    expect_same_layout(t, again);
  }
}

TEST(Encoding, IsCompact) {
  // The calls are encoded, not the runs: 1000 runs in a dozen bytes.
  const datatype v = datatype::vector(1000, 1, 2, double_t);
  EXPECT_LE(detail::encode_layout(v).size(), 16U);
  // A type used twice is encoded once.
  const datatype big = datatype::indexed(counts(50, 1), counts(50, 3), double_t);
  const std::size_t one = detail::encode_layout(big).size();
  const counts bl{1, 1};
  const disps d{0, 1000};
  const std::array<datatype, 2> twice{big, big};
  EXPECT_LT(detail::encode_layout(datatype::structure(bl, d, twice)).size(), one + 16);
}

std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (const int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(Encoding, MalformedInputRaisesType) {
  const int int_code = static_cast<int>(basic_type::int_);
  const auto bad = [](const std::vector<std::byte>& b) {
    expect_error([&] { detail::decode_layout(b); }, error_class::type);
  };
  // The good form: contiguous(3, int).
  EXPECT_EQ(detail::decode_layout(bytes_of({1, 2, 0, int_code, 1, 1, 6, 1, 0})).size(), 12U);
  bad({});                                                // empty
  bad(bytes_of({2, 1, 0, int_code}));                     // unknown version
  bad(bytes_of({1, 0}));                                  // no node
  bad(bytes_of({1, 1, 0, 200}));                          // unknown basic type
  bad(bytes_of({1, 1, 0, 29}));                           // basic_type::count_ is not a type
  bad(bytes_of({1, 1, 99, 0}));                           // unknown combiner
  bad(bytes_of({1, 1, 0, int_code, 0}));                  // trailing byte
  bad(bytes_of({1, 2, 0, int_code, 1, 1, 6, 1, 1}));      // reference to itself
  bad(bytes_of({1, 2, 0, int_code, 1, 2, 6, 6, 1, 0}));   // contiguous with 2 args
  bad(bytes_of({1, 2, 0, int_code, 1, 1, 6, 0}));         // contiguous without a type
  bad(bytes_of({1, 2, 0, int_code, 1, 1, 1, 1, 0}));      // contiguous(-1): count error
  bad(bytes_of({1, 2, 0, int_code, 10, 2, 0, 0, 1, 0}));  // resized extent 0
  bad(bytes_of({1, 2, 0, int_code, 4, 1, 2, 1, 0}));      // indexed n=1 without arrays
  bad(bytes_of({1, 2, 0, int_code, 8, 2, 2, 2, 1, 0}));   // subarray order 1 without arrays
  bad(bytes_of({1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}));  // varint
  bad(bytes_of({1, 0xff, 0xff}));                                                  // truncated
  // Every strict prefix of a real encoding is truncated.
  for (const datatype& t : sample_types()) {
    const std::vector<std::byte> full = detail::encode_layout(t);
    for (std::size_t n = 0; n < full.size(); ++n) {
      bad(std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)));
    }
  }
}

TEST(Encoding, CorruptedInputDecodesOrRaisesType) {
  std::mt19937_64 rng(20240611);
  const std::vector<datatype> types = sample_types();
  int decoded = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::byte> b = detail::encode_layout(types[rng() % types.size()]);
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      b[rng() % b.size()] = static_cast<std::byte>(rng() & 0xff);
    }
    try {
      const datatype t = detail::decode_layout(b);
      ++decoded;
      // Whatever decoded is a consistent type.
      std::size_t bytes = 0;
      for (const auto& r : t.impl().runs) bytes += r.length;
      EXPECT_EQ(bytes, t.size());
    } catch (const oneside::error& e) {
      EXPECT_EQ(e.error_class(), error_class::type) << e.what();
    }
  }
  EXPECT_GT(decoded, 0);
}

// --- the naive reference -------------------------------------------------------------

// A datatype description the test builds two ways: with the constructors under test and
// as an explicit typemap.
struct spec;
using spec_ptr = std::shared_ptr<const spec>;
enum class kind {
  predefined,
  contiguous,
  vector,
  hvector,
  indexed,
  hindexed,
  indexed_block,
  hindexed_block,
  structure,
  subarray,
  resized,
  dup
};
struct spec {
  kind k = kind::predefined;
  basic_type basic = basic_type::int_;
  count_t count = 0;
  count_t blocklength = 0;
  std::ptrdiff_t stride = 0;
  counts blocklengths;
  counts displacements;
  disps byte_displacements;
  counts sizes, subsizes, starts;
  order ord = order::c;
  std::ptrdiff_t lb = 0;
  std::ptrdiff_t extent = 0;
  std::vector<spec_ptr> children;
};

datatype build(const spec& s) {
  switch (s.k) {
    case kind::predefined:
      return datatype::predefined(s.basic);
    case kind::contiguous:
      return datatype::contiguous(s.count, build(*s.children[0]));
    case kind::vector:
      return datatype::vector(s.count, s.blocklength, s.stride, build(*s.children[0]));
    case kind::hvector:
      return datatype::hvector(s.count, s.blocklength, s.stride, build(*s.children[0]));
    case kind::indexed:
      return datatype::indexed(s.blocklengths, s.displacements, build(*s.children[0]));
    case kind::hindexed:
      return datatype::hindexed(s.blocklengths, s.byte_displacements, build(*s.children[0]));
    case kind::indexed_block:
      return datatype::indexed_block(s.blocklength, s.displacements, build(*s.children[0]));
    case kind::hindexed_block:
      return datatype::hindexed_block(s.blocklength, s.byte_displacements, build(*s.children[0]));
    case kind::structure: {
      std::vector<datatype> types;
      for (const spec_ptr& c : s.children) types.push_back(build(*c));
      return datatype::structure(s.blocklengths, s.byte_displacements, types);
    }
    case kind::subarray:
      return datatype::subarray(s.sizes, s.subsizes, s.starts, s.ord, build(*s.children[0]));
    case kind::resized:
      return datatype::resized(build(*s.children[0]), s.lb, s.extent);
    case kind::dup:
      return datatype::dup(build(*s.children[0]));
  }
  return int_t;
}

struct entry {
  std::ptrdiff_t offset;
  basic_type type;
};

// A typemap: entries in order, and the bounds MPI gives it (`markers`: set by resized).
struct typemap {
  std::vector<entry> entries;
  bool has_bounds = false;  // it has entries or markers
  bool markers = false;
  std::ptrdiff_t lb = 0;
  std::ptrdiff_t ub = 0;
};

std::size_t cpp_sizeof(basic_type t) {
  return detail::basic_type_extent(t);  // == sizeof, checked by datatype_test
}

// The data bytes of one basic element, from the C++ type.
template <class V>
std::vector<std::pair<std::ptrdiff_t, std::size_t>> pair_ranges() {
  using P = value_index<V>;
  return {{0, sizeof(V)}, {static_cast<std::ptrdiff_t>(offsetof(P, index)), sizeof(int)}};
}
std::vector<std::pair<std::ptrdiff_t, std::size_t>> data_ranges(basic_type t) {
  switch (t) {
    case basic_type::float_int:
      return pair_ranges<float>();
    case basic_type::double_int:
      return pair_ranges<double>();
    case basic_type::long_int_pair:
      return pair_ranges<long>();
    case basic_type::int_int:
      return pair_ranges<int>();
    case basic_type::short_int_pair:
      return pair_ranges<short>();
    case basic_type::long_double_int:
      return pair_ranges<long double>();
    default:
      return {{0, cpp_sizeof(t)}};
  }
}

// The signature MPI compares: pairs are their value type and int.
std::vector<basic_type> expanded_signature(basic_type t) {
  switch (t) {
    case basic_type::float_int:
      return {basic_type::float_, basic_type::int_};
    case basic_type::double_int:
      return {basic_type::double_, basic_type::int_};
    case basic_type::long_int_pair:
      return {basic_type::long_int, basic_type::int_};
    case basic_type::int_int:
      return {basic_type::int_, basic_type::int_};
    case basic_type::short_int_pair:
      return {basic_type::short_int, basic_type::int_};
    case basic_type::long_double_int:
      return {basic_type::long_double, basic_type::int_};
    default:
      return {t};
  }
}

std::size_t cpp_alignof(basic_type t) {
  return detail::basic_type_alignment(t);  // == alignof, checked by datatype_test
}

// Places copies of `old` at the displacements, in order (every constructor but struct).
typemap place(const typemap& old, const std::vector<std::ptrdiff_t>& at) {
  typemap m;
  for (const std::ptrdiff_t d : at) {
    for (const entry& e : old.entries) m.entries.push_back({d + e.offset, e.type});
    if (!old.has_bounds) continue;
    m.lb = m.has_bounds ? std::min(m.lb, d + old.lb) : d + old.lb;
    m.ub = m.has_bounds ? std::max(m.ub, d + old.ub) : d + old.ub;
    m.has_bounds = true;
    m.markers = old.markers;
  }
  return m;
}

typemap expand(const spec& s) {
  if (s.k == kind::predefined) {
    typemap m;
    m.entries = {{0, s.basic}};
    m.has_bounds = true;
    m.ub = static_cast<std::ptrdiff_t>(cpp_sizeof(s.basic));
    return m;
  }
  if (s.k == kind::structure) {
    typemap m;
    bool any_markers = false;
    std::vector<std::pair<std::ptrdiff_t, typemap>> copies;
    for (std::size_t i = 0; i < s.children.size(); ++i) {
      const typemap old = expand(*s.children[i]);
      const std::ptrdiff_t ex = old.ub - old.lb;
      for (count_t j = 0; j < s.blocklengths[i]; ++j) {
        const std::ptrdiff_t d = s.byte_displacements[i] + j * ex;
        copies.emplace_back(d, old);
        any_markers = any_markers || old.markers;
      }
    }
    std::size_t align = 1;
    for (const auto& [d, old] : copies) {
      for (const entry& e : old.entries) {
        m.entries.push_back({d + e.offset, e.type});
        align = std::max(align, cpp_alignof(e.type));
      }
      // With markers anywhere only marked copies set the bounds (MPI's sticky lb/ub).
      if (!old.has_bounds || (any_markers && !old.markers)) continue;
      m.lb = m.has_bounds ? std::min(m.lb, d + old.lb) : d + old.lb;
      m.ub = m.has_bounds ? std::max(m.ub, d + old.ub) : d + old.ub;
      m.has_bounds = true;
    }
    m.markers = any_markers;
    if (!any_markers && !m.entries.empty()) {
      const auto a = static_cast<std::ptrdiff_t>(align);
      while ((m.ub - m.lb) % a != 0) ++m.ub;
    }
    return m;
  }
  const typemap old = expand(*s.children[0]);
  const std::ptrdiff_t ex = old.ub - old.lb;
  std::vector<std::ptrdiff_t> at;
  switch (s.k) {
    case kind::contiguous:
      for (count_t i = 0; i < s.count; ++i) at.push_back(i * ex);
      break;
    case kind::vector:
    case kind::hvector:
      for (count_t i = 0; i < s.count; ++i) {
        for (count_t j = 0; j < s.blocklength; ++j) {
          at.push_back(i * (s.k == kind::vector ? s.stride * ex : s.stride) + j * ex);
        }
      }
      break;
    case kind::indexed:
    case kind::hindexed:
    case kind::indexed_block:
    case kind::hindexed_block: {
      const bool h = s.k == kind::hindexed || s.k == kind::hindexed_block;
      const bool same = s.k == kind::indexed_block || s.k == kind::hindexed_block;
      const std::size_t n = h ? s.byte_displacements.size() : s.displacements.size();
      for (std::size_t i = 0; i < n; ++i) {
        const count_t bl = same ? s.blocklength : s.blocklengths[i];
        const std::ptrdiff_t d = h ? s.byte_displacements[i] : s.displacements[i] * ex;
        for (count_t j = 0; j < bl; ++j) at.push_back(d + j * ex);
      }
      break;
    }
    case kind::subarray: {
      // Every index tuple of the subarray in storage order; element linear index in the
      // full array.
      const std::size_t nd = s.sizes.size();
      std::vector<count_t> idx(nd);
      const std::function<void(std::size_t)> walk = [&](std::size_t level) {
        if (level == nd) {
          std::ptrdiff_t linear = 0;
          std::ptrdiff_t mult = 1;
          for (std::size_t q = 0; q < nd; ++q) {
            const std::size_t k = s.ord == order::c ? nd - 1 - q : q;  // fastest first
            linear += idx[k] * mult;
            mult *= s.sizes[k];
          }
          at.push_back(linear * ex);
          return;
        }
        // The slowest dimension is walked outermost.
        const std::size_t k = s.ord == order::c ? level : nd - 1 - level;
        for (count_t i = s.starts[k]; i < s.starts[k] + s.subsizes[k]; ++i) {
          idx[k] = i;
          walk(level + 1);
        }
      };
      walk(0);
      typemap m = place(old, at);
      count_t elements = 1;
      for (const count_t z : s.sizes) elements *= z;
      m.has_bounds = true;
      m.markers = true;
      m.lb = 0;
      m.ub = elements * ex;
      return m;
    }
    case kind::resized: {
      typemap m = old;
      m.has_bounds = true;
      m.markers = true;
      m.lb = s.lb;
      m.ub = s.lb + s.extent;
      return m;
    }
    case kind::dup:
      return old;
    default:
      break;
  }
  return place(old, at);
}

// What the reference derives from a typemap.
struct reference {
  typemap map;
  std::size_t size = 0;
  std::ptrdiff_t true_lb = 0;
  std::ptrdiff_t true_ub = 0;
  bool mixed = false;

  explicit reference(typemap m) : map(std::move(m)) {
    bool first = true;
    std::set<basic_type> kinds;
    for (const entry& e : map.entries) {
      kinds.insert(e.type);
      for (const auto& [o, n] : data_ranges(e.type)) {
        size += n;
        true_lb = first ? e.offset + o : std::min(true_lb, e.offset + o);
        true_ub = first ? e.offset + o + static_cast<std::ptrdiff_t>(n)
                        : std::max(true_ub, e.offset + o + static_cast<std::ptrdiff_t>(n));
        first = false;
      }
    }
    mixed = kinds.size() > 1;
  }
  std::ptrdiff_t lb() const { return map.has_bounds ? map.lb : 0; }
  std::ptrdiff_t extent() const { return map.has_bounds ? map.ub - map.lb : 0; }

  // Byte runs of count elements: every data byte range in order, merged when touching.
  runs byte_runs(count_t count) const {
    runs out;
    for (count_t i = 0; i < count; ++i) {
      for (const entry& e : map.entries) {
        for (const auto& [o, n] : data_ranges(e.type)) {
          const std::ptrdiff_t at = i * extent() + e.offset + o;
          if (!out.empty() && out.back().offset + static_cast<std::ptrdiff_t>(out.back().n) == at) {
            out.back().n += n;
          } else {
            out.push_back({at, n});
          }
        }
      }
    }
    return out;
  }
  runs element_runs(count_t count) const {
    runs out;
    for (count_t i = 0; i < count; ++i) {
      for (const entry& e : map.entries) {
        const std::ptrdiff_t at = i * extent() + e.offset;
        const auto stride = static_cast<std::ptrdiff_t>(cpp_sizeof(e.type));
        if (!out.empty() &&
            out.back().offset + static_cast<std::ptrdiff_t>(out.back().n) * stride == at) {
          ++out.back().n;
        } else {
          out.push_back({at, 1});
        }
      }
    }
    return out;
  }
  std::vector<basic_type> signature(count_t count) const {
    std::vector<basic_type> out;
    for (count_t i = 0; i < count; ++i) {
      for (const entry& e : map.entries) {
        for (const basic_type b : expanded_signature(e.type)) out.push_back(b);
      }
    }
    return out;
  }
  // Byte by byte, entry by entry.
  void pack(count_t count, const std::byte* src, std::byte* dst) const {
    for (count_t i = 0; i < count; ++i) {
      for (const entry& e : map.entries) {
        for (const auto& [o, n] : data_ranges(e.type)) {
          for (std::size_t b = 0; b < n; ++b) {
            *dst++ = src[i * extent() + e.offset + o + static_cast<std::ptrdiff_t>(b)];
          }
        }
      }
    }
  }
  void unpack(count_t count, const std::byte* src, std::byte* dst) const {
    for (count_t i = 0; i < count; ++i) {
      for (const entry& e : map.entries) {
        for (const auto& [o, n] : data_ranges(e.type)) {
          for (std::size_t b = 0; b < n; ++b) {
            dst[i * extent() + e.offset + o + static_cast<std::ptrdiff_t>(b)] = *src++;
          }
        }
      }
    }
  }
};

// --- random types --------------------------------------------------------------------

class generator {
 public:
  explicit generator(std::uint64_t seed) : rng_(seed) {}

  // A random type; `basic` fixes every leaf (a homogeneous type) unless it is count_.
  spec_ptr make(int depth, basic_type basic) {
    auto s = std::make_shared<spec>();
    // Struct three times as often as the others, so mixed types are common.
    count_t choice = depth == 0 ? 0 : pick(0, 13);
    if (choice > 11) choice = 8;
    const auto child = [&] { return make(depth - 1, basic); };
    switch (choice) {
      case 0: {
        static constexpr std::array leaves{
            basic_type::int_,      basic_type::double_,    basic_type::character,
            basic_type::short_int, basic_type::double_int, basic_type::short_int_pair,
            basic_type::float_,    basic_type::byte,       basic_type::long_double_int};
        s->k = kind::predefined;
        s->basic = basic != basic_type::count_ ? basic : leaves[upick(0, leaves.size() - 1)];
        break;
      }
      case 1:
        s->k = kind::contiguous;
        s->count = small();
        s->children = {child()};
        break;
      case 2:
      case 3:
        s->k = choice == 2 ? kind::vector : kind::hvector;
        s->count = small();
        s->blocklength = small();
        s->stride = choice == 2 ? pick(-3, 5) : pick(-40, 60);
        s->children = {child()};
        break;
      case 4:
      case 5: {
        s->k = choice == 4 ? kind::indexed : kind::hindexed;
        const auto n = static_cast<std::size_t>(small());
        for (std::size_t i = 0; i < n; ++i) {
          s->blocklengths.push_back(small());
          s->displacements.push_back(pick(-3, 6));
          s->byte_displacements.push_back(pick(-32, 64));
        }
        s->children = {child()};
        break;
      }
      case 6:
      case 7: {
        s->k = choice == 6 ? kind::indexed_block : kind::hindexed_block;
        s->blocklength = small();
        const auto n = static_cast<std::size_t>(small());
        for (std::size_t i = 0; i < n; ++i) {
          s->displacements.push_back(pick(-3, 6));
          s->byte_displacements.push_back(pick(-32, 64));
        }
        s->children = {child()};
        break;
      }
      case 8: {
        s->k = kind::structure;
        const auto n = static_cast<std::size_t>(small());
        for (std::size_t i = 0; i < n; ++i) {
          s->blocklengths.push_back(small());
          s->byte_displacements.push_back(pick(-32, 64));
          s->children.push_back(child());
        }
        break;
      }
      case 9: {
        s->k = kind::subarray;
        const std::size_t nd = upick(1, 3);
        for (std::size_t i = 0; i < nd; ++i) {
          const count_t size = pick(1, 4);
          const count_t sub = pick(0, size);
          s->sizes.push_back(size);
          s->subsizes.push_back(sub);
          s->starts.push_back(pick(0, size - sub));
        }
        s->ord = pick(0, 1) == 0 ? order::c : order::fortran;
        s->children = {child()};
        break;
      }
      case 10:
        s->k = kind::resized;
        s->lb = pick(-16, 16);
        s->extent = pick(1, 40);
        s->children = {child()};
        break;
      default:
        s->k = kind::dup;
        s->children = {child()};
        break;
    }
    return s;
  }

  std::uint64_t next() { return rng_(); }
  // A count or block length: 1..3, and 0 one time in eight.
  count_t small() { return pick(0, 7) == 0 ? 0 : pick(1, 3); }
  count_t pick(count_t lo, count_t hi) {
    return std::uniform_int_distribution<count_t>(lo, hi)(rng_);
  }
  std::size_t upick(std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng_);
  }

 private:
  std::mt19937_64 rng_;
};

void check_against_reference(const datatype& t, const reference& ref, generator& g) {
  const detail::datatype_impl& impl = t.impl();
  EXPECT_EQ(t.size(), ref.size);
  EXPECT_EQ(t.basic_count(), ref.map.entries.size());
  EXPECT_EQ(t.lb(), ref.lb());
  EXPECT_EQ(t.extent(), ref.extent());
  EXPECT_EQ(t.true_lb(), ref.size > 0 ? ref.true_lb : 0);
  EXPECT_EQ(t.true_extent(), ref.size > 0 ? ref.true_ub - ref.true_lb : 0);
  EXPECT_EQ(t.is_mixed(), ref.mixed);
  if (!ref.mixed && !ref.map.entries.empty()) {
    EXPECT_EQ(t.basic(), ref.map.entries[0].type);
  }
  const runs one = ref.byte_runs(1);
  EXPECT_EQ(t.is_contiguous(), (ref.size == 0 && ref.extent() == 0) ||
                                   (one.size() == 1 && one[0].offset == 0 &&
                                    static_cast<std::ptrdiff_t>(one[0].n) == ref.extent()));
  runs stored;
  for (const auto& r : impl.runs) stored.push_back({r.offset, r.length});
  EXPECT_EQ(stored, one);
  if (!ref.mixed) {
    runs stored_elements;
    for (const auto& r : impl.element_runs) stored_elements.push_back({r.offset, r.count});
    EXPECT_EQ(stored_elements, ref.element_runs(1));
  }
  std::vector<basic_type> sig;
  for (const auto& s : impl.signature) {
    for (std::size_t k = 0; k < s.count; ++k) {
      for (const basic_type b : expanded_signature(s.type)) sig.push_back(b);
    }
  }
  EXPECT_EQ(sig, ref.signature(1));

  for (const count_t count : {count_t{0}, count_t{1}, count_t{2}, count_t{3}}) {
    SCOPED_TRACE(count);
    const runs want = ref.byte_runs(count);
    EXPECT_EQ(byte_runs_of(t, count), want);
    EXPECT_EQ(detail::byte_run_count(t, count), want.size());
    if (!ref.mixed) {
      const runs want_elements = ref.element_runs(count);
      EXPECT_EQ(element_runs_of(t, count), want_elements);
      EXPECT_EQ(detail::element_run_count(t, count), want_elements.size());
    }
    std::multiset<std::ptrdiff_t> bytes;
    for (const run& r : want) {
      for (std::size_t b = 0; b < r.n; ++b) bytes.insert(r.offset + static_cast<std::ptrdiff_t>(b));
    }
    bool shared = false;
    for (const std::ptrdiff_t b : bytes) shared = shared || bytes.count(b) > 1;
    EXPECT_EQ(detail::has_overlapping_entries(t, count), shared);
    const detail::footprint fp = detail::memory_footprint(t, count);
    if (count == 0 || ref.size == 0) {
      EXPECT_EQ(fp, (detail::footprint{0, 0}));
      continue;
    }
    EXPECT_EQ(fp.lo, ref.true_lb);
    EXPECT_EQ(fp.hi, (count - 1) * ref.extent() + ref.true_ub);

    // Pack and unpack over a buffer spanning the footprint with guard bytes either side.
    constexpr std::ptrdiff_t guard = 16;
    const std::ptrdiff_t span = fp.hi - fp.lo + 2 * guard;
    std::vector<std::byte> memory(static_cast<std::size_t>(span));
    for (std::byte& b : memory) b = static_cast<std::byte>(g.next() & 0xff);
    std::byte* const origin = memory.data() + guard - fp.lo;  // buffer start
    const std::size_t packed_bytes = static_cast<std::size_t>(count) * ref.size;
    std::vector<std::byte> got(packed_bytes);
    std::vector<std::byte> want_packed(packed_bytes);
    detail::pack(t, count, origin, got.data());
    ref.pack(count, origin, want_packed.data());
    EXPECT_EQ(got, want_packed);

    std::vector<std::byte> got_mem(memory.size(), std::byte{0});
    std::vector<std::byte> want_mem(memory.size(), std::byte{0});
    detail::unpack(t, count, got.data(), got_mem.data() + guard - fp.lo);
    ref.unpack(count, got.data(), want_mem.data() + guard - fp.lo);
    EXPECT_EQ(got_mem, want_mem);
  }

  const datatype back = detail::decode_layout(detail::encode_layout(t));
  expect_same_layout(t, back);
}

std::size_t entries_of(const spec& s) {
  return expand(s).entries.size();
}

void property_test(basic_type basic, std::uint64_t seed, int types) {
  generator g(seed);
  int checked = 0;
  int nonempty = 0;
  while (checked < types) {
    const spec_ptr s = g.make(static_cast<int>(g.pick(1, 4)), basic);
    if (entries_of(*s) > 400) continue;  // keep the naive walk cheap
    const datatype t = build(*s);
    const reference ref(expand(*s));
    SCOPED_TRACE(std::string(t.name()));
    check_against_reference(t, ref, g);
    ++checked;
    if (ref.size > 0) ++nonempty;
    if (::testing::Test::HasFailure()) return;  // one failing type is enough to read
  }
  EXPECT_GT(nonempty, types / 2) << "the generator makes too many empty types";
}

TEST(LayoutProperty, RandomHomogeneousTypesMatchTheNaiveTypemap) {
  covers("COM-6", "COM-7", "COM-8");
  property_test(basic_type::int_, 1, 1000);
  property_test(basic_type::double_int, 2, 500);
  property_test(basic_type::short_int_pair, 3, 300);
  property_test(basic_type::character, 4, 300);
}

TEST(LayoutProperty, RandomMixedTypesMatchTheNaiveTypemap) {
  property_test(basic_type::count_, 5, 2500);
}

// Signature matching against the naive expanded sequences: each random type against a
// struct with one block per entry in the same order (a match), that struct with one entry
// changed or dropped (no match), and against other random types.
TEST(LayoutProperty, SignatureMatchingAgreesWithTheNaiveSequence) {
  covers("COM-6");
  generator g(77);
  std::vector<std::pair<datatype, reference>> pool;
  while (pool.size() < 150) {
    const spec_ptr s = g.make(static_cast<int>(g.pick(1, 3)),
                              g.pick(0, 1) == 0 ? basic_type::int_ : basic_type::count_);
    if (entries_of(*s) > 200) continue;
    pool.emplace_back(build(*s), reference(expand(*s)));
  }
  const auto flat = [](const std::vector<entry>& entries) {
    counts bl(entries.size(), 1);
    disps d;
    std::vector<datatype> types;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      d.push_back(static_cast<std::ptrdiff_t>(64 * i));
      types.push_back(datatype::predefined(entries[i].type));
    }
    return datatype::structure(bl, d, types);
  };
  int matches = 0;
  for (const auto& [t, ref] : pool) {
    SCOPED_TRACE(std::string(t.name()));
    const count_t n = g.pick(1, 3);
    std::vector<entry> all;
    for (count_t i = 0; i < n; ++i) {
      all.insert(all.end(), ref.map.entries.begin(), ref.map.entries.end());
    }
    EXPECT_TRUE(detail::signatures_match(n, t, 1, flat(all)));
    EXPECT_TRUE(detail::signatures_match(1, flat(all), n, t));
    if (!all.empty()) {
      std::vector<entry> changed = all;
      entry& e = changed[g.upick(0, changed.size() - 1)];
      e.type = e.type == basic_type::float_ ? basic_type::int_ : basic_type::float_;
      EXPECT_FALSE(detail::signatures_match(n, t, 1, flat(changed)));
      std::vector<entry> shorter(all.begin(), all.end() - 1);
      EXPECT_FALSE(detail::signatures_match(n, t, 1, flat(shorter)));
    }
    for (int k = 0; k < 20; ++k) {
      const auto& [u, uref] = pool[g.upick(0, pool.size() - 1)];
      const count_t a = g.pick(0, 3);
      const count_t b = g.pick(0, 3);
      const bool want = ref.signature(a) == uref.signature(b);
      EXPECT_EQ(detail::signatures_match(a, t, b, u), want) << u.name() << " " << a << " " << b;
      matches += want ? 1 : 0;
    }
  }
  EXPECT_GT(matches, 0);
}

}  // namespace
