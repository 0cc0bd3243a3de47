// Remote atomics through global pointers, as OpenSHMEM's shmem_atomic_* calls: fetching calls
// (fetch_add … compare_exchange, load) return a future of the old value, non-fetching ones
// (atomic_add … atomic_max, store) a future<> that is ready once the update is visible at the
// target. Any thread may call them.
//
// Types: std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, long long, unsigned long
// long, float and double. The bitwise calls (fetch_and/or/xor, atomic_and/or/xor) take integers
// only: for float or double they do not compile. Integer arithmetic wraps around (two's
// complement); floating-point add and sub round as the CPU's + does (sub adds -v); min and max
// keep the target's value unless the operand is strictly smaller (larger), so a NaN operand
// never replaces it; exchange and compare_exchange move and compare bits, so for float and
// double "equal" means bitwise identical (-0.0 differs from +0.0, a NaN equals itself).
//
// Atomicity: the atomics of this header on one word are atomic with each other whatever rank
// and thread issue them and whatever path each takes. Plain puts, gets and stores racing with
// them on that word are not.
//
// Paths. Every atomic is a CPU atomic on the word, wherever it runs, so all of them are atomic
// with each other: on memory this process loads and stores (its own heaps, node peers' on the
// shm transport) it runs here (std::atomic_ref, sequentially consistent; compare-exchange
// loops for min, max and floating-point add), complete when the call returns; on other
// memory the word's owner runs it (the transport's atomic: the owner's agent or progress
// thread), reached through the rma layer's access interface. On that path a fetching call
// BLOCKS until the old value is here (a round trip to the owner) and returns a ready future;
// a non-fetching call returns once the update is sent, with a future that completes it (a
// flush of the owner) when waited for or polled, or at the next quiet(). (The rma layer's
// window accumulates are atomic with each other, not with these: use one or the other on a
// word.)
//
// Ordering: an atomic whose future is ready is visible to every later access of that word by
// any rank. Atomics in flight are ordered with other operations only by waiting for their
// futures or by fence()/quiet() (communication.hpp).
//
// Waking: an atomic that changes a word of another rank wakes that rank's threads sleeping in
// wait_until (signal.hpp), so a rank may sleep on a word others update with these calls.
//
// Errors (oneside::error, raised before the target changes): a null pointer, or one not
// aligned to sizeof(T) → arg; a rank outside the world → rank; memory outside every rank's
// heaps (memory the rank did not expose) → rma_range, its message naming the call.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/future.hpp>
#include <oneside/pgas/global_ptr.hpp>
#include <oneside/runtime/amo.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

namespace pgas::detail {

// Declared in communication.hpp too: repeated here because that header may include this one
// (through global_ptr.hpp) before reaching its own declaration, when a translation unit
// includes communication.hpp first (as dist_array.hpp does).
void wake_after_rmw(rank_t r) noexcept;

// What an atomic does and on which type: the transport's own names (sub is add of the negated
// operand).
using atomic_op = oneside::detail::amo_op;
using atomic_type = oneside::detail::amo_type;

template <atomic_value T>
constexpr atomic_type atomic_type_of() noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    return sizeof(T) == 4 ? atomic_type::f32 : atomic_type::f64;
  } else if constexpr (std::is_signed_v<T>) {
    return sizeof(T) == 4 ? atomic_type::i32 : atomic_type::i64;
  } else {
    return sizeof(T) == 4 ? atomic_type::u32 : atomic_type::u64;
  }
}

// Validates (r, addr) for an atomic on `bytes` bytes (raises what the file comment lists) and
// returns the local pointer through which this process applies it with CPU atomics, or null
// when the owner applies it.
void* atomic_address(rank_t r, std::uintptr_t addr, std::size_t bytes, const char* call);
// The owner's path. Fetching: blocks until the old value is here and returns its bits.
// Non-fetching: issues the update; the future completes it at the target. Operands travel as
// bits (a 4-byte value in the low 32 bits).
std::uint64_t atomic_fetch_remote(atomic_op o, atomic_type t, rank_t r, std::uintptr_t addr,
                                  std::uint64_t operand, std::uint64_t compare, const char* call);
future<> atomic_update_remote(atomic_op o, atomic_type t, rank_t r, std::uintptr_t addr,
                              std::uint64_t operand, const char* call);

template <class T>
std::uint64_t to_bits(T v) noexcept {
  if constexpr (sizeof(T) == 4) {
    std::uint32_t b = 0;
    std::memcpy(&b, &v, 4);
    return b;
  } else {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, 8);
    return b;
  }
}
template <class T>
T from_bits(std::uint64_t bits) noexcept {
  T v{};
  if constexpr (sizeof(T) == 4) {
    const auto b = static_cast<std::uint32_t>(bits);
    std::memcpy(&v, &b, 4);
  } else {
    std::memcpy(&v, &bits, 8);
  }
  return v;
}

// -v, wrapping around for integers (negating the most negative value gives itself, and adding
// it is subtracting it).
template <class T>
T negate(T v) noexcept {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(U{0} - static_cast<U>(v)));
  } else {
    return -v;
  }
}

// min/max by compare-exchange: replace while the operand is strictly better than the value.
template <class T, class Better>
T fetch_better(std::atomic_ref<T> ref, T operand, Better better) noexcept {
  T old = ref.load();
  while (better(operand, old) && !ref.compare_exchange_weak(old, operand)) {
  }
  return old;
}

// The CPU form of O on *p; returns the old value (the operand for store).
template <atomic_op O, class T>
T cpu_atomic(T* p, T v, T expected) noexcept {
  static_assert(std::atomic_ref<T>::is_always_lock_free && sizeof(T) == alignof(T) &&
                    std::atomic_ref<T>::required_alignment <= sizeof(T),
                "CPU atomics across processes need lock-free, naturally aligned words");
  const std::atomic_ref<T> ref(*p);
  if constexpr (O == atomic_op::load) {
    return ref.load();
  } else if constexpr (O == atomic_op::store) {
    ref.store(v);
    return v;
  } else if constexpr (O == atomic_op::add) {
    return ref.fetch_add(v);
  } else if constexpr (O == atomic_op::band) {
    return ref.fetch_and(v);
  } else if constexpr (O == atomic_op::bor) {
    return ref.fetch_or(v);
  } else if constexpr (O == atomic_op::bxor) {
    return ref.fetch_xor(v);
  } else if constexpr (O == atomic_op::min) {
    return fetch_better(ref, v, [](T x, T y) { return x < y; });
  } else if constexpr (O == atomic_op::max) {
    return fetch_better(ref, v, [](T x, T y) { return y < x; });
  } else if constexpr (O == atomic_op::swap) {
    return ref.exchange(v);
  } else {
    static_assert(O == atomic_op::compare_swap);
    ref.compare_exchange_strong(expected, v);  // compares object representations: bitwise
    return expected;                           // the old value, whether or not it matched
  }
}

template <atomic_op O, class T>
future<T> fetching(global_ptr<T> p, T v, T expected, const char* call) {
  if (void* q = atomic_address(p.where(), p.address(), sizeof(T), call)) [[likely]] {
    const T old = cpu_atomic<O>(static_cast<T*>(q), v, expected);
    if constexpr (O != atomic_op::load) wake_after_rmw(p.where());
    return make_future(old);
  }
  return make_future(from_bits<T>(atomic_fetch_remote(
      O, atomic_type_of<T>(), p.where(), p.address(), to_bits(v), to_bits(expected), call)));
}

template <atomic_op O, class T>
future<> updating(global_ptr<T> p, T v, const char* call) {
  if (void* q = atomic_address(p.where(), p.address(), sizeof(T), call)) [[likely]] {
    (void)cpu_atomic<O>(static_cast<T*>(q), v, T{});
    wake_after_rmw(p.where());
    return {};
  }
  return atomic_update_remote(O, atomic_type_of<T>(), p.where(), p.address(), to_bits(v), call);
}

}  // namespace pgas::detail

// ---- fetching: a future of the value before the update ------------------------------------

template <pgas::detail::atomic_value T>
future<T> fetch_add(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::fetching<pgas::detail::atomic_op::add>(p, v, T{}, "fetch_add");
}
template <pgas::detail::atomic_value T>
future<T> fetch_sub(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::fetching<pgas::detail::atomic_op::add>(p, pgas::detail::negate(v), T{},
                                                              "fetch_sub");
}
template <pgas::detail::atomic_value T>
future<T> fetch_min(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::fetching<pgas::detail::atomic_op::min>(p, v, T{}, "fetch_min");
}
template <pgas::detail::atomic_value T>
future<T> fetch_max(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::fetching<pgas::detail::atomic_op::max>(p, v, T{}, "fetch_max");
}
template <pgas::detail::atomic_integer T>
future<T> fetch_and(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::fetching<pgas::detail::atomic_op::band>(p, v, T{}, "fetch_and");
}
template <pgas::detail::atomic_integer T>
future<T> fetch_or(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::fetching<pgas::detail::atomic_op::bor>(p, v, T{}, "fetch_or");
}
template <pgas::detail::atomic_integer T>
future<T> fetch_xor(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::fetching<pgas::detail::atomic_op::bxor>(p, v, T{}, "fetch_xor");
}
// Replaces the value with v.
template <pgas::detail::atomic_value T>
future<T> exchange(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::fetching<pgas::detail::atomic_op::swap>(p, v, T{}, "exchange");
}
// Replaces the value with `desired` if it equals `expected` (bitwise). The future holds the old
// value: the exchange happened iff it equals `expected`.
template <pgas::detail::atomic_value T>
future<T> compare_exchange(global_ptr<T> p, std::type_identity_t<T> expected,
                           std::type_identity_t<T> desired) {
  return pgas::detail::fetching<pgas::detail::atomic_op::compare_swap>(p, desired, expected,
                                                                       "compare_exchange");
}
// The value (an atomic read: never a torn or half-updated one).
template <class T>
requires pgas::detail::atomic_value<std::remove_const_t<T>> future<std::remove_const_t<T>> load(
    global_ptr<T> p) {
  using V = std::remove_const_t<T>;
  return pgas::detail::fetching<pgas::detail::atomic_op::load>(const_pointer_cast<V>(p), V{}, V{},
                                                               "load");
}

// ---- non-fetching: a future<> ready once the update is visible at the target --------------

template <pgas::detail::atomic_value T>
future<> atomic_add(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::updating<pgas::detail::atomic_op::add>(p, v, "atomic_add");
}
template <pgas::detail::atomic_value T>
future<> atomic_sub(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::updating<pgas::detail::atomic_op::add>(p, pgas::detail::negate(v),
                                                              "atomic_sub");
}
template <pgas::detail::atomic_value T>
future<> atomic_min(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::updating<pgas::detail::atomic_op::min>(p, v, "atomic_min");
}
template <pgas::detail::atomic_value T>
future<> atomic_max(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::updating<pgas::detail::atomic_op::max>(p, v, "atomic_max");
}
template <pgas::detail::atomic_integer T>
future<> atomic_and(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::updating<pgas::detail::atomic_op::band>(p, v, "atomic_and");
}
template <pgas::detail::atomic_integer T>
future<> atomic_or(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::updating<pgas::detail::atomic_op::bor>(p, v, "atomic_or");
}
template <pgas::detail::atomic_integer T>
future<> atomic_xor(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::updating<pgas::detail::atomic_op::bxor>(p, v, "atomic_xor");
}
// Sets the value to v (an atomic write).
template <pgas::detail::atomic_value T>
future<> store(global_ptr<T> p, std::type_identity_t<T> v) {
  return pgas::detail::updating<pgas::detail::atomic_op::store>(p, v, "store");
}

namespace pgas::detail {

// What global_ref's atomic members call (declared in global_ref.hpp).
template <class V>
struct ref_atomics {
  static future<V> load(global_ptr<const V> p) { return oneside::load(p); }
  static future<> store(global_ptr<V> p, V v) { return oneside::store(p, v); }
  static future<V> exchange(global_ptr<V> p, V v) { return oneside::exchange(p, v); }
  static future<V> compare_exchange(global_ptr<V> p, V expected, V desired) {
    return oneside::compare_exchange(p, expected, desired);
  }
  static future<V> fetch_add(global_ptr<V> p, V v) { return oneside::fetch_add(p, v); }
  static future<V> fetch_sub(global_ptr<V> p, V v) { return oneside::fetch_sub(p, v); }
  static future<V> fetch_min(global_ptr<V> p, V v) { return oneside::fetch_min(p, v); }
  static future<V> fetch_max(global_ptr<V> p, V v) { return oneside::fetch_max(p, v); }
  static future<V> fetch_and(global_ptr<V> p, V v) { return oneside::fetch_and(p, v); }
  static future<V> fetch_or(global_ptr<V> p, V v) { return oneside::fetch_or(p, v); }
  static future<V> fetch_xor(global_ptr<V> p, V v) { return oneside::fetch_xor(p, v); }
  static future<> atomic_add(global_ptr<V> p, V v) { return oneside::atomic_add(p, v); }
  static future<> atomic_sub(global_ptr<V> p, V v) { return oneside::atomic_sub(p, v); }
  static future<> atomic_and(global_ptr<V> p, V v) { return oneside::atomic_and(p, v); }
  static future<> atomic_or(global_ptr<V> p, V v) { return oneside::atomic_or(p, v); }
  static future<> atomic_xor(global_ptr<V> p, V v) { return oneside::atomic_xor(p, v); }
};

}  // namespace pgas::detail

}  // namespace oneside
