// The (op, basic type, use) validity matrix against a table written from the text of
// COM-13 … COM-15, and the names of the ops.
#include <algorithm>
#include <array>
#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/op.hpp>

#include "covers.hpp"

namespace {

using oneside::basic_type;
using oneside::op;
using oneside::op_use;

constexpr std::array all_ops{op::sum,    op::prod,   op::min,     op::max,  op::land,
                             op::lor,    op::lxor,   op::band,    op::bor,  op::bxor,
                             op::minloc, op::maxloc, op::replace, op::no_op};
// Written here, not taken from op_name, so the matrix does not depend on the code tested.
constexpr std::array<std::string_view, 14> op_names{"sum",    "prod",   "min",     "max",  "land",
                                                    "lor",    "lxor",   "band",    "bor",  "bxor",
                                                    "minloc", "maxloc", "replace", "no_op"};
constexpr std::array all_uses{op_use::collective, op_use::accumulate, op_use::get_accumulate};

// COM-13, row by row: the reduction ops (everything but replace and no_op) each basic type
// accepts. "sum prod min max land lor lxor band bor bxor" is C integer; floating point has
// no logical or bitwise ops; complex only sum and prod; bool only the logical ops; byte
// only the bitwise ops; characters nothing (MPI_CHAR is not a reduction type); the pair
// types only minloc and maxloc.
struct row {
  basic_type type;
  std::string_view reduction_ops;
};
constexpr std::string_view integer_ops = "sum prod min max land lor lxor band bor bxor";
constexpr std::array<row, 29> expectation{{
    {basic_type::boolean, "land lor lxor"},
    {basic_type::character, ""},
    {basic_type::wide_character, ""},
    {basic_type::char8, ""},
    {basic_type::char16, ""},
    {basic_type::char32, ""},
    {basic_type::signed_char, integer_ops},
    {basic_type::unsigned_char, integer_ops},
    {basic_type::short_int, integer_ops},
    {basic_type::unsigned_short, integer_ops},
    {basic_type::int_, integer_ops},
    {basic_type::unsigned_int, integer_ops},
    {basic_type::long_int, integer_ops},
    {basic_type::unsigned_long, integer_ops},
    {basic_type::long_long, integer_ops},
    {basic_type::unsigned_long_long, integer_ops},
    {basic_type::float_, "sum prod min max"},
    {basic_type::double_, "sum prod min max"},
    {basic_type::long_double, "sum prod min max"},
    {basic_type::complex_float, "sum prod"},
    {basic_type::complex_double, "sum prod"},
    {basic_type::complex_long_double, "sum prod"},
    {basic_type::byte, "band bor bxor"},
    {basic_type::float_int, "minloc maxloc"},
    {basic_type::double_int, "minloc maxloc"},
    {basic_type::long_int_pair, "minloc maxloc"},
    {basic_type::int_int, "minloc maxloc"},
    {basic_type::short_int_pair, "minloc maxloc"},
    {basic_type::long_double_int, "minloc maxloc"},
}};

bool listed(std::string_view ops, std::string_view name) {
  std::size_t at = 0;
  while (at <= ops.size()) {
    const std::size_t end = std::min(ops.find(' ', at), ops.size());
    if (ops.substr(at, end - at) == name) return true;
    at = end + 1;
  }
  return false;
}

// The expected verdict, from the table and from COM-14 (replace: accumulate family only)
// and COM-15 (no_op: get_accumulate and fetch_and_op only).
bool expected_valid(const row& r, op o, std::string_view name, op_use use) {
  if (o == op::replace) return use != op_use::collective;
  if (o == op::no_op) return use == op_use::get_accumulate;
  return listed(r.reduction_ops, name);
}

std::string_view use_name(op_use use) {
  switch (use) {
    case op_use::collective:
      return "collective";
    case op_use::accumulate:
      return "accumulate";
    case op_use::get_accumulate:
      return "get_accumulate";
  }
  return "?";
}

TEST(OpRules, ExpectationTableListsEveryBasicTypeOnce) {
  std::set<basic_type> seen;
  for (const row& r : expectation) EXPECT_TRUE(seen.insert(r.type).second);
  EXPECT_EQ(seen.size(), oneside::basic_type_count);
}

TEST(OpRules, FullMatrixMatchesTheSpec) {
  oneside::test::covers("COM-11", "COM-13", "COM-14", "COM-15", "COM-17");
  std::array<int, 3> valid_per_use{};
  for (const row& r : expectation) {
    for (std::size_t i = 0; i < all_ops.size(); ++i) {
      const op o = all_ops[i];
      for (op_use use : all_uses) {
        const bool want = expected_valid(r, o, op_names[i], use);
        EXPECT_EQ(oneside::op_is_valid(o, r.type, use), want)
            << oneside::op_name(o) << " on " << oneside::basic_type_name(r.type) << " in "
            << use_name(use);
        if (want) ++valid_per_use[static_cast<std::size_t>(use)];
      }
    }
  }
  // Counted by hand from COM-13: 10 integer types × 10 ops, 3 floating × 4, 3 complex × 2,
  // bool 3, byte 3, 6 pairs × 2 = 136 reduction pairs; replace adds 29 in the accumulate
  // uses and no_op 29 more in get_accumulate.
  EXPECT_EQ(valid_per_use[0], 136);
  EXPECT_EQ(valid_per_use[1], 136 + 29);
  EXPECT_EQ(valid_per_use[2], 136 + 29 + 29);
}

// The examples the checklist names explicitly.
TEST(OpRules, ChecklistExamples) {
  oneside::test::covers("COM-13", "COM-14", "COM-15");
  EXPECT_FALSE(oneside::op_is_valid(op::band, basic_type::double_, op_use::accumulate));
  EXPECT_FALSE(oneside::op_is_valid(op::sum, basic_type::character, op_use::collective));
  EXPECT_TRUE(oneside::op_is_valid(op::sum, basic_type::signed_char, op_use::collective));
  EXPECT_TRUE(oneside::op_is_valid(op::sum, basic_type::unsigned_char, op_use::collective));
  EXPECT_TRUE(oneside::op_is_valid(op::maxloc, basic_type::double_int, op_use::accumulate));
  EXPECT_FALSE(oneside::op_is_valid(op::maxloc, basic_type::double_, op_use::accumulate));
  EXPECT_TRUE(oneside::op_is_valid(op::lxor, basic_type::boolean, op_use::collective));
  EXPECT_FALSE(oneside::op_is_valid(op::sum, basic_type::boolean, op_use::collective));
  EXPECT_TRUE(oneside::op_is_valid(op::bxor, basic_type::byte, op_use::collective));
  EXPECT_FALSE(oneside::op_is_valid(op::min, basic_type::complex_double, op_use::collective));
  EXPECT_FALSE(oneside::op_is_valid(op::replace, basic_type::int_, op_use::collective));
  EXPECT_TRUE(oneside::op_is_valid(op::replace, basic_type::int_, op_use::accumulate));
  EXPECT_FALSE(oneside::op_is_valid(op::no_op, basic_type::int_, op_use::collective));
  EXPECT_FALSE(oneside::op_is_valid(op::no_op, basic_type::int_, op_use::accumulate));
  EXPECT_TRUE(oneside::op_is_valid(op::no_op, basic_type::int_, op_use::get_accumulate));
  EXPECT_TRUE(oneside::op_is_valid(op::replace, basic_type::char32, op_use::accumulate));
  EXPECT_TRUE(oneside::op_is_valid(op::no_op, basic_type::long_double_int, op_use::get_accumulate));
}

TEST(OpRules, ValuesOutsideTheEnumsAreInvalid) {
  for (op o : all_ops) {
    for (op_use use : all_uses) {
      EXPECT_FALSE(oneside::op_is_valid(o, basic_type::count_, use)) << oneside::op_name(o);
      EXPECT_FALSE(oneside::op_is_valid(o, static_cast<basic_type>(200), use));
    }
    EXPECT_FALSE(oneside::op_is_valid(o, basic_type::int_, static_cast<op_use>(7)));
  }
  EXPECT_FALSE(oneside::op_is_valid(static_cast<op>(14), basic_type::int_, op_use::get_accumulate));
  EXPECT_FALSE(
      oneside::op_is_valid(static_cast<op>(255), basic_type::int_, op_use::get_accumulate));
}

TEST(OpNames, EveryOpHasItsName) {
  for (std::size_t i = 0; i < all_ops.size(); ++i) {
    EXPECT_EQ(oneside::op_name(all_ops[i]), op_names[i]);
  }
  EXPECT_FALSE(oneside::op_name(static_cast<op>(99)).empty());
}

}  // namespace
