// Predefined datatypes: size, bounds, extent, name and layout of every basic type against
// the C++ type it stands for, and the behaviour of datatype handles.
#include <complex>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/runtime/datatype.hpp>

#include "runtime/datatype_impl.hpp"

namespace {

using oneside::basic_type;
using oneside::datatype;
using oneside::value_index;
namespace detail = oneside::detail;

template <class T>
inline constexpr bool is_pair = false;
template <class V>
inline constexpr bool is_pair<value_index<V>> = true;

// What the test expects of the predefined type of T, written from the C++ type itself:
// pairs count their value and index as data (as MPI_Type_size does), everything else its
// whole object.
template <class T>
std::vector<detail::byte_run> expected_runs() {
  if constexpr (is_pair<T>) {
    const std::size_t value_bytes = sizeof(T::value);
    const std::size_t index_at = offsetof(T, index);
    if (index_at == value_bytes) return {{0, value_bytes + sizeof(int)}};
    return {{0, value_bytes}, {static_cast<std::ptrdiff_t>(index_at), sizeof(int)}};
  } else {
    return {{0, sizeof(T)}};
  }
}

template <class T>
void check_predefined(basic_type expected, std::string_view expected_name) {
  SCOPED_TRACE(std::string(expected_name));
  const datatype& d = datatype::of<T>();
  std::size_t data_bytes = sizeof(T);
  if constexpr (is_pair<T>) data_bytes = sizeof(T::value) + sizeof(int);
  const std::vector<detail::byte_run> runs = expected_runs<T>();
  const std::ptrdiff_t data_end =
      runs.back().offset + static_cast<std::ptrdiff_t>(runs.back().length);

  EXPECT_EQ(oneside::basic_type_v<T>, expected);
  EXPECT_EQ(d.basic(), expected);
  EXPECT_TRUE(d == datatype::predefined(expected));
  EXPECT_EQ(&d, &datatype::predefined(expected)) << "predefined handles are one object each";
  EXPECT_EQ(&d, &datatype::of<const T>());
  EXPECT_EQ(&d, &datatype::of<const volatile T>());

  EXPECT_EQ(d.size(), data_bytes);
  EXPECT_EQ(oneside::basic_type_size(expected), data_bytes);
  EXPECT_EQ(d.lb(), 0);
  EXPECT_EQ(d.extent(), static_cast<std::ptrdiff_t>(sizeof(T)));
  EXPECT_EQ(detail::basic_type_extent(expected), sizeof(T));
  EXPECT_EQ(d.true_lb(), 0);
  EXPECT_EQ(d.true_extent(), data_end);
  EXPECT_TRUE(d.is_predefined());
  EXPECT_EQ(d.is_contiguous(), data_bytes == sizeof(T));
  EXPECT_EQ(d.name(), expected_name);
  EXPECT_EQ(oneside::basic_type_name(expected), expected_name);

  const detail::datatype_impl& impl = d.impl();
  EXPECT_EQ(impl.combiner, detail::type_combiner::predefined);
  EXPECT_TRUE(impl.is_predefined());
  EXPECT_FALSE(impl.is_mixed());
  EXPECT_EQ(impl.basic, expected);
  EXPECT_EQ(impl.alignment, alignof(T));
  EXPECT_EQ(detail::basic_type_alignment(expected), alignof(T));
  EXPECT_EQ(d.basic_count(), 1U);
  EXPECT_FALSE(d.is_mixed());
  EXPECT_FALSE(impl.explicit_bounds);
  EXPECT_EQ(impl.element_runs, (std::vector<detail::element_run>{{0, 1}}));
  EXPECT_TRUE(impl.args.empty());
  EXPECT_TRUE(impl.children.empty());
  if constexpr (is_pair<T>) {
    EXPECT_TRUE(detail::is_pair_type(expected));
    EXPECT_EQ(detail::pair_value_type(expected), oneside::basic_type_v<decltype(T::value)>);
  } else {
    EXPECT_FALSE(detail::is_pair_type(expected));
    EXPECT_EQ(detail::pair_value_type(expected), expected);
  }
  EXPECT_EQ(impl.runs, runs);
  EXPECT_EQ(impl.signature, (std::vector<detail::signature_run>{{expected, 1}}));
  EXPECT_EQ(impl.basic_count, 1U);
  std::size_t run_bytes = 0;
  for (const detail::byte_run& r : impl.runs) run_bytes += r.length;
  EXPECT_EQ(run_bytes, d.size());
}

// Every basic type once, with its name; returns the basic types checked.
std::set<basic_type> check_every_predefined() {
  std::set<basic_type> seen;
  auto check = [&]<class T>(basic_type t, std::string_view name) {
    check_predefined<T>(t, name);
    EXPECT_TRUE(seen.insert(t).second) << name << " listed twice";
  };
  // clang-format off
  check.operator()<bool>(basic_type::boolean, "bool");
  check.operator()<char>(basic_type::character, "char");
  check.operator()<wchar_t>(basic_type::wide_character, "wchar_t");
  check.operator()<char8_t>(basic_type::char8, "char8_t");
  check.operator()<char16_t>(basic_type::char16, "char16_t");
  check.operator()<char32_t>(basic_type::char32, "char32_t");
  check.operator()<signed char>(basic_type::signed_char, "signed char");
  check.operator()<unsigned char>(basic_type::unsigned_char, "unsigned char");
  check.operator()<short>(basic_type::short_int, "short");
  check.operator()<unsigned short>(basic_type::unsigned_short, "unsigned short");
  check.operator()<int>(basic_type::int_, "int");
  check.operator()<unsigned>(basic_type::unsigned_int, "unsigned int");
  check.operator()<long>(basic_type::long_int, "long");
  check.operator()<unsigned long>(basic_type::unsigned_long, "unsigned long");
  check.operator()<long long>(basic_type::long_long, "long long");
  check.operator()<unsigned long long>(basic_type::unsigned_long_long, "unsigned long long");
  check.operator()<float>(basic_type::float_, "float");
  check.operator()<double>(basic_type::double_, "double");
  check.operator()<long double>(basic_type::long_double, "long double");
  check.operator()<std::complex<float>>(basic_type::complex_float, "std::complex<float>");
  check.operator()<std::complex<double>>(basic_type::complex_double, "std::complex<double>");
  check.operator()<std::complex<long double>>(basic_type::complex_long_double, "std::complex<long double>");
  check.operator()<std::byte>(basic_type::byte, "std::byte");
  check.operator()<value_index<float>>(basic_type::float_int, "value_index<float>");
  check.operator()<value_index<double>>(basic_type::double_int, "value_index<double>");
  check.operator()<value_index<long>>(basic_type::long_int_pair, "value_index<long>");
  check.operator()<value_index<int>>(basic_type::int_int, "value_index<int>");
  check.operator()<value_index<short>>(basic_type::short_int_pair, "value_index<short>");
  check.operator()<value_index<long double>>(basic_type::long_double_int, "value_index<long double>");
  // clang-format on
  return seen;
}

TEST(PredefinedDatatype, EveryBasicTypeMatchesItsCppType) {
  const std::set<basic_type> seen = check_every_predefined();
  EXPECT_EQ(seen.size(), oneside::basic_type_count) << "a basic type has no check";
}

TEST(PredefinedDatatype, PredefinedByEnumCoversEveryIndex) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < oneside::basic_type_count; ++i) {
    const auto t = static_cast<basic_type>(i);
    const datatype& d = datatype::predefined(t);
    EXPECT_EQ(d.basic(), t);
    EXPECT_GT(d.size(), 0U);
    EXPECT_TRUE(names.insert(d.name()).second) << d.name();
  }
}

// The MPI numbers the pair types are modelled on (MPI_DOUBLE_INT has size 12 and extent 16
// on LP64), spelled out so a change of the size convention is noticed.
TEST(PredefinedDatatype, PairSizesFollowMpiOnLp64) {
  if (sizeof(long) != 8 || sizeof(long double) != 16 || alignof(double) != 8) {
    GTEST_SKIP() << "the literal figures below are for x86-64 Linux";
  }
  EXPECT_EQ(datatype::of<value_index<float>>().size(), 8U);
  EXPECT_EQ(datatype::of<value_index<float>>().extent(), 8);
  EXPECT_TRUE(datatype::of<value_index<float>>().is_contiguous());
  EXPECT_EQ(datatype::of<value_index<int>>().size(), 8U);
  EXPECT_TRUE(datatype::of<value_index<int>>().is_contiguous());
  EXPECT_EQ(datatype::of<value_index<double>>().size(), 12U);
  EXPECT_EQ(datatype::of<value_index<double>>().extent(), 16);
  EXPECT_EQ(datatype::of<value_index<double>>().true_extent(), 12);
  EXPECT_FALSE(datatype::of<value_index<double>>().is_contiguous());
  EXPECT_EQ(datatype::of<value_index<long>>().size(), 12U);
  EXPECT_EQ(datatype::of<value_index<long>>().extent(), 16);
  EXPECT_EQ(datatype::of<value_index<short>>().size(), 6U);
  EXPECT_EQ(datatype::of<value_index<short>>().extent(), 8);
  EXPECT_EQ(datatype::of<value_index<short>>().true_extent(), 8);
  EXPECT_EQ(datatype::of<value_index<short>>().impl().runs,
            (std::vector<detail::byte_run>{{0, 2}, {4, 4}}));
  EXPECT_EQ(datatype::of<value_index<long double>>().size(), 20U);
  EXPECT_EQ(datatype::of<value_index<long double>>().extent(), 32);
  EXPECT_EQ(datatype::of<value_index<long double>>().true_extent(), 20);
  EXPECT_EQ(datatype::of<long double>().size(), 16U);
  EXPECT_EQ(datatype::of<std::complex<float>>().size(), 8U);
  EXPECT_EQ(datatype::of<std::complex<long double>>().size(), 32U);
}

TEST(PredefinedDatatype, FixedWidthAliasesAreTheirUnderlyingTypes) {
  EXPECT_TRUE(datatype::of<std::int32_t>() == datatype::of<int>());
  EXPECT_TRUE(datatype::of<std::uint32_t>() == datatype::of<unsigned>());
  EXPECT_TRUE(datatype::of<std::int8_t>() == datatype::of<signed char>());
  EXPECT_TRUE(datatype::of<std::uint8_t>() == datatype::of<unsigned char>());
  EXPECT_TRUE(datatype::of<std::int16_t>() == datatype::of<short>());
  // LP64 Linux: int64_t is long, not long long.
  EXPECT_TRUE(datatype::of<std::int64_t>() == datatype::of<long>());
  EXPECT_EQ(datatype::of<std::int64_t>().size(), 8U);
  EXPECT_EQ(datatype::of<std::size_t>().size(), sizeof(std::size_t));
  EXPECT_EQ(datatype::of<std::ptrdiff_t>().size(), sizeof(std::ptrdiff_t));
}

TEST(PredefinedDatatype, CharIsDistinctFromSignedAndUnsignedChar) {
  EXPECT_FALSE(datatype::of<char>() == datatype::of<signed char>());
  EXPECT_FALSE(datatype::of<char>() == datatype::of<unsigned char>());
  EXPECT_FALSE(datatype::of<char8_t>() == datatype::of<unsigned char>());
  EXPECT_FALSE(datatype::of<std::byte>() == datatype::of<unsigned char>());
  EXPECT_FALSE(datatype::of<long>() == datatype::of<long long>());
}

TEST(DatatypeHandle, CopiesCompareEqualAndShareTheDescription) {
  const datatype a = datatype::of<double>();
  const datatype b = a;
  datatype c = datatype::of<int>();
  EXPECT_TRUE(a == b);
  EXPECT_EQ(&a.impl(), &b.impl());
  EXPECT_FALSE(a == c);
  c = a;
  EXPECT_TRUE(c == a);
  const datatype moved = std::move(c);
  EXPECT_TRUE(moved == a);
  EXPECT_EQ(moved.name(), "double");
}

TEST(DatatypeHandle, HandlesOutliveTheirCopiesInContainers) {
  std::vector<datatype> v;
  for (std::size_t i = 0; i < oneside::basic_type_count; ++i) {
    v.push_back(datatype::predefined(static_cast<basic_type>(i)));
  }
  std::vector<datatype> w = v;
  v.clear();
  for (std::size_t i = 0; i < w.size(); ++i) {
    EXPECT_TRUE(w[i] == datatype::predefined(static_cast<basic_type>(i)));
  }
}

// The table is built on first use; concurrent first uses must agree on one object.
TEST(DatatypeHandle, ConcurrentLookupsSeeTheSameObjects) {
  constexpr int threads = 4;
  std::vector<const datatype*> seen(threads, nullptr);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&seen, i] { seen[static_cast<std::size_t>(i)] = &datatype::of<float>(); });
  }
  for (std::thread& t : pool) t.join();
  for (const datatype* p : seen) EXPECT_EQ(p, &datatype::of<float>());
}

TEST(BasicType, OutOfRangeValuesHaveNoSizeAndAName) {
  EXPECT_EQ(oneside::basic_type_size(basic_type::count_), 0U);
  EXPECT_EQ(detail::basic_type_extent(basic_type::count_), 0U);
  EXPECT_EQ(detail::basic_type_alignment(basic_type::count_), 0U);
  EXPECT_FALSE(detail::is_pair_type(basic_type::count_));
  EXPECT_FALSE(oneside::basic_type_name(basic_type::count_).empty());
}

}  // namespace
