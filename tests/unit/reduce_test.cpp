// The reduction kernels: every valid (op, basic type) pair against a serial reference
// written here, on aligned and misaligned buffers of several lengths, plus the cases the
// spec and reduce.hpp single out (wrapping overflow, minloc/maxloc ties, logical results,
// NaN, replace and no_op, complex, long double, bool, std::byte).
#include "runtime/reduce.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/op.hpp>

#include "covers.hpp"

namespace {

using oneside::basic_type;
using oneside::op;
using oneside::op_use;
using oneside::value_index;
using oneside::detail::reduce_apply;
using oneside::detail::reduce_function;

constexpr std::array all_ops{op::sum,    op::prod,   op::min,     op::max,  op::land,
                             op::lor,    op::lxor,   op::band,    op::bor,  op::bxor,
                             op::minloc, op::maxloc, op::replace, op::no_op};

template <class... Ts>
struct type_list {};
using all_types =
    type_list<bool, char, wchar_t, char8_t, char16_t, char32_t, signed char, unsigned char, short,
              unsigned short, int, unsigned, long, unsigned long, long long, unsigned long long,
              float, double, long double, std::complex<float>, std::complex<double>,
              std::complex<long double>, std::byte, value_index<float>, value_index<double>,
              value_index<long>, value_index<int>, value_index<short>, value_index<long double>>;

template <class F, class... Ts>
void for_each_type(type_list<Ts...>, F&& f) {
  (f.template operator()<Ts>(), ...);
}

template <class T>
inline constexpr bool is_pair = false;
template <class V>
inline constexpr bool is_pair<value_index<V>> = true;
template <class T>
inline constexpr bool is_complex = false;
template <class F>
inline constexpr bool is_complex<std::complex<F>> = true;
template <class T>
inline constexpr bool is_character =
    std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> ||
    std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;
template <class T>
inline constexpr bool is_integer =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !is_character<T>;

template <class T>
std::string type_name() {
  return std::string(oneside::basic_type_name(oneside::basic_type_v<T>));
}

// --- The reference: one element of each op, written from the spec's definitions. -------

// Integers wrap: computed in unsigned long long, then reduced modulo 2^bits by the
// (well-defined since C++20) conversion back to T.
template <class T>
T wrapped(unsigned long long v) {
  return static_cast<T>(v);
}
template <class T>
unsigned long long as_ull(T v) {
  return static_cast<unsigned long long>(v);
}

template <class T>
T reference(op o, T a, T b) {
  if (o == op::replace) return b;
  if (o == op::no_op) return a;
  if constexpr (is_pair<T>) {
    // MPI §5.9.4: w = min(u, v); k = i if u < v, min(i, j) if u == v, j if u > v. Values that
    // are neither (NaN) keep the left pair.
    const bool left_better = o == op::minloc ? a.value < b.value : b.value < a.value;
    const bool right_better = o == op::minloc ? b.value < a.value : a.value < b.value;
    if (left_better) return a;
    if (right_better) return b;
    if (a.value == b.value) return T{a.value, std::min(a.index, b.index)};
    return a;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (o == op::land) return a && b;
    if (o == op::lor) return a || b;
    if (o == op::lxor) return a != b;
  } else if constexpr (std::is_same_v<T, std::byte>) {
    if (o == op::band) return a & b;
    if (o == op::bor) return a | b;
    if (o == op::bxor) return a ^ b;
  } else if constexpr (is_complex<T>) {
    if (o == op::sum) return a + b;
    if (o == op::prod) return a * b;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (o == op::sum) return a + b;
    if (o == op::prod) return a * b;
    if (o == op::min) return std::min(a, b);  // std::min keeps `a` unless b < a
    if (o == op::max) return std::max(a, b);  // std::max keeps `a` unless a < b
  } else if constexpr (is_integer<T>) {
    const bool ta = a != 0;
    const bool tb = b != 0;
    switch (o) {
      case op::sum:
        return wrapped<T>(as_ull(a) + as_ull(b));
      case op::prod:
        return wrapped<T>(as_ull(a) * as_ull(b));
      case op::min:
        return std::min(a, b);
      case op::max:
        return std::max(a, b);
      case op::land:
        return (ta && tb) ? T{1} : T{0};
      case op::lor:
        return (ta || tb) ? T{1} : T{0};
      case op::lxor:
        return (ta != tb) ? T{1} : T{0};
      case op::band:
        return wrapped<T>(as_ull(a) & as_ull(b));
      case op::bor:
        return wrapped<T>(as_ull(a) | as_ull(b));
      case op::bxor:
        return wrapped<T>(as_ull(a) ^ as_ull(b));
      default:
        break;
    }
  }
  ADD_FAILURE() << "no reference for " << oneside::op_name(o) << " on " << type_name<T>();
  return a;
}

// --- Test data and raw buffers. -------------------------------------------------------

// Values chosen so every op has work to do: integers are full-range bits (sums and
// products overflow) with a quarter zeros (for the logical ops); floating values are
// quarter steps in [-8, 8] (frequent ties for min/max) or wide uniform values; pair values
// come from a tiny range so ties are common.
template <class T>
T random_value(std::mt19937_64& rng) {
  if constexpr (std::is_same_v<T, bool>) {
    return (rng() & 1U) != 0;
  } else if constexpr (std::is_same_v<T, std::byte>) {
    return static_cast<std::byte>(rng() & 0xffU);
  } else if constexpr (is_pair<T>) {
    T v{};
    v.value = static_cast<decltype(v.value)>(static_cast<int>(rng() % 7) - 3);
    v.index = static_cast<int>(rng() % 40) - 5;
    return v;
  } else if constexpr (is_complex<T>) {
    using F = typename T::value_type;
    const F re = random_value<F>(rng);
    return T(re, random_value<F>(rng));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (rng() % 2 == 0) return static_cast<T>(static_cast<int>(rng() % 65) - 32) / T{4};
    return std::uniform_real_distribution<T>(T{-1000}, T{1000})(rng);
  } else {
    if (rng() % 4 == 0) return T{};
    return static_cast<T>(rng());
  }
}

// The data bytes of one element (everything but a pair's padding).
template <class T>
bool is_data_byte(std::size_t b) {
  if constexpr (is_pair<T>) {
    const std::size_t index_at = offsetof(T, index);
    return b < sizeof(T::value) || (b >= index_at && b < index_at + sizeof(int));
  } else {
    return b < sizeof(T);
  }
}

template <class T>
void put_element(unsigned char* p, const T& v) {
  if constexpr (is_pair<T>) {
    std::memcpy(p, &v.value, sizeof v.value);
    std::memcpy(p + offsetof(T, index), &v.index, sizeof v.index);
  } else if constexpr (std::is_same_v<T, bool>) {
    *p = v ? 1 : 0;
  } else {
    std::memcpy(p, &v, sizeof v);
  }
}

template <class T>
T get_element(const unsigned char* p) {
  if constexpr (is_pair<T>) {
    T v{};
    std::memcpy(&v.value, p, sizeof v.value);
    std::memcpy(&v.index, p + offsetof(T, index), sizeof v.index);
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    EXPECT_LE(*p, 1) << "a bool result must be the byte 0 or 1";
    return *p != 0;
  } else {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
}

template <class T>
bool same_value(const T& a, const T& b) {
  if constexpr (is_pair<T>) {
    return a.value == b.value && a.index == b.index;
  } else {
    return a == b;
  }
}

constexpr unsigned char filler = 0xAB;
constexpr std::size_t guard = 16;

// `count` elements of T as raw bytes starting `shift` bytes into a filler-initialised
// buffer, so misalignment, writes outside the array and writes to padding show.
template <class T>
class raw_array {
 public:
  raw_array(const std::vector<T>& values, std::size_t shift)
      : shift_(shift), bytes_(shift + values.size() * sizeof(T) + guard, filler) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      put_element<T>(data() + i * sizeof(T), static_cast<T>(values[i]));
    }
  }
  unsigned char* data() { return bytes_.data() + shift_; }
  T at(std::size_t i) { return get_element<T>(data() + i * sizeof(T)); }
  const std::vector<unsigned char>& bytes() const { return bytes_; }
  // True when every byte outside the elements' data still holds the filler.
  bool untouched_outside_data(std::size_t count) const {
    for (std::size_t b = 0; b < bytes_.size(); ++b) {
      const bool inside = b >= shift_ && b < shift_ + count * sizeof(T);
      if (inside && is_data_byte<T>((b - shift_) % sizeof(T))) continue;
      if (bytes_[b] != filler) return false;
    }
    return true;
  }

 private:
  std::size_t shift_;
  std::vector<unsigned char> bytes_;
};

// `baseline`: the kernel of the baseline instruction set instead of the one chosen at run time
// (which may be a vector variant: both must give the reference's results).
template <class T>
void check_against_reference(op o, std::size_t count, std::size_t shift, std::mt19937_64& rng,
                             bool baseline = false) {
  std::vector<T> left;
  std::vector<T> right;
  for (std::size_t i = 0; i < count; ++i) {
    left.push_back(random_value<T>(rng));
    right.push_back(random_value<T>(rng));
  }
  raw_array<T> inout(left, shift);
  raw_array<T> in(right, shift);
  const std::vector<unsigned char> in_before = in.bytes();

  if (baseline) {
    oneside::detail::baseline_reduce_function(o, oneside::basic_type_v<T>)(inout.data(), in.data(),
                                                                           count);
  } else {
    reduce_apply(o, oneside::basic_type_v<T>, inout.data(), in.data(), count);
  }

  int wrong = 0;
  for (std::size_t i = 0; i < count && wrong < 3; ++i) {
    const T want = reference(o, static_cast<T>(left[i]), static_cast<T>(right[i]));
    if (!same_value(inout.at(i), want)) {
      ADD_FAILURE() << oneside::op_name(o) << " on " << type_name<T>() << ": element " << i
                    << " of " << count << " (shift " << shift << ") differs from the reference";
      ++wrong;
    }
  }
  EXPECT_TRUE(inout.untouched_outside_data(count))
      << oneside::op_name(o) << " on " << type_name<T>() << " wrote outside the data bytes";
  EXPECT_EQ(in.bytes(), in_before)
      << oneside::op_name(o) << " on " << type_name<T>() << " modified its right operand";
}

// --- Every valid pair against the reference. -----------------------------------------

TEST(ReduceKernels, EveryValidPairMatchesTheReference) {
  oneside::test::covers("COM-11", "COM-13", "COM-14", "COM-15");
  std::mt19937_64 rng(20240611);
  int pairs = 0;
  for_each_type(all_types{}, [&]<class T>() {
    for (op o : all_ops) {
      if (!oneside::op_is_valid(o, oneside::basic_type_v<T>, op_use::get_accumulate)) continue;
      ++pairs;
      for (std::size_t count : {0U, 1U, 7U, 64U, 1000U}) {
        for (std::size_t shift : {0U, 1U}) check_against_reference<T>(o, count, shift, rng);
      }
    }
  });
  // 10 integer types × 12, 3 floating × 6, 3 complex × 4, bool 5, byte 5, 5 characters × 2,
  // 6 pairs × 4.
  EXPECT_EQ(pairs, 194);
}

TEST(ReduceKernels, BaselineKernelsMatchTheReferenceToo) {
  // reduce_function may pick vector kernels for this CPU; the baseline ones run elsewhere.
  std::mt19937_64 rng(20261121);
  for_each_type(all_types{}, [&]<class T>() {
    for (op o : all_ops) {
      if (!oneside::op_is_valid(o, oneside::basic_type_v<T>, op_use::get_accumulate)) continue;
      for (std::size_t count : {1U, 7U, 1000U}) check_against_reference<T>(o, count, 1, rng, true);
    }
  });
}

TEST(ReduceKernels, FunctionIsNullExactlyForInvalidPairs) {
  oneside::test::covers("COM-13");
  int invalid = 0;
  for (std::size_t t = 0; t < oneside::basic_type_count; ++t) {
    const auto bt = static_cast<basic_type>(t);
    for (op o : all_ops) {
      const bool valid = oneside::op_is_valid(o, bt, op_use::get_accumulate);
      EXPECT_EQ(reduce_function(o, bt) != nullptr, valid)
          << oneside::op_name(o) << " on " << oneside::basic_type_name(bt);
      if (!valid) ++invalid;
    }
  }
  EXPECT_EQ(invalid, 29 * 14 - 194);
  EXPECT_EQ(reduce_function(op::band, basic_type::double_), nullptr);
  EXPECT_EQ(reduce_function(op::sum, basic_type::character), nullptr);
  EXPECT_EQ(reduce_function(op::sum, basic_type::count_), nullptr);
  EXPECT_EQ(reduce_function(static_cast<op>(14), basic_type::int_), nullptr);
  EXPECT_EQ(reduce_function(static_cast<op>(255), basic_type::int_), nullptr);
}

// --- Special cases. -------------------------------------------------------------------

template <class T>
T apply1(op o, T left, T right) {
  reduce_apply(o, oneside::basic_type_v<T>, &left, &right, 1);
  return left;
}

// Signed overflow must wrap without undefined behaviour (run under -fsanitize=undefined),
// including the short and char cases where the operands promote to int.
TEST(ReduceKernels, SignedOverflowWraps) {
  constexpr int imax = std::numeric_limits<int>::max();
  constexpr int imin = std::numeric_limits<int>::min();
  EXPECT_EQ(apply1(op::sum, imax, 1), imin);
  EXPECT_EQ(apply1(op::sum, imin, -1), imax);
  EXPECT_EQ(apply1(op::prod, imax, 2), -2);
  EXPECT_EQ(apply1(op::prod, imin, -1), imin);
  EXPECT_EQ(apply1(op::sum, std::numeric_limits<long>::max(), 1L),
            std::numeric_limits<long>::min());
  EXPECT_EQ(apply1(op::prod, std::numeric_limits<long long>::min(), -1LL),
            std::numeric_limits<long long>::min());
  EXPECT_EQ(apply1<short>(op::sum, SHRT_MAX, 1), SHRT_MIN);
  EXPECT_EQ(apply1<short>(op::prod, SHRT_MAX, SHRT_MAX), 1);  // 32767² = 16383·2^16 + 1
  EXPECT_EQ(apply1<signed char>(op::prod, SCHAR_MAX, SCHAR_MAX), 1);
  EXPECT_EQ(apply1<signed char>(op::sum, SCHAR_MIN, -1), SCHAR_MAX);
  // unsigned short × unsigned short promotes to int: 65535² overflows int if done naively.
  EXPECT_EQ(apply1<unsigned short>(op::prod, USHRT_MAX, USHRT_MAX), 1);
  EXPECT_EQ(apply1<unsigned>(op::sum, UINT_MAX, 1U), 0U);
  EXPECT_EQ(apply1<unsigned long long>(op::prod, ULLONG_MAX, ULLONG_MAX), 1ULL);

  // The same in long arrays, so the vectorized loop bodies are exercised too.
  std::vector<int> a(1000, imax);
  std::vector<int> b(1000, imax);
  reduce_apply(op::sum, basic_type::int_, a.data(), b.data(), a.size());
  for (int v : a) ASSERT_EQ(v, -2);
  std::vector<short> s(1000, SHRT_MAX);
  std::vector<short> t(1000, SHRT_MAX);
  reduce_apply(op::prod, basic_type::short_int, s.data(), t.data(), s.size());
  for (short v : s) ASSERT_EQ(v, 1);
}

template <class V>
void check_loc_ties() {
  SCOPED_TRACE(type_name<value_index<V>>());
  using P = value_index<V>;
  const P low3{V(5), 3};
  const P low1{V(5), 1};
  for (op o : {op::minloc, op::maxloc}) {
    EXPECT_TRUE(same_value(apply1(o, low3, low1), P{V(5), 1})) << oneside::op_name(o);
    EXPECT_TRUE(same_value(apply1(o, low1, low3), P{V(5), 1})) << oneside::op_name(o);
    EXPECT_TRUE(same_value(apply1(o, P{V(5), -4}, P{V(5), 2}), P{V(5), -4}));
  }
  // Different values: the index comes with the winning value, however large it is.
  EXPECT_TRUE(same_value(apply1(op::minloc, P{V(2), 9}, P{V(7), 0}), P{V(2), 9}));
  EXPECT_TRUE(same_value(apply1(op::minloc, P{V(7), 0}, P{V(2), 9}), P{V(2), 9}));
  EXPECT_TRUE(same_value(apply1(op::maxloc, P{V(2), 0}, P{V(7), 9}), P{V(7), 9}));
  EXPECT_TRUE(same_value(apply1(op::maxloc, P{V(7), 9}, P{V(2), 0}), P{V(7), 9}));

  // The checklist's example: MAXLOC of (r % 2, r) over four ranks is (1, 1), whichever order
  // the partial results are combined in.
  P forward{V(0), 0};
  for (int r = 1; r < 4; ++r) forward = apply1(op::maxloc, forward, P{V(r % 2), r});
  EXPECT_TRUE(same_value(forward, P{V(1), 1}));
  P backward{V(1), 3};
  for (int r = 2; r >= 0; --r) backward = apply1(op::maxloc, backward, P{V(r % 2), r});
  EXPECT_TRUE(same_value(backward, P{V(1), 1}));
}

TEST(ReduceKernels, MinlocMaxlocTiesTakeTheSmallerIndex) {
  oneside::test::covers("COM-13");
  check_loc_ties<float>();
  check_loc_ties<double>();
  check_loc_ties<long>();
  check_loc_ties<int>();
  check_loc_ties<short>();
  check_loc_ties<long double>();
}

TEST(ReduceKernels, LogicalOpsGiveZeroOrOne) {
  EXPECT_EQ(apply1(op::land, 5, -3), 1);
  EXPECT_EQ(apply1(op::land, 5, 0), 0);
  EXPECT_EQ(apply1(op::lor, 0, 7), 1);
  EXPECT_EQ(apply1(op::lor, 0, 0), 0);
  EXPECT_EQ(apply1(op::lxor, 4, 9), 0);
  EXPECT_EQ(apply1(op::lxor, 0, -1), 1);
  // Not bitwise: 0x80 and 0x01 share no bit but are both true.
  EXPECT_EQ(apply1<unsigned char>(op::land, 0x80, 0x01), 1);
  EXPECT_EQ(apply1<unsigned long long>(op::lor, 1ULL << 63, 0), 1U);
}

TEST(ReduceKernels, BoolReadsAnyNonzeroByteAsTrue) {
  // A bool that arrived over the wire as the byte 2: read as a byte, it is "true".
  unsigned char left[3] = {2, 2, 2};
  const unsigned char right[3] = {1, 1, 0};
  reduce_apply(op::land, basic_type::boolean, left, right, 3);
  EXPECT_EQ(left[0], 1);
  EXPECT_EQ(left[1], 1);
  EXPECT_EQ(left[2], 0);
  unsigned char x[2] = {2, 0};
  const unsigned char y[2] = {1, 3};
  reduce_apply(op::lxor, basic_type::boolean, x, y, 2);
  EXPECT_EQ(x[0], 0);
  EXPECT_EQ(x[1], 1);
}

TEST(ReduceKernels, LxorOnBoolArraysIsParity) {
  oneside::test::covers("COM-13");
  // Five "ranks" each contribute rank-dependent bits; the fold is the parity of each column.
  constexpr std::size_t n = 100;
  bool acc[n] = {};
  int ones[n] = {};
  for (int r = 0; r < 5; ++r) {
    bool mine[n];
    for (std::size_t i = 0; i < n; ++i) {
      mine[i] = ((i * 7 + static_cast<std::size_t>(r) * 3) % 5) < 2;
      ones[i] += mine[i] ? 1 : 0;
    }
    reduce_apply(op::lxor, basic_type::boolean, acc, mine, n);
  }
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(acc[i], ones[i] % 2 == 1) << i;
}

TEST(ReduceKernels, ReplaceTakesTheRightAndNoOpKeepsTheLeft) {
  oneside::test::covers("COM-14", "COM-15");
  std::vector<double> a{1, 2, 3};
  const std::vector<double> b{4, 5, 6};
  reduce_apply(op::no_op, basic_type::double_, a.data(), b.data(), a.size());
  EXPECT_EQ(a, (std::vector<double>{1, 2, 3}));
  reduce_apply(op::replace, basic_type::double_, a.data(), b.data(), a.size());
  EXPECT_EQ(a, b);
  // no_op ignores the origin, which may be null (COM-15); count 0 touches nothing at all.
  reduce_apply(op::no_op, basic_type::double_, a.data(), nullptr, a.size());
  EXPECT_EQ(a, b);
  for (op o : all_ops) {
    if (oneside::op_is_valid(o, basic_type::int_, op_use::get_accumulate)) {
      reduce_apply(o, basic_type::int_, nullptr, nullptr, 0);
    }
  }
}

TEST(ReduceKernels, ComplexSumAndProduct) {
  EXPECT_EQ(apply1(op::prod, std::complex<float>(1, 2), std::complex<float>(3, 4)),
            std::complex<float>(-5, 10));
  EXPECT_EQ(apply1(op::prod, std::complex<double>(1, 2), std::complex<double>(3, 4)),
            std::complex<double>(-5, 10));
  EXPECT_EQ(apply1(op::prod, std::complex<long double>(0, 1), std::complex<long double>(0, 1)),
            std::complex<long double>(-1, 0));
  EXPECT_EQ(apply1(op::sum, std::complex<double>(1, 2), std::complex<double>(3, -4)),
            std::complex<double>(4, -2));
}

TEST(ReduceKernels, LongDoubleKeepsItsRangeAndPrecision) {
  if (std::numeric_limits<long double>::max_exponent10 <= 308) {
    GTEST_SKIP() << "long double is double here";
  }
  // 1e300² overflows double but not x87 extended precision.
  const long double big = apply1(op::prod, 1e300L, 1e300L);
  EXPECT_TRUE(std::isfinite(big));
  EXPECT_EQ(big, 1e300L * 1e300L);
  // 1 + 2^-60 is exact in a 64-bit mantissa, lost in double.
  const long double tiny = std::ldexp(1.0L, -60);
  EXPECT_EQ(apply1(op::sum, 1.0L, tiny) - 1.0L, tiny);
  EXPECT_EQ(apply1(op::max, 1.0L, 1.0L + tiny), 1.0L + tiny);
}

TEST(ReduceKernels, ByteBitwiseOps) {
  const std::byte a{0b1100};
  const std::byte b{0b1010};
  EXPECT_EQ(apply1(op::band, a, b), std::byte{0b1000});
  EXPECT_EQ(apply1(op::bor, a, b), std::byte{0b1110});
  EXPECT_EQ(apply1(op::bxor, a, b), std::byte{0b0110});
  EXPECT_EQ(apply1(op::bxor, std::byte{0xff}, std::byte{0x0f}), std::byte{0xf0});
}

// reduce.hpp: equal or unordered operands keep the left one. Checked in long arrays with
// NaNs on both sides at various positions, so vector and scalar paths are both covered.
template <class F>
void check_nan_and_zero_rules() {
  SCOPED_TRACE(type_name<F>());
  const F nan = std::numeric_limits<F>::quiet_NaN();
  constexpr std::size_t n = 67;
  for (op o : {op::min, op::max}) {
    std::vector<F> left(n);
    std::vector<F> right(n);
    for (std::size_t i = 0; i < n; ++i) {
      left[i] = i % 3 == 0 ? nan : static_cast<F>(i);
      right[i] = i % 5 == 0 ? nan : static_cast<F>(n - i);
    }
    const std::vector<F> l0 = left;
    reduce_apply(o, oneside::basic_type_v<F>, left.data(), right.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isnan(l0[i])) {
        EXPECT_TRUE(std::isnan(left[i])) << "a NaN on the left stays, element " << i;
      } else if (std::isnan(right[i])) {
        EXPECT_EQ(left[i], l0[i]) << "a NaN on the right is ignored, element " << i;
      } else {
        EXPECT_EQ(left[i], o == op::min ? std::min(l0[i], right[i]) : std::max(l0[i], right[i]));
      }
    }
  }
  const F pos = F{0};
  const F neg = -F{0};
  for (op o : {op::min, op::max}) {
    EXPECT_FALSE(std::signbit(apply1(o, pos, neg))) << "+0 on the left is kept";
    EXPECT_TRUE(std::signbit(apply1(o, neg, pos))) << "-0 on the left is kept";
  }
}

TEST(ReduceKernels, MinMaxKeepTheLeftOperandWhenEqualOrUnordered) {
  check_nan_and_zero_rules<float>();
  check_nan_and_zero_rules<double>();
  check_nan_and_zero_rules<long double>();
}

TEST(ReduceKernels, MinlocWithNanKeepsTheLeftPair) {
  using P = value_index<double>;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const P a = apply1(op::minloc, P{1.0, 4}, P{nan, 0});
  EXPECT_TRUE(same_value(a, P{1.0, 4}));
  const P b = apply1(op::maxloc, P{nan, 4}, P{1.0, 0});
  EXPECT_TRUE(std::isnan(b.value));
  EXPECT_EQ(b.index, 4);
}

TEST(ReduceKernels, ReduceApplyOnAnInvalidPairIsCaughtInDebugBuilds) {
  double a = 1;
  const double b = 2;
  EXPECT_DEBUG_DEATH(reduce_apply(op::band, basic_type::double_, &a, &b, 1), "internal assertion");
}

}  // namespace
