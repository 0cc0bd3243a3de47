// The reduction kernels (see reduce.hpp for their contract) and the constant table that
// maps (op, basic type) to them. Each kernel is one plain indexed loop over memcpy loads
// and stores; GCC turns those into unaligned vector loads, so at -O3 the loops vectorize
// (check with -fopt-info-vec): every op on 8- to 32-bit integers, float and double, and
// sum/band/bor/bxor on 64-bit integers. With the baseline x86-64 ISA (SSE2) 64-bit
// prod/min/max/land/lor/lxor stay scalar: there is no 64-bit vector multiply or compare
// before SSE4.2/AVX-512, and -march=x86-64-v2 vectorizes min/max too.
#include "runtime/reduce.hpp"

#include <array>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include "datatype/basic_types.hpp"
#include "runtime/check.hpp"
#include "runtime/op_rules.hpp"

namespace oneside::detail {
namespace {

// bool is reduced as its byte: loading a byte other than 0 or 1 (from the wire) as bool
// would be undefined, read as a byte it is just "true".
static_assert(sizeof(bool) == 1);
template <class T>
using storage_t = std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>;

template <class T>
T load(const unsigned char* p) noexcept {
  T v;
  if constexpr (is_value_index_v<T>) {
    std::memcpy(&v.value, p, sizeof v.value);
    std::memcpy(&v.index, p + offsetof(T, index), sizeof v.index);
  } else {
    std::memcpy(&v, p, sizeof v);
  }
  return v;
}

// Field by field for pairs, so their padding in the destination is never written.
template <class T>
void store(unsigned char* p, const T& v) noexcept {
  if constexpr (is_value_index_v<T>) {
    std::memcpy(p, &v.value, sizeof v.value);
    std::memcpy(p + offsetof(T, index), &v.index, sizeof v.index);
  } else {
    std::memcpy(p, &v, sizeof v);
  }
}

// The unsigned type, at least as wide as unsigned int, in which T's sum and product wrap.
// (short * short promotes to int, where 0xffff * 0xffff would overflow.)
template <class T>
using wrap_t = decltype(std::make_unsigned_t<T>{} + 0U);

// combine<O, T>{}(left, right): one element of O. Instantiated only for pairs that
// op_defined_for accepts.
template <op O, class T>
struct combine;

template <class T>
struct combine<op::sum, T> {
  T operator()(T a, T b) const noexcept {
    if constexpr (std::is_integral_v<T>) {
      using W = wrap_t<T>;
      return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    } else {
      return a + b;
    }
  }
};

template <class T>
struct combine<op::prod, T> {
  T operator()(T a, T b) const noexcept {
    if constexpr (std::is_integral_v<T>) {
      using W = wrap_t<T>;
      return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    } else {
      return a * b;
    }
  }
};

// Keep the left operand unless the right one is strictly smaller (larger): equal and
// unordered keep the left, as documented in reduce.hpp.
template <class T>
struct combine<op::min, T> {
  T operator()(T a, T b) const noexcept { return b < a ? b : a; }
};

template <class T>
struct combine<op::max, T> {
  T operator()(T a, T b) const noexcept { return a < b ? b : a; }
};

template <class T>
struct combine<op::land, T> {
  T operator()(T a, T b) const noexcept { return static_cast<T>(a != T{} && b != T{}); }
};

template <class T>
struct combine<op::lor, T> {
  T operator()(T a, T b) const noexcept { return static_cast<T>(a != T{} || b != T{}); }
};

template <class T>
struct combine<op::lxor, T> {
  T operator()(T a, T b) const noexcept { return static_cast<T>((a != T{}) != (b != T{})); }
};

// The casts narrow the int that short and char operands promote to; for std::byte they
// are no-ops.
template <class T>
struct combine<op::band, T> {
  T operator()(T a, T b) const noexcept { return static_cast<T>(a & b); }
};

template <class T>
struct combine<op::bor, T> {
  T operator()(T a, T b) const noexcept { return static_cast<T>(a | b); }
};

template <class T>
struct combine<op::bxor, T> {
  T operator()(T a, T b) const noexcept { return static_cast<T>(a ^ b); }
};

// MPI's definition: the smaller (larger) value with its index; on equal values the smaller
// index (COM-13). Values that are unordered (NaN) keep the left pair, as min and max do.
template <class V>
struct combine<op::minloc, value_index<V>> {
  value_index<V> operator()(value_index<V> a, value_index<V> b) const noexcept {
    if (b.value < a.value) return b;
    if (b.value == a.value && b.index < a.index) a.index = b.index;
    return a;
  }
};

template <class V>
struct combine<op::maxloc, value_index<V>> {
  value_index<V> operator()(value_index<V> a, value_index<V> b) const noexcept {
    if (a.value < b.value) return b;
    if (b.value == a.value && b.index < a.index) a.index = b.index;
    return a;
  }
};

template <class T>
struct combine<op::replace, T> {
  T operator()(T /*a*/, T b) const noexcept { return b; }
};

// The one loop every kernel runs. Plain indexed loop, restrict-qualified buffers and
// memcpy loads: what the vectorizer needs, for any alignment.
template <class T, class Combine>
void elementwise(void* __restrict inout, const void* __restrict in, std::size_t count) noexcept {
  auto* left = static_cast<unsigned char*>(inout);
  const auto* right = static_cast<const unsigned char*>(in);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = i * sizeof(T);
    store<T>(left + at, Combine{}(load<T>(left + at), load<T>(right + at)));
  }
}

#if defined(__x86_64__)
// The same loop compiled for AVX2, chosen at run time where the CPU has it: the baseline
// x86-64 build only has SSE2, and AVX2 makes the common loops 2-3x faster (1024 double sums:
// 299 ns -> 106 ns on this project's machines), which bulk accumulates and reductions feel.
template <class T, class Combine>
__attribute__((target("avx2"))) void elementwise_avx2(void* __restrict inout,
                                                      const void* __restrict in,
                                                      std::size_t count) noexcept {
  auto* left = static_cast<unsigned char*>(inout);
  const auto* right = static_cast<const unsigned char*>(in);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = i * sizeof(T);
    store<T>(left + at, Combine{}(load<T>(left + at), load<T>(right + at)));
  }
}
#endif

void leave_unchanged(void* /*inout*/, const void* /*in*/, std::size_t /*count*/) noexcept {}

template <bool Avx2, op O, std::size_t I>
constexpr reduce_fn kernel_for() noexcept {
  if constexpr (!op_defined_for(O, static_cast<basic_type>(I))) {
    return nullptr;
  } else if constexpr (O == op::no_op) {
    return &leave_unchanged;
  } else {
    using T = storage_t<basic_cpp_type_at<I>>;
#if defined(__x86_64__)
    if constexpr (Avx2) return &elementwise_avx2<T, combine<O, T>>;
#endif
    return &elementwise<T, combine<O, T>>;
  }
}

using kernel_row = std::array<reduce_fn, basic_type_count>;
using kernel_table = std::array<kernel_row, op_count>;

template <bool Avx2, op O, std::size_t... Is>
constexpr kernel_row make_row(std::index_sequence<Is...>) noexcept {
  return {kernel_for<Avx2, O, Is>()...};
}

template <bool Avx2, std::size_t... Os>
constexpr kernel_table make_table(std::index_sequence<Os...>) noexcept {
  return {make_row<Avx2, static_cast<op>(Os)>(std::make_index_sequence<basic_type_count>{})...};
}

constexpr kernel_table baseline_kernels = make_table<false>(std::make_index_sequence<op_count>{});
constexpr kernel_table avx2_kernels = make_table<true>(std::make_index_sequence<op_count>{});

const kernel_table& chosen_kernels() noexcept {
#if defined(__x86_64__)
  static const kernel_table& chosen =
      __builtin_cpu_supports("avx2") ? avx2_kernels : baseline_kernels;
  return chosen;
#else
  return baseline_kernels;
#endif
}

reduce_fn lookup(const kernel_table& table, op o, basic_type t) noexcept {
  const auto oi = static_cast<std::size_t>(o);
  const auto ti = static_cast<std::size_t>(t);
  if (oi >= op_count || ti >= basic_type_count) return nullptr;
  return table[oi][ti];
}

}  // namespace

reduce_fn reduce_function(op o, basic_type t) noexcept {
  return lookup(chosen_kernels(), o, t);
}

reduce_fn baseline_reduce_function(op o, basic_type t) noexcept {
  return lookup(baseline_kernels, o, t);
}

void reduce_apply(op o, basic_type t, void* inout, const void* in, std::size_t count) noexcept {
  const reduce_fn fn = reduce_function(o, t);
  ONESIDE_ASSERT(fn != nullptr);
  if (fn != nullptr) fn(inout, in, count);
}

}  // namespace oneside::detail
