// detail::copy_bytes, the byte copy of oneside's data path: every size class it treats
// differently (memcpy below copy_vector_min, the vector loop up to copy_vector_max, memcpy
// again above) at every relative alignment of source and destination modulo 64, checking
// each copied byte and that no byte before or after the destination range changed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/runtime/copy.hpp>

namespace {

using oneside::detail::copy_bytes;
using oneside::detail::copy_vector;
using oneside::detail::copy_vector_max;
using oneside::detail::copy_vector_min;

constexpr std::size_t guard = 128;
constexpr unsigned char untouched = 0xEE;

// A byte pattern that differs between neighbouring bytes and does not repeat with period 32
// or 64, so a store at a wrong offset or a skipped block shows.
unsigned char pattern(std::size_t i) noexcept {
  return static_cast<unsigned char>((i * 131u + (i >> 8) * 7u + 1u) & 0xFF);
}

// Copies n bytes from source offset `so` to destination offset `dof` (both past a 64-byte
// aligned base) with `copy`, and checks the destination and its guards byte by byte.
template <class Copy>
::testing::AssertionResult copies_exactly(std::size_t n, std::size_t so, std::size_t dof,
                                          Copy&& copy) {
  // Over-allocate and align by hand: the offsets must be relative to a 64-byte boundary.
  std::vector<unsigned char> src_store(n + so + 64);
  std::vector<unsigned char> dst_store(n + dof + 2 * guard + 64);
  auto align64 = [](unsigned char* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return p + ((64 - a % 64) % 64);
  };
  unsigned char* src = align64(src_store.data()) + so;
  unsigned char* dst_base = align64(dst_store.data());
  unsigned char* dst = dst_base + guard + dof;
  for (std::size_t i = 0; i < n; ++i) src[i] = pattern(i);
  std::fill(dst_store.begin(), dst_store.end(), untouched);
  copy(dst, src, n);
  for (std::size_t i = 0; i < n; ++i) {
    if (dst[i] != pattern(i)) {
      return ::testing::AssertionFailure() << "n=" << n << " src offset " << so << " dst offset "
                                           << dof << ": byte " << i << " is wrong";
    }
  }
  for (unsigned char* p = dst_store.data(); p < dst; ++p) {
    if (*p != untouched) {
      return ::testing::AssertionFailure()
             << "n=" << n << " src offset " << so << " dst offset " << dof << ": a byte "
             << (dst - p) << " before the destination changed";
    }
  }
  for (unsigned char* p = dst + n; p < dst_store.data() + dst_store.size(); ++p) {
    if (*p != untouched) {
      return ::testing::AssertionFailure()
             << "n=" << n << " src offset " << so << " dst offset " << dof << ": a byte "
             << (p - (dst + n)) << " past the destination changed";
    }
  }
  return ::testing::AssertionSuccess();
}

void copy_with_copy_bytes(void* d, const void* s, std::size_t n) {
  copy_bytes(d, s, n);
}
void copy_with_copy_vector(void* d, const void* s, std::size_t n) {
  copy_vector(d, s, n);
}

TEST(CopyBytes, ZeroBytesTouchNothingAndAcceptNull) {
  copy_bytes(nullptr, nullptr, 0);
  EXPECT_TRUE(copies_exactly(0, 3, 5, copy_with_copy_bytes));
}

TEST(CopyBytes, EverySizeClassAtEveryRelativeAlignment) {
  // Below, at and above both thresholds, plus sizes that leave every tail length of the
  // 128- and 32-byte loops.
  const std::vector<std::size_t> sizes{1,
                                       7,
                                       8,
                                       63,
                                       64,
                                       100,
                                       copy_vector_min - 1,
                                       copy_vector_min,
                                       copy_vector_min + 1,
                                       copy_vector_min + 31,
                                       copy_vector_min + 95,
                                       copy_vector_min + 127,
                                       4096,
                                       16384 + 40,
                                       65536 + 8};
  for (const std::size_t n : sizes) {
    for (std::size_t so = 0; so < 64; so += 1) {
      for (std::size_t dof = 0; dof < 64; dof += 1) {
        ASSERT_TRUE(copies_exactly(n, so, dof, copy_with_copy_bytes));
      }
    }
  }
}

TEST(CopyBytes, LargeSizesAroundTheUpperThreshold) {
  for (const std::size_t n : {copy_vector_max - 1, copy_vector_max, copy_vector_max + 1}) {
    for (const std::size_t so : {0u, 1u, 8u, 31u, 32u}) {
      for (const std::size_t dof : {0u, 8u, 16u, 24u, 33u, 63u}) {
        ASSERT_TRUE(copies_exactly(n, so, dof, copy_with_copy_bytes));
      }
    }
  }
}

// The vector loop itself, also at the small sizes copy_bytes never gives it: from 64 bytes
// (its shortest loop: head, a few aligned blocks, tail) and below (where it falls back).
TEST(CopyBytes, VectorLoopAtItsOwnEdges) {
  for (std::size_t n = 0; n <= 300; ++n) {
    for (const std::size_t so : {0u, 5u, 8u, 32u}) {
      for (std::size_t dof = 0; dof < 64; dof += 3) {
        ASSERT_TRUE(copies_exactly(n, so, dof, copy_with_copy_vector));
      }
    }
  }
}

}  // namespace
