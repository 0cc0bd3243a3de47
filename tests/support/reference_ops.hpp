// Serial reference semantics of the predefined reduction ops, written independently of the
// runtime's kernels, and test values per type chosen so that no op overflows a signed type.
// Used by the collectives tests (and later by the accumulate tests).
#pragma once

#include <complex>
#include <cstddef>
#include <memory>
#include <type_traits>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/op.hpp>

namespace oneside::test {

template <class T>
struct is_complex : std::false_type {};
template <class V>
struct is_complex<std::complex<V>> : std::true_type {};
template <class T>
struct is_value_index : std::false_type {};
template <class V>
struct is_value_index<value_index<V>> : std::true_type {};

template <class T>
constexpr bool is_character_v =
    std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> ||
    std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;
template <class T>
constexpr bool is_integer_v =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !is_character_v<T>;

// The value member r contributes at element i. Signed integers stay in {-1, 0, 1, 2} (sums of
// 8 members fit a signed char; products are ±1 or 0, except where a 2 sits, at most one per
// element); the rest are small integers, exact in every floating type.
template <class T>
T test_value(int r, std::size_t i) {
  const int v = static_cast<int>((static_cast<std::size_t>(r) * 7 + i * 3) % 5);  // 0..4
  if constexpr (std::is_same_v<T, bool>) {
    return ((r + static_cast<int>(i)) % 3) != 0;
  } else if constexpr (std::is_same_v<T, std::byte>) {
    return static_cast<std::byte>((r * 37 + static_cast<int>(i) * 11) & 0xff);
  } else if constexpr (is_value_index<T>::value) {
    using V = decltype(T::value);
    return T{static_cast<V>((r + static_cast<int>(i)) % 3), r};  // ties between members
  } else if constexpr (is_complex<T>::value) {
    using V = typename T::value_type;
    return T(static_cast<V>(v % 3 - 1), static_cast<V>((v + r) % 2));
  } else if constexpr (std::is_signed_v<T> && std::is_integral_v<T>) {
    // Only member (i % 8) may contribute a 2, so a product has at most one factor 2.
    if (v == 4) return static_cast<T>(static_cast<std::size_t>(r) == i % 8 ? 2 : 1);
    return static_cast<T>(v % 3 - 1);
  } else {
    return static_cast<T>(v);
  }
}

// Arithmetic of T done so that integers wrap instead of overflowing (unsigned for integers).
template <class T, bool = std::is_integral_v<T>>
struct wrap_type {
  using type = T;
};
template <class T>
struct wrap_type<T, true> {
  using type = std::make_unsigned_t<T>;
};

// A plain array of T (std::vector<bool> has no data()).
template <class T>
class test_array {
 public:
  test_array(std::size_t n, const T& fill)
      : data_(std::make_unique_for_overwrite<T[]>(n)), size_(n) {
    for (std::size_t i = 0; i < n; ++i) data_[i] = fill;
  }
  explicit test_array(std::size_t n) : data_(std::make_unique_for_overwrite<T[]>(n)), size_(n) {}
  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t size_;
};

template <class T>
bool same(const T& a, const T& b) {
  return a == b;
}

// a (op) b, where a comes from the lower rank. Only called for valid (op, T) pairs.
template <class T>
T reference_apply(op o, const T& a, const T& b) {
  if constexpr (is_value_index<T>::value) {
    const bool b_better = o == op::minloc ? b.value < a.value : a.value < b.value;
    if (b_better) return b;
    if (a.value == b.value) return T{a.value, a.index < b.index ? a.index : b.index};
    return a;
  } else if constexpr (std::is_same_v<T, std::byte>) {
    switch (o) {
      case op::band:
        return a & b;
      case op::bor:
        return a | b;
      case op::bxor:
        return a ^ b;
      default:
        return a;
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (o) {
      case op::land:
        return a && b;
      case op::lor:
        return a || b;
      case op::lxor:
        return a != b;
      default:
        return a;
    }
  } else if constexpr (is_complex<T>::value) {
    return o == op::sum ? a + b : a * b;
  } else if constexpr (is_character_v<T>) {
    return a;
  } else {
    using W = typename wrap_type<T>::type;
    switch (o) {
      case op::sum:
        return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
      case op::prod:
        return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
      case op::min:
        return b < a ? b : a;
      case op::max:
        return a < b ? b : a;
      default:
        break;
    }
    if constexpr (std::is_integral_v<T>) {
      switch (o) {
        case op::land:
          return static_cast<T>((a != 0) && (b != 0));
        case op::lor:
          return static_cast<T>((a != 0) || (b != 0));
        case op::lxor:
          return static_cast<T>((a != 0) != (b != 0));
        case op::band:
          return static_cast<T>(a & b);
        case op::bor:
          return static_cast<T>(a | b);
        case op::bxor:
          return static_cast<T>(a ^ b);
        default:
          break;
      }
    }
    return a;
  }
}

}  // namespace oneside::test
