// global_ref<T>: what *p and p[i] give for a global_ptr<T> — a reference to an element in any
// rank's memory. Reading it (operator T(), get()) copies the element here; assigning to it
// (operator=, put()) writes the owner's memory, visible there when the call returns. Both
// block; use rget/rput (communication.hpp) to overlap. For the element types of the atomics
// (atomic.hpp: 32- and 64-bit integers, float, double) it also has the atomic calls as members
// (fetch_add(v) … returning futures), and its compound assignments are atomic: `*p += 1` is
// atomic_add(p, 1) waited for, never a read followed by a write. global_ref<const T> (from a
// global_ptr<const T>) reads only; writing through it does not compile.
//
// A global_ref is a reference, not a pointer: copying one makes another reference to the same
// element, and assigning one global_ref to another copies the value, not the reference.
// Thread-safety: as the calls it makes. Errors: those of get/put and of the atomics.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <oneside/pgas/future.hpp>
#include <oneside/pgas/global_ptr.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

namespace pgas::detail {

// The element types of the atomics (atomic.hpp), and the integer ones among them (the bitwise
// atomics).
template <class T>
concept atomic_value = std::same_as<T, std::int32_t> || std::same_as<T, std::uint32_t> ||
    std::same_as<T, std::int64_t> || std::same_as<T, std::uint64_t> || std::same_as<T, long long> ||
    std::same_as<T, unsigned long long> || std::same_as<T, float> || std::same_as<T, double>;
template <class T>
concept atomic_integer = atomic_value<T> && std::integral<T>;

// What global_ref reads and writes: trivially copyable objects.
template <class T>
concept ref_value = std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>;

// The paths of get() and put() beyond memory this process loads and stores (atomic.cpp):
// `bytes` from (r, addr) into dst; `bytes` from src to (r, addr), visible there on return.
// Errors name `call`.
void ref_get(rank_t r, std::uintptr_t addr, void* dst, std::size_t bytes, const char* call);
void ref_put(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes, const char* call);
// After a store to a node peer's memory: wakes its threads waiting in wait_until.
void ref_wake(rank_t r) noexcept;

// The atomic members' calls, defined in atomic.hpp (which this header includes at its end):
// a class template, so global_ref may name it before atomic.hpp is read.
template <class V>
struct ref_atomics;

}  // namespace pgas::detail

template <class T>
class global_ref {
  using V = std::remove_const_t<T>;
  // What the members need: reading and writing bytes, the atomics, the integer atomics.
  static constexpr bool readable = pgas::detail::ref_value<V>;
  static constexpr bool writable = readable && !std::is_const_v<T>;
  static constexpr bool atomic = pgas::detail::atomic_value<V>;
  static constexpr bool updatable = atomic && !std::is_const_v<T>;
  static constexpr bool bitwise = pgas::detail::atomic_integer<V> && !std::is_const_v<T>;
  using ops = pgas::detail::ref_atomics<V>;

 public:
  using value_type = V;

  // The element p points to (p may be null: every access then raises error(arg)).
  constexpr explicit global_ref(global_ptr<T> p) noexcept : ptr_(p) {}
  constexpr global_ref(const global_ref&) noexcept = default;
  ~global_ref() = default;

  // The pointer this reference was made from (&*p == p for raw pointers).
  constexpr global_ptr<T> ptr() const noexcept { return ptr_; }

  // ---- reading (blocks until the value is here) ------------------------------------------
  V get() const requires readable {
    V v{};
    if (const void* p = pgas::detail::local_address(ptr_.where(), ptr_.address(), sizeof(V)))
        [[likely]] {
      std::memcpy(&v, p, sizeof(V));
    } else {
      pgas::detail::ref_get(ptr_.where(), ptr_.address(), &v, sizeof(V), "global_ref::get");
    }
    return v;
  }
  operator V() const requires readable {  // NOLINT: reads like a T&
    return get();
  }

  // ---- writing (the value is visible at the owner on return) -----------------------------
  void put(const V& v) const requires writable {
    if (void* p = pgas::detail::local_address(ptr_.where(), ptr_.address(), sizeof(V))) [[likely]] {
      std::memcpy(p, &v, sizeof(V));
      pgas::detail::ref_wake(ptr_.where());
    } else {
      pgas::detail::ref_put(ptr_.where(), ptr_.address(), &v, sizeof(V), "global_ref::put");
    }
  }
  const global_ref& operator=(const V& v) const requires writable {
    put(v);
    return *this;
  }
  // Copies the value `o` refers to (a reference is never reseated).
  const global_ref& operator=(const global_ref& o) const requires writable {
    put(o.get());
    return *this;
  }

  // ---- atomics (atomic.hpp, for its element types) ---------------------------------------
  future<V> load() const requires atomic { return ops::load(ptr_); }
  future<> store(V v) const requires updatable { return ops::store(ptr_, v); }
  future<V> exchange(V v) const requires updatable { return ops::exchange(ptr_, v); }
  // The old value; the exchange happened iff it equals `expected` (bitwise for float/double).
  future<V> compare_exchange(V expected, V desired) const requires updatable {
    return ops::compare_exchange(ptr_, expected, desired);
  }
  future<V> fetch_add(V v) const requires updatable { return ops::fetch_add(ptr_, v); }
  future<V> fetch_sub(V v) const requires updatable { return ops::fetch_sub(ptr_, v); }
  future<V> fetch_min(V v) const requires updatable { return ops::fetch_min(ptr_, v); }
  future<V> fetch_max(V v) const requires updatable { return ops::fetch_max(ptr_, v); }
  future<V> fetch_and(V v) const requires bitwise { return ops::fetch_and(ptr_, v); }
  future<V> fetch_or(V v) const requires bitwise { return ops::fetch_or(ptr_, v); }
  future<V> fetch_xor(V v) const requires bitwise { return ops::fetch_xor(ptr_, v); }

  // Atomic compound assignments, complete at the owner on return (non-fetching atomics).
  const global_ref& operator+=(V v) const requires updatable {
    ops::atomic_add(ptr_, v).wait();
    return *this;
  }
  const global_ref& operator-=(V v) const requires updatable {
    ops::atomic_sub(ptr_, v).wait();
    return *this;
  }
  const global_ref& operator&=(V v) const requires bitwise {
    ops::atomic_and(ptr_, v).wait();
    return *this;
  }
  const global_ref& operator|=(V v) const requires bitwise {
    ops::atomic_or(ptr_, v).wait();
    return *this;
  }
  const global_ref& operator^=(V v) const requires bitwise {
    ops::atomic_xor(ptr_, v).wait();
    return *this;
  }
  // ++r / --r: atomic, like += 1. r++ / r--: atomic, and return the old value (a round trip).
  const global_ref& operator++() const requires bitwise { return *this += 1; }
  const global_ref& operator--() const requires bitwise { return *this -= 1; }
  V operator++(int) const requires bitwise { return ops::fetch_add(ptr_, 1).wait(); }
  V operator--(int) const requires bitwise { return ops::fetch_sub(ptr_, 1).wait(); }

 private:
  global_ptr<T> ptr_;
};

}  // namespace oneside

// The atomics global_ref's members call; after global_ref so that either header may come first.
#include <oneside/pgas/atomic.hpp>
