// detail::copy_vector (see include/oneside/runtime/copy.hpp for why it exists): a copy loop
// of 32-byte unaligned loads and aligned stores, four per iteration, compiled for AVX2 and
// chosen at run time where the CPU has it (the baseline x86-64 build only has SSE2).
#include <cstdint>
#include <cstring>

#include <oneside/runtime/copy.hpp>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace oneside::detail {
namespace {

#if defined(__x86_64__)
// n >= 64. The first and the last 32 bytes are stored unaligned; in between, stores are
// 32-byte aligned, so a destination slightly ahead of the source never costs more than a
// split load.
__attribute__((target("avx2"))) void copy_avx2(std::byte* dst, const std::byte* src,
                                               std::size_t n) noexcept {
  const __m256i head = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  const __m256i tail = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + n - 32));
  std::byte* const end = dst + n;
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), head);
  const std::size_t skew = 32 - (reinterpret_cast<std::uintptr_t>(dst) & 31);
  dst += skew;
  src += skew;
  n -= skew;
  for (; n >= 128; n -= 128, dst += 128, src += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 96));
    _mm256_store_si256(reinterpret_cast<__m256i*>(dst), a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(dst + 32), b);
    _mm256_store_si256(reinterpret_cast<__m256i*>(dst + 64), c);
    _mm256_store_si256(reinterpret_cast<__m256i*>(dst + 96), d);
  }
  for (; n >= 32; n -= 32, dst += 32, src += 32) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(dst),
                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(end - 32), tail);
}
#endif

}  // namespace

void copy_vector(void* dst, const void* src, std::size_t n) noexcept {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && n >= 64) {
    copy_avx2(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), n);
    return;
  }
#endif
  if (n != 0) std::memcpy(dst, src, n);
}

}  // namespace oneside::detail
