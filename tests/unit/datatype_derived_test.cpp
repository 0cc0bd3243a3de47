// Derived datatypes against values computed by hand from MPI's definitions (MPI 4.1 §5.1):
// size, bounds, extent, true bounds, basic count, contiguity, mixedness, byte runs and
// element runs of every constructor, nested types, markers, the struct padding rule,
// subarrays in both orders, zero-count types, names, and the errors of bad arguments.
// The figures assume x86-64 Linux (int 4, short 2, double 8 bytes).
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
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
using runs = std::vector<oneside::detail::byte_run>;
using elems = std::vector<oneside::detail::element_run>;
using counts = std::vector<count_t>;
using disps = std::vector<std::ptrdiff_t>;
namespace detail = oneside::detail;

const datatype& int_t = datatype::of<int>();
const datatype& double_t = datatype::of<double>();
const datatype& char_t = datatype::of<char>();
const datatype& short_t = datatype::of<short>();

struct layout {
  std::size_t size;
  std::ptrdiff_t lb;
  std::ptrdiff_t extent;
  std::ptrdiff_t true_lb;
  std::ptrdiff_t true_extent;
  std::size_t basic_count;
  bool contiguous;
  runs byte_runs;
  elems element_runs = {};  // ignored for mixed types
};

// Checks every property of `t` against `e`; mixedness is what `e.element_runs` being
// meaningful says: pass mixed = true for struct-of-different-types.
void expect_layout(const datatype& t, const layout& e, bool mixed = false) {
  SCOPED_TRACE(std::string(t.name()));
  EXPECT_EQ(t.size(), e.size);
  EXPECT_EQ(t.lb(), e.lb);
  EXPECT_EQ(t.extent(), e.extent);
  EXPECT_EQ(t.true_lb(), e.true_lb);
  EXPECT_EQ(t.true_extent(), e.true_extent);
  EXPECT_EQ(t.basic_count(), e.basic_count);
  EXPECT_EQ(t.is_contiguous(), e.contiguous);
  EXPECT_EQ(t.is_mixed(), mixed);
  EXPECT_FALSE(t.is_predefined());
  EXPECT_EQ(t.impl().runs, e.byte_runs);
  std::size_t bytes = 0;
  for (const auto& r : t.impl().runs) bytes += r.length;
  EXPECT_EQ(bytes, t.size()) << "runs must add up to size";
  if (mixed) {
    EXPECT_EQ(t.basic(), basic_type::count_);
    EXPECT_TRUE(t.impl().element_runs.empty());
  } else {
    EXPECT_EQ(t.impl().element_runs, e.element_runs);
    std::size_t n = 0;
    for (const auto& r : t.impl().element_runs) n += r.count;
    EXPECT_EQ(n, t.basic_count());
  }
}

void expect_error(const std::function<void()>& f, error_class ec) {
  try {
    f();
    ADD_FAILURE() << "no error raised";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), ec) << e.what();
  }
}

class DerivedDatatype : public ::testing::Test {
 protected:
  void SetUp() override {
    if (sizeof(int) != 4 || sizeof(short) != 2 || sizeof(double) != 8 || alignof(double) != 8 ||
        sizeof(value_index<double>) != 16) {
      GTEST_SKIP() << "the figures below are for x86-64 Linux";
    }
  }
};

TEST_F(DerivedDatatype, Contiguous) {
  const datatype t = datatype::contiguous(4, int_t);
  expect_layout(t, {.size = 16,
                    .lb = 0,
                    .extent = 16,
                    .true_lb = 0,
                    .true_extent = 16,
                    .basic_count = 4,
                    .contiguous = true,
                    .byte_runs = {{0, 16}},
                    .element_runs = {{0, 4}}});
  EXPECT_EQ(t.basic(), basic_type::int_);
  EXPECT_EQ(t.name(), "contiguous(4,int)");
  EXPECT_EQ(t.impl().signature, (std::vector<detail::signature_run>{{basic_type::int_, 4}}));
}

TEST_F(DerivedDatatype, VectorOfInts) {
  covers("COM-6");
  // 3 blocks of 2 ints, block starts 5 ints apart: bytes [0,8) [20,28) [40,48).
  const datatype t = datatype::vector(3, 2, 5, int_t);
  expect_layout(t, {.size = 24,
                    .lb = 0,
                    .extent = 48,
                    .true_lb = 0,
                    .true_extent = 48,
                    .basic_count = 6,
                    .contiguous = false,
                    .byte_runs = {{0, 8}, {20, 8}, {40, 8}},
                    .element_runs = {{0, 2}, {20, 2}, {40, 2}}});
  EXPECT_EQ(t.name(), "vector(3,2,5,int)");
  // The COM-6 target: 3 blocks of 4 ints, stride 8.
  const datatype v = datatype::vector(3, 4, 8, int_t);
  expect_layout(v, {.size = 48,
                    .lb = 0,
                    .extent = 80,
                    .true_lb = 0,
                    .true_extent = 80,
                    .basic_count = 12,
                    .contiguous = false,
                    .byte_runs = {{0, 16}, {32, 16}, {64, 16}},
                    .element_runs = {{0, 4}, {32, 4}, {64, 4}}});
}

TEST_F(DerivedDatatype, VectorWithNegativeAndGaplessStrides) {
  // Blocks at 0, -16, -32: lb moves below 0.
  const datatype neg = datatype::vector(3, 1, -2, double_t);
  expect_layout(neg, {.size = 24,
                      .lb = -32,
                      .extent = 40,
                      .true_lb = -32,
                      .true_extent = 40,
                      .basic_count = 3,
                      .contiguous = false,
                      .byte_runs = {{0, 8}, {-16, 8}, {-32, 8}},
                      .element_runs = {{0, 1}, {-16, 1}, {-32, 1}}});
  // stride == blocklength: one run, contiguous.
  const datatype gapless = datatype::vector(4, 3, 3, int_t);
  expect_layout(gapless, {.size = 48,
                          .lb = 0,
                          .extent = 48,
                          .true_lb = 0,
                          .true_extent = 48,
                          .basic_count = 12,
                          .contiguous = true,
                          .byte_runs = {{0, 48}},
                          .element_runs = {{0, 12}}});
  // stride 0: every block at 0 (overlapping entries are legal in a type).
  const datatype zero = datatype::vector(3, 1, 0, int_t);
  expect_layout(zero, {.size = 12,
                       .lb = 0,
                       .extent = 4,
                       .true_lb = 0,
                       .true_extent = 4,
                       .basic_count = 3,
                       .contiguous = false,
                       .byte_runs = {{0, 4}, {0, 4}, {0, 4}},
                       .element_runs = {{0, 1}, {0, 1}, {0, 1}}});
}

TEST_F(DerivedDatatype, Hvector) {
  const datatype t = datatype::hvector(2, 3, 20, short_t);
  expect_layout(t, {.size = 12,
                    .lb = 0,
                    .extent = 26,
                    .true_lb = 0,
                    .true_extent = 26,
                    .basic_count = 6,
                    .contiguous = false,
                    .byte_runs = {{0, 6}, {20, 6}},
                    .element_runs = {{0, 3}, {20, 3}}});
  EXPECT_EQ(t.name(), "hvector(2,3,20,short)");
  // Only struct pads to alignment (as MPI implementations do): a stride that is not a
  // multiple of alignof(int) leaves the extent at 10.
  const datatype odd = datatype::hvector(2, 1, 6, int_t);
  expect_layout(odd, {.size = 8,
                      .lb = 0,
                      .extent = 10,
                      .true_lb = 0,
                      .true_extent = 10,
                      .basic_count = 2,
                      .contiguous = false,
                      .byte_runs = {{0, 4}, {6, 4}},
                      .element_runs = {{0, 1}, {6, 1}}});
}

TEST_F(DerivedDatatype, IndexedKeepsTheTypemapOrder) {
  covers("COM-7");
  // Blocks [20,28) [0,4) [36,48) in the order given.
  const counts bl{2, 1, 3};
  const counts d{5, 0, 9};
  const datatype t = datatype::indexed(bl, d, int_t);
  expect_layout(t, {.size = 24,
                    .lb = 0,
                    .extent = 48,
                    .true_lb = 0,
                    .true_extent = 48,
                    .basic_count = 6,
                    .contiguous = false,
                    .byte_runs = {{20, 8}, {0, 4}, {36, 12}},
                    .element_runs = {{20, 2}, {0, 1}, {36, 3}}});
  EXPECT_EQ(t.name(), "indexed([2,1,3],[5,0,9],int)");
  // COM-7's example: displacements {5, 1, 9}.
  const counts ones{1, 1, 1};
  const counts d2{5, 1, 9};
  EXPECT_EQ(datatype::indexed(ones, d2, int_t).impl().runs, (runs{{20, 4}, {4, 4}, {36, 4}}));
}

TEST_F(DerivedDatatype, HindexedWithUnorderedBlocks) {
  // {16}, {0}, {8}: the last two touch in typemap order and in memory, so they merge; the
  // first does not merge with them although it is adjacent in memory.
  const counts bl{1, 1, 1};
  const disps d{16, 0, 8};
  const datatype t = datatype::hindexed(bl, d, double_t);
  expect_layout(t, {.size = 24,
                    .lb = 0,
                    .extent = 24,
                    .true_lb = 0,
                    .true_extent = 24,
                    .basic_count = 3,
                    .contiguous = false,
                    .byte_runs = {{16, 8}, {0, 16}},
                    .element_runs = {{16, 1}, {0, 2}}});
  EXPECT_EQ(t.name(), "hindexed([1,1,1],[16,0,8],double)");
  // Negative displacements.
  const counts bl2{1, 2};
  const disps d2{-12, 4};
  expect_layout(datatype::hindexed(bl2, d2, int_t), {.size = 12,
                                                     .lb = -12,
                                                     .extent = 24,
                                                     .true_lb = -12,
                                                     .true_extent = 24,
                                                     .basic_count = 3,
                                                     .contiguous = false,
                                                     .byte_runs = {{-12, 4}, {4, 8}},
                                                     .element_runs = {{-12, 1}, {4, 2}}});
}

TEST_F(DerivedDatatype, IndexedBlockAndHindexedBlock) {
  const counts d{4, 0};
  const datatype t = datatype::indexed_block(2, d, datatype::of<float>());
  expect_layout(t, {.size = 16,
                    .lb = 0,
                    .extent = 24,
                    .true_lb = 0,
                    .true_extent = 24,
                    .basic_count = 4,
                    .contiguous = false,
                    .byte_runs = {{16, 8}, {0, 8}},
                    .element_runs = {{16, 2}, {0, 2}}});
  EXPECT_EQ(t.name(), "indexed_block(2,[4,0],float)");
  const disps hd{-8, 4};
  const datatype h = datatype::hindexed_block(1, hd, int_t);
  expect_layout(h, {.size = 8,
                    .lb = -8,
                    .extent = 16,
                    .true_lb = -8,
                    .true_extent = 16,
                    .basic_count = 2,
                    .contiguous = false,
                    .byte_runs = {{-8, 4}, {4, 4}},
                    .element_runs = {{-8, 1}, {4, 1}}});
  EXPECT_EQ(h.name(), "hindexed_block(1,[-8,4],int)");
}

TEST_F(DerivedDatatype, StructOfIntAndDoubleIsMixed) {
  covers("COM-12");
  const counts bl{1, 1};
  const disps d{0, 8};
  const std::array<datatype, 2> types{int_t, double_t};
  const datatype t = datatype::structure(bl, d, types);
  expect_layout(t,
                {.size = 12,
                 .lb = 0,
                 .extent = 16,
                 .true_lb = 0,
                 .true_extent = 16,
                 .basic_count = 2,
                 .contiguous = false,
                 .byte_runs = {{0, 4}, {8, 8}}},
                /*mixed=*/true);
  EXPECT_EQ(t.impl().signature,
            (std::vector<detail::signature_run>{{basic_type::int_, 1}, {basic_type::double_, 1}}));
  EXPECT_EQ(t.impl().alignment, 8U);
  EXPECT_EQ(t.name(), "struct([1,1],[0,8],[int,double])");
}

TEST_F(DerivedDatatype, StructPadsItsExtentToTheStrictestAlignment) {
  // {double at 0, char at 8}: data ends at 9, the extent rounds up to 16 (MPI's epsilon),
  // just as sizeof(struct {double; char;}) does.
  const counts bl{1, 1};
  const disps d{0, 8};
  const std::array<datatype, 2> dc{double_t, char_t};
  const datatype t = datatype::structure(bl, d, dc);
  expect_layout(t,
                {.size = 9,
                 .lb = 0,
                 .extent = 16,
                 .true_lb = 0,
                 .true_extent = 9,
                 .basic_count = 2,
                 .contiguous = false,
                 .byte_runs = {{0, 9}}},
                true);
  // {int at 0, char at 4}: 5 → 8.
  const std::array<datatype, 2> ic{int_t, char_t};
  const disps d4{0, 4};
  EXPECT_EQ(datatype::structure(bl, d4, ic).extent(), 8);
  // Two copies of the padded struct sit 16 bytes apart.
  const datatype two = datatype::contiguous(2, t);
  expect_layout(two,
                {.size = 18,
                 .lb = 0,
                 .extent = 32,
                 .true_lb = 0,
                 .true_extent = 25,
                 .basic_count = 4,
                 .contiguous = false,
                 .byte_runs = {{0, 9}, {16, 9}}},
                true);
  // A struct of one basic type is not mixed and has element runs.
  const std::array<datatype, 2> ii{int_t, int_t};
  const disps d8{8, 0};
  const datatype same = datatype::structure(bl, d8, ii);
  expect_layout(same, {.size = 8,
                       .lb = 0,
                       .extent = 12,
                       .true_lb = 0,
                       .true_extent = 12,
                       .basic_count = 2,
                       .contiguous = false,
                       .byte_runs = {{8, 4}, {0, 4}},
                       .element_runs = {{8, 1}, {0, 1}}});
  EXPECT_EQ(same.basic(), basic_type::int_);
}

TEST_F(DerivedDatatype, StructContainingAVector) {
  // V = vector(2,1,2,int): [0,4) [8,12), extent 12. struct {V at 0, double at 16}: data
  // ends at 24, a multiple of 8 already.
  const datatype v = datatype::vector(2, 1, 2, int_t);
  const counts bl{1, 1};
  const disps d{0, 16};
  const std::array<datatype, 2> types{v, double_t};
  const datatype t = datatype::structure(bl, d, types);
  expect_layout(t,
                {.size = 16,
                 .lb = 0,
                 .extent = 24,
                 .true_lb = 0,
                 .true_extent = 24,
                 .basic_count = 3,
                 .contiguous = false,
                 .byte_runs = {{0, 4}, {8, 4}, {16, 8}}},
                true);
  EXPECT_EQ(t.name(), "struct([1,1],[0,16],[vector(2,1,2,int),double])");
}

TEST_F(DerivedDatatype, VectorOfIndexed) {
  // I = indexed({1,1},{0,2},int): [0,4) [8,12), extent 12. vector(2,1,2,I): copies at 0
  // and 24.
  const counts bl{1, 1};
  const counts d{0, 2};
  const datatype i = datatype::indexed(bl, d, int_t);
  const datatype t = datatype::vector(2, 1, 2, i);
  expect_layout(t, {.size = 16,
                    .lb = 0,
                    .extent = 36,
                    .true_lb = 0,
                    .true_extent = 36,
                    .basic_count = 4,
                    .contiguous = false,
                    .byte_runs = {{0, 4}, {8, 4}, {24, 4}, {32, 4}},
                    .element_runs = {{0, 1}, {8, 1}, {24, 1}, {32, 1}}});
  // Copies that touch merge: contiguous(2, I) → [0,4) [8,16) [20,24).
  expect_layout(datatype::contiguous(2, i), {.size = 16,
                                             .lb = 0,
                                             .extent = 24,
                                             .true_lb = 0,
                                             .true_extent = 24,
                                             .basic_count = 4,
                                             .contiguous = false,
                                             .byte_runs = {{0, 4}, {8, 8}, {20, 4}},
                                             .element_runs = {{0, 1}, {8, 2}, {20, 1}}});
}

TEST_F(DerivedDatatype, ResizedThenContiguous) {
  // R: one int with lb -4 and extent 12 (ub 8). Three copies 12 apart: data at 0, 12, 24;
  // lb -4, ub 24 + 8 = 32.
  const datatype r = datatype::resized(int_t, -4, 12);
  expect_layout(r, {.size = 4,
                    .lb = -4,
                    .extent = 12,
                    .true_lb = 0,
                    .true_extent = 4,
                    .basic_count = 1,
                    .contiguous = false,
                    .byte_runs = {{0, 4}},
                    .element_runs = {{0, 1}}});
  EXPECT_EQ(r.name(), "resized(int,-4,12)");
  const datatype t = datatype::contiguous(3, r);
  expect_layout(t, {.size = 12,
                    .lb = -4,
                    .extent = 36,
                    .true_lb = 0,
                    .true_extent = 28,
                    .basic_count = 3,
                    .contiguous = false,
                    .byte_runs = {{0, 4}, {12, 4}, {24, 4}},
                    .element_runs = {{0, 1}, {12, 1}, {24, 1}}});
  // Shrinking the extent of a pair to its data size packs pairs 12 bytes apart: their
  // byte runs touch, their element runs (stride 16) do not.
  const datatype packed = datatype::resized(datatype::of<value_index<double>>(), 0, 12);
  const datatype three = datatype::contiguous(3, packed);
  expect_layout(three, {.size = 36,
                        .lb = 0,
                        .extent = 36,
                        .true_lb = 0,
                        .true_extent = 36,
                        .basic_count = 3,
                        .contiguous = true,
                        .byte_runs = {{0, 36}},
                        .element_runs = {{0, 1}, {12, 1}, {24, 1}}});
  // Growing int to 8 bytes: a vector-like layout.
  expect_layout(datatype::contiguous(2, datatype::resized(int_t, 0, 8)),
                {.size = 8,
                 .lb = 0,
                 .extent = 16,
                 .true_lb = 0,
                 .true_extent = 12,
                 .basic_count = 2,
                 .contiguous = false,
                 .byte_runs = {{0, 4}, {8, 4}},
                 .element_runs = {{0, 1}, {8, 1}}});
}

TEST_F(DerivedDatatype, MarkersAreStickyInAStruct) {
  // struct {resized(int,0,4) at 0, double at 8}: the marker bounds [0,4) win over the
  // double's data (MPI's lb/ub marker rule); no padding is applied with markers.
  const datatype r = datatype::resized(int_t, 0, 4);
  const counts bl{1, 1};
  const disps d{0, 8};
  const std::array<datatype, 2> types{r, double_t};
  expect_layout(datatype::structure(bl, d, types),
                {.size = 12,
                 .lb = 0,
                 .extent = 4,
                 .true_lb = 0,
                 .true_extent = 16,
                 .basic_count = 2,
                 .contiguous = false,
                 .byte_runs = {{0, 4}, {8, 8}}},
                true);
  // Two copies of resized(char,0,3) then a short at 6: ub marker 6, extent 6.
  const datatype rc = datatype::resized(char_t, 0, 3);
  const counts bl2{2, 1};
  const disps d2{0, 6};
  const std::array<datatype, 2> t2{rc, short_t};
  expect_layout(datatype::structure(bl2, d2, t2),
                {.size = 4,
                 .lb = 0,
                 .extent = 6,
                 .true_lb = 0,
                 .true_extent = 8,
                 .basic_count = 3,
                 .contiguous = false,
                 .byte_runs = {{0, 1}, {3, 1}, {6, 2}}},
                true);
  // A marker below the data: lb -8 survives nesting in a vector.
  const datatype low = datatype::resized(double_t, -8, 16);
  expect_layout(datatype::vector(2, 1, 2, low), {.size = 16,
                                                 .lb = -8,
                                                 .extent = 48,
                                                 .true_lb = 0,
                                                 .true_extent = 40,
                                                 .basic_count = 2,
                                                 .contiguous = false,
                                                 .byte_runs = {{0, 8}, {32, 8}},
                                                 .element_runs = {{0, 1}, {32, 1}}});
}

TEST_F(DerivedDatatype, Subarray2DInBothOrders) {
  const counts sizes{4, 5};
  const counts sub{2, 3};
  const counts starts{1, 1};
  // C: rows 1..2, columns 1..3 of a 4×5 int array: elements 6..8 and 11..13.
  const datatype c = datatype::subarray(sizes, sub, starts, order::c, int_t);
  expect_layout(c, {.size = 24,
                    .lb = 0,
                    .extent = 80,
                    .true_lb = 24,
                    .true_extent = 32,
                    .basic_count = 6,
                    .contiguous = false,
                    .byte_runs = {{24, 12}, {44, 12}},
                    .element_runs = {{24, 3}, {44, 3}}});
  EXPECT_EQ(c.name(), "subarray([4,5],[2,3],[1,1],c,int)");
  // Fortran: the first index varies fastest; element (i,j) is i + 4j: 5,6 9,10 13,14.
  const datatype f = datatype::subarray(sizes, sub, starts, order::fortran, int_t);
  expect_layout(f, {.size = 24,
                    .lb = 0,
                    .extent = 80,
                    .true_lb = 20,
                    .true_extent = 40,
                    .basic_count = 6,
                    .contiguous = false,
                    .byte_runs = {{20, 8}, {36, 8}, {52, 8}},
                    .element_runs = {{20, 2}, {36, 2}, {52, 2}}});
  EXPECT_EQ(f.name(), "subarray([4,5],[2,3],[1,1],fortran,int)");
}

TEST_F(DerivedDatatype, Subarray3DInBothOrders) {
  const counts sizes{2, 3, 4};
  const counts sub{1, 2, 2};
  const counts starts{1, 0, 1};
  // C: element (i,j,k) is 12i + 4j + k; i=1, j=0..1, k=1..2: 13,14 17,18.
  const datatype c = datatype::subarray(sizes, sub, starts, order::c, double_t);
  expect_layout(c, {.size = 32,
                    .lb = 0,
                    .extent = 192,
                    .true_lb = 104,
                    .true_extent = 48,
                    .basic_count = 4,
                    .contiguous = false,
                    .byte_runs = {{104, 16}, {136, 16}},
                    .element_runs = {{104, 2}, {136, 2}}});
  // Fortran: element (i,j,k) is i + 2j + 6k, i fastest: (1,0,1)=7 (1,1,1)=9 (1,0,2)=13
  // (1,1,2)=15.
  const datatype f = datatype::subarray(sizes, sub, starts, order::fortran, double_t);
  expect_layout(f, {.size = 32,
                    .lb = 0,
                    .extent = 192,
                    .true_lb = 56,
                    .true_extent = 72,
                    .basic_count = 4,
                    .contiguous = false,
                    .byte_runs = {{56, 8}, {72, 8}, {104, 8}, {120, 8}},
                    .element_runs = {{56, 1}, {72, 1}, {104, 1}, {120, 1}}});
}

TEST_F(DerivedDatatype, SubarrayEdgeCases) {
  // The whole array: one run, contiguous.
  const counts sizes{3, 4};
  const counts zero{0, 0};
  const datatype whole = datatype::subarray(sizes, sizes, zero, order::c, int_t);
  expect_layout(whole, {.size = 48,
                        .lb = 0,
                        .extent = 48,
                        .true_lb = 0,
                        .true_extent = 48,
                        .basic_count = 12,
                        .contiguous = true,
                        .byte_runs = {{0, 48}},
                        .element_runs = {{0, 12}}});
  // Full rows merge: rows 1..2 of a 3×4 array.
  const counts rows{2, 4};
  const counts at{1, 0};
  expect_layout(datatype::subarray(sizes, rows, at, order::c, int_t), {.size = 32,
                                                                       .lb = 0,
                                                                       .extent = 48,
                                                                       .true_lb = 16,
                                                                       .true_extent = 32,
                                                                       .basic_count = 8,
                                                                       .contiguous = false,
                                                                       .byte_runs = {{16, 32}},
                                                                       .element_runs = {{16, 8}}});
  // An empty subarray keeps the array's extent.
  const counts none{0, 2};
  expect_layout(datatype::subarray(sizes, none, zero, order::c, int_t), {.size = 0,
                                                                         .lb = 0,
                                                                         .extent = 48,
                                                                         .true_lb = 0,
                                                                         .true_extent = 0,
                                                                         .basic_count = 0,
                                                                         .contiguous = false,
                                                                         .byte_runs = {},
                                                                         .element_runs = {}});
  // The old type's lb does not move the subarray's bounds (as if resized to the array).
  const counts one{2};
  const counts one_sub{1};
  const counts one_at{1};
  const datatype shifted = datatype::resized(int_t, -4, 8);
  expect_layout(datatype::subarray(one, one_sub, one_at, order::c, shifted),
                {.size = 4,
                 .lb = 0,
                 .extent = 16,
                 .true_lb = 8,
                 .true_extent = 4,
                 .basic_count = 1,
                 .contiguous = false,
                 .byte_runs = {{8, 4}},
                 .element_runs = {{8, 1}}});
}

TEST_F(DerivedDatatype, PairTypesMergeByElementNotByByte) {
  const datatype& di = datatype::of<value_index<double>>();
  const datatype t = datatype::contiguous(3, di);
  expect_layout(t, {.size = 36,
                    .lb = 0,
                    .extent = 48,
                    .true_lb = 0,
                    .true_extent = 44,
                    .basic_count = 3,
                    .contiguous = false,
                    .byte_runs = {{0, 12}, {16, 12}, {32, 12}},
                    .element_runs = {{0, 3}}});
  EXPECT_EQ(t.basic(), basic_type::double_int);
  // value_index<short>: data {0,2} {4,4}, extent 8.
  const datatype v = datatype::vector(2, 1, 2, datatype::of<value_index<short>>());
  expect_layout(v, {.size = 12,
                    .lb = 0,
                    .extent = 24,
                    .true_lb = 0,
                    .true_extent = 24,
                    .basic_count = 2,
                    .contiguous = false,
                    .byte_runs = {{0, 2}, {4, 4}, {16, 2}, {20, 4}},
                    .element_runs = {{0, 1}, {16, 1}}});
}

TEST_F(DerivedDatatype, ZeroCountTypes) {
  const layout empty{.size = 0,
                     .lb = 0,
                     .extent = 0,
                     .true_lb = 0,
                     .true_extent = 0,
                     .basic_count = 0,
                     .contiguous = true,
                     .byte_runs = {},
                     .element_runs = {}};
  expect_layout(datatype::contiguous(0, int_t), empty);
  expect_layout(datatype::vector(0, 3, 2, int_t), empty);
  expect_layout(datatype::vector(3, 0, 2, int_t), empty);
  // Astronomic counts of nothing are built in no time.
  expect_layout(datatype::vector(count_t{1} << 62, 0, 2, int_t), empty);
  expect_layout(datatype::hvector(count_t{1} << 62, 3, 8, datatype::contiguous(0, int_t)), empty);
  const counts no_counts;
  const disps no_disps;
  const counts zeros{0, 0};
  const counts d{1, 2};
  expect_layout(datatype::indexed(no_counts, no_counts, int_t), empty);
  expect_layout(datatype::indexed(zeros, d, int_t), empty);
  expect_layout(datatype::hindexed_block(2, no_disps, int_t), empty);
  EXPECT_EQ(datatype::contiguous(0, int_t).basic(), basic_type::int_);
  // A struct of nothing is of std::byte, and not mixed.
  const std::array<datatype, 0> none{};
  const datatype s = datatype::structure(no_counts, no_disps, none);
  expect_layout(s, empty);
  EXPECT_EQ(s.basic(), basic_type::byte);
  const std::array<datatype, 2> id{int_t, double_t};
  const disps d2{0, 8};
  const datatype s2 = datatype::structure(zeros, d2, id);
  expect_layout(s2, empty);
  EXPECT_EQ(s2.basic(), basic_type::byte);
  // Only a block with elements decides the basic type and the bounds.
  const counts one_zero{1, 0};
  const datatype s3 = datatype::structure(one_zero, d2, id);
  expect_layout(s3, {.size = 4,
                     .lb = 0,
                     .extent = 4,
                     .true_lb = 0,
                     .true_extent = 4,
                     .basic_count = 1,
                     .contiguous = true,
                     .byte_runs = {{0, 4}},
                     .element_runs = {{0, 1}}});
  EXPECT_EQ(s3.basic(), basic_type::int_);
  // Markers without data: resized keeps its bounds, copies of it too.
  const datatype marks = datatype::resized(datatype::contiguous(0, int_t), 0, 8);
  expect_layout(datatype::contiguous(3, marks), {.size = 0,
                                                 .lb = 0,
                                                 .extent = 24,
                                                 .true_lb = 0,
                                                 .true_extent = 0,
                                                 .basic_count = 0,
                                                 .contiguous = false,
                                                 .byte_runs = {},
                                                 .element_runs = {}});
}

TEST_F(DerivedDatatype, DupHasTheSameLayoutAndIsAnotherType) {
  const datatype v = datatype::vector(3, 2, 5, int_t);
  const datatype d = datatype::dup(v);
  EXPECT_FALSE(d == v);
  EXPECT_EQ(d.name(), "dup(vector(3,2,5,int))");
  expect_layout(d, {.size = 24,
                    .lb = 0,
                    .extent = 48,
                    .true_lb = 0,
                    .true_extent = 48,
                    .basic_count = 6,
                    .contiguous = false,
                    .byte_runs = {{0, 8}, {20, 8}, {40, 8}},
                    .element_runs = {{0, 2}, {20, 2}, {40, 2}}});
  const datatype di = datatype::dup(int_t);
  EXPECT_FALSE(di.is_predefined());
  EXPECT_TRUE(di.is_contiguous());
  EXPECT_EQ(di.basic(), basic_type::int_);
  EXPECT_EQ(di.extent(), 4);
}

TEST_F(DerivedDatatype, LargeContiguousTypesStayOneRun) {
  const datatype big = datatype::contiguous(count_t{1} << 20, double_t);
  EXPECT_EQ(big.impl().runs, (runs{{0, std::size_t{8} << 20}}));
  EXPECT_EQ(big.impl().element_runs, (elems{{0, std::size_t{1} << 20}}));
  EXPECT_TRUE(big.is_contiguous());
  // Built in constant time even when the element count is astronomic.
  const datatype huge = datatype::contiguous(count_t{1} << 30, big);
  EXPECT_EQ(huge.impl().runs.size(), 1U);
  EXPECT_EQ(huge.size(), std::size_t{8} << 50);
  const datatype gapless = datatype::vector(count_t{1} << 40, 2, 2, int_t);
  EXPECT_EQ(gapless.impl().runs.size(), 1U);
  // A vector of vectors has many runs, built without trouble.
  const datatype inner = datatype::vector(1000, 1, 2, int_t);
  const datatype outer = datatype::vector(1000, 1, 2, inner);
  EXPECT_EQ(outer.impl().runs.size(), 1000U * 1000U);
  EXPECT_EQ(outer.basic_count(), 1000U * 1000U);
}

TEST_F(DerivedDatatype, NamesAreBounded) {
  counts many(20, 1);
  counts at(20);
  for (std::size_t i = 0; i < at.size(); ++i) at[i] = static_cast<count_t>(2 * i);
  const datatype t = datatype::indexed(many, at, int_t);
  EXPECT_EQ(t.name(), "indexed([1,1,1,1,1,1,1,1,...],[0,2,4,6,8,10,12,14,...],int)");
  datatype nested = int_t;
  for (int i = 0; i < 20; ++i) {
    const std::array<datatype, 2> two{nested, nested};
    const counts bl{1, 1};
    const disps d{0, nested.extent()};
    nested = datatype::structure(bl, d, two);
  }
  EXPECT_LE(nested.name().size(), 240U);
  EXPECT_EQ(nested.name().substr(nested.name().size() - 3), "...");
  EXPECT_EQ(nested.basic_count(), std::size_t{1} << 20);
}

TEST_F(DerivedDatatype, BadArgumentsRaiseTheirClasses) {
  const counts bl{1, 2};
  const counts d3{0, 1, 2};
  const counts neg{1, -1};
  const disps hd{0, 8};
  const disps hd3{0, 8, 16};
  const std::array<datatype, 2> types{int_t, double_t};
  const std::array<datatype, 1> one_type{int_t};
  expect_error([] { datatype::contiguous(-1, int_t); }, error_class::count);
  expect_error([] { datatype::vector(-1, 1, 1, int_t); }, error_class::count);
  expect_error([] { datatype::vector(1, -1, 1, int_t); }, error_class::count);
  expect_error([] { datatype::hvector(-2, 1, 8, int_t); }, error_class::count);
  expect_error([] { datatype::hvector(2, -1, 8, int_t); }, error_class::count);
  expect_error([&] { datatype::indexed(bl, d3, int_t); }, error_class::arg);
  expect_error([&] { datatype::indexed(neg, bl, int_t); }, error_class::count);
  expect_error([&] { datatype::hindexed(bl, hd3, int_t); }, error_class::arg);
  expect_error([&] { datatype::hindexed(neg, hd, int_t); }, error_class::count);
  expect_error([&] { datatype::indexed_block(-1, d3, int_t); }, error_class::count);
  expect_error([&] { datatype::hindexed_block(-1, hd, int_t); }, error_class::count);
  expect_error([&] { datatype::structure(bl, hd3, types); }, error_class::arg);
  expect_error([&] { datatype::structure(bl, hd, one_type); }, error_class::arg);
  expect_error([&] { datatype::structure(neg, hd, types); }, error_class::count);
  expect_error([] { datatype::resized(int_t, 0, 0); }, error_class::arg);
  expect_error([] { datatype::resized(int_t, 0, -4); }, error_class::arg);
  // Overflowing bounds.
  constexpr std::ptrdiff_t big = std::numeric_limits<std::ptrdiff_t>::max() / 2;
  expect_error([] { datatype::hvector(3, 1, big, int_t); }, error_class::arg);
  expect_error([] { datatype::vector(3, 1, big, datatype::of<double>()); }, error_class::arg);
  expect_error([] { datatype::resized(int_t, big * 2, 8); }, error_class::arg);
  // Too many runs to flatten.
  expect_error([] { datatype::contiguous(count_t{1} << 40, datatype::vector(2, 1, 2, int_t)); },
               error_class::intern);
  // A moved-from handle.
  datatype moved = datatype::vector(2, 1, 2, int_t);
  const datatype keep = std::move(moved);
  expect_error([&] { datatype::contiguous(1, moved); }, error_class::type);  // NOLINT
  const std::array<datatype, 2> with_moved{int_t, moved};                    // NOLINT
  expect_error([&] { datatype::structure(bl, hd, with_moved); }, error_class::type);
  EXPECT_EQ(keep.size(), 8U);
}

TEST_F(DerivedDatatype, BadSubarraysRaiseArg) {
  const counts s2{4, 5};
  const counts sub2{2, 3};
  const counts st2{1, 1};
  const counts s1{4};
  const counts none;
  const auto sub = [](const counts& s, const counts& b, const counts& a, order o) {
    return [=] { datatype::subarray(s, b, a, o, int_t); };
  };
  expect_error(sub(s2, sub2, s1, order::c), error_class::arg);             // lengths differ
  expect_error(sub(s2, s1, st2, order::c), error_class::arg);              // lengths differ
  expect_error(sub(none, none, none, order::c), error_class::arg);         // no dimension
  expect_error(sub({0, 5}, {0, 3}, {0, 1}, order::c), error_class::arg);   // size 0
  expect_error(sub({4, 5}, {5, 3}, {0, 1}, order::c), error_class::arg);   // subsize > size
  expect_error(sub({4, 5}, {-1, 3}, {0, 1}, order::c), error_class::arg);  // subsize < 0
  expect_error(sub({4, 5}, {2, 3}, {3, 1}, order::c), error_class::arg);   // start too far
  expect_error(sub({4, 5}, {2, 3}, {-1, 1}, order::c), error_class::arg);  // start < 0
  expect_error(sub(s2, sub2, st2, static_cast<order>(7)), error_class::arg);
  const counts huge{count_t{1} << 40, count_t{1} << 40};
  expect_error(sub(huge, {1, 1}, {0, 0}, order::c), error_class::arg);  // extent overflows
  // The good call next to them works.
  EXPECT_EQ(datatype::subarray(s2, sub2, st2, order::c, int_t).size(), 24U);
}

TEST_F(DerivedDatatype, TypesOutliveTheHandlesTheyWereBuiltFrom) {
  covers("SYN-36");
  datatype t = int_t;
  {
    const datatype v = datatype::vector(3, 2, 5, int_t);
    const datatype r = datatype::resized(v, 0, 64);
    t = datatype::contiguous(2, r);
  }
  EXPECT_EQ(t.impl().runs, (runs{{0, 8}, {20, 8}, {40, 8}, {64, 8}, {84, 8}, {104, 8}}));
  ASSERT_EQ(t.impl().children.size(), 1U);
  EXPECT_EQ(t.impl().children[0].name(), "resized(vector(3,2,5,int),0,64)");
}

}  // namespace
