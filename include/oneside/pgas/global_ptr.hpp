// global_ptr<T>: a pointer to a T in any rank's memory, as the pair (rank, address in that
// rank's address space) — the convention of the transport and of dynamic windows. Arithmetic
// is in units of T within the owner's memory; comparison and hashing are on (rank, address);
// the null pointer has address 0. is_local() says whether this process can load and store
// the memory (its own, or a node peer's when the transport maps it), local() gives the raw
// pointer then. global_ptr<const T> rejects writes at compile time: the operations that write
// take global_ptr<T>. A global_ptr is a plain value: copy it, send it to other ranks.
#pragma once

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <type_traits>

#include <oneside/runtime/types.hpp>

namespace oneside {

template <class T>
class global_ref;  // global_ref.hpp, included at the end of this file

namespace pgas::detail {
// Whether rank r's memory is load/store reachable from this process (this rank or a node peer
// the transport maps): a lookup in a table made at runtime open, no virtual call.
bool is_local_rank(rank_t r) noexcept;
// The local pointer to [addr, addr + bytes) of rank r, or null when it is not reachable.
void* local_address(rank_t r, std::uintptr_t addr, std::size_t bytes) noexcept;
// local() of other memory: null for address 0, the mapping of a node peer's memory, else
// error(arg) (memory this process cannot reach).
void* local_or_raise(rank_t r, std::uintptr_t addr, std::size_t bytes);
// This process's world rank while the pgas layer is set up, else -1 (no error).
rank_t my_rank_if_open() noexcept;
// Raises error(arg) for the difference of pointers into different ranks.
[[noreturn]] void different_ranks(rank_t a, rank_t b);
// This process's world rank (error(not_open) when the runtime is not open).
rank_t my_rank();
// The address in rank `to`'s symmetric heap at the offset `addr` has in rank `from`'s
// (symmetric_allocate); error(arg) when `addr` is not in from's symmetric heap, error(rank)
// for a rank outside the world.
std::uintptr_t symmetric_address(rank_t from, std::uintptr_t addr, rank_t to);
}  // namespace pgas::detail

template <class T>
class global_ptr {
 public:
  using element_type = T;

  constexpr global_ptr() noexcept = default;
  constexpr global_ptr(std::nullptr_t) noexcept {}  // NOLINT: like a raw pointer
  // The object at `address` in world rank `rank`'s address space.
  constexpr global_ptr(rank_t rank, std::uintptr_t address) noexcept
      : rank_(address == 0 ? 0 : rank), address_(address) {}
  // This process's object at `p` (null stays null).
  static global_ptr from_local(T* p) {
    return p == nullptr ? global_ptr() : global_ptr(pgas::detail::my_rank(), address_of(p));
  }

  // global_ptr<U> → global_ptr<T> where only cv-qualifiers are added (or T is void).
  template <class U>
  requires(!std::is_same_v<U, T> && std::is_convertible_v<U*, T*> &&
           (std::is_void_v<T> ||
            std::is_same_v<
                std::remove_cv_t<U>,
                std::remove_cv_t<T>>)) constexpr global_ptr(const global_ptr<U>&
                                                                o) noexcept  // NOLINT: implicit
                                                                             // like U* → T*
      : rank_(o.where()), address_(o.address()) {}

  constexpr rank_t where() const noexcept { return rank_; }
  // The same object of the symmetric heap on rank r (symmetric_allocate gave every rank one
  // at the same offset). Null stays null; error(arg) for memory outside the symmetric heap.
  global_ptr on(rank_t r) const {
    if (address_ == 0) return {};
    return global_ptr(r, pgas::detail::symmetric_address(rank_, address_, r));
  }
  constexpr std::uintptr_t address() const noexcept { return address_; }
  constexpr bool is_null() const noexcept { return address_ == 0; }
  constexpr explicit operator bool() const noexcept { return address_ != 0; }

  // Whether this process loads and stores the memory directly (null: true, as local() is).
  bool is_local() const noexcept { return is_null() || pgas::detail::is_local_rank(rank_); }
  // The raw pointer to the memory when is_local(); error(arg) otherwise.
  T* local() const {
    if (rank_ == pgas::detail::my_rank_if_open() && address_ != 0) [[likely]] {
      return reinterpret_cast<T*>(address_);
    }
    return static_cast<T*>(pgas::detail::local_or_raise(rank_, address_, element_bytes()));
  }

  // A reference to the element (global_ref.hpp): reads and writes through it go to the owner's
  // memory; global_ptr<const T> gives a read-only reference.
  global_ref<T> operator*() const noexcept requires(!std::is_void_v<T>) {
    return global_ref<T>(*this);
  }
  template <std::integral I>
  global_ref<T> operator[](I i) const noexcept requires(!std::is_void_v<T>) {
    return global_ref<T>(*this + static_cast<std::ptrdiff_t>(i));
  }

  // Arithmetic in units of T (not for void).
  constexpr global_ptr& operator+=(std::ptrdiff_t n) noexcept requires(!std::is_void_v<T>) {
    address_ += static_cast<std::uintptr_t>(n * static_cast<std::ptrdiff_t>(sizeof(T)));
    return *this;
  }
  constexpr global_ptr& operator-=(std::ptrdiff_t n) noexcept requires(!std::is_void_v<T>) {
    return *this += -n;
  }
  constexpr global_ptr& operator++() noexcept requires(!std::is_void_v<T>) { return *this += 1; }
  constexpr global_ptr& operator--() noexcept requires(!std::is_void_v<T>) { return *this -= 1; }
  constexpr global_ptr operator++(int) noexcept requires(!std::is_void_v<T>) {
    global_ptr old = *this;
    *this += 1;
    return old;
  }
  constexpr global_ptr operator--(int) noexcept requires(!std::is_void_v<T>) {
    global_ptr old = *this;
    *this -= 1;
    return old;
  }
  friend constexpr global_ptr operator+(global_ptr p, std::ptrdiff_t n) noexcept
      requires(!std::is_void_v<T>) {
    return p += n;
  }
  friend constexpr global_ptr operator+(std::ptrdiff_t n, global_ptr p) noexcept
      requires(!std::is_void_v<T>) {
    return p += n;
  }
  friend constexpr global_ptr operator-(global_ptr p, std::ptrdiff_t n) noexcept
      requires(!std::is_void_v<T>) {
    return p -= n;
  }
  // Elements between two pointers into one rank's memory; error(arg) across ranks.
  friend std::ptrdiff_t operator-(global_ptr a, global_ptr b) requires(!std::is_void_v<T>) {
    if (a.rank_ != b.rank_) [[unlikely]] {
      pgas::detail::different_ranks(a.rank_, b.rank_);
    }
    return (static_cast<std::ptrdiff_t>(a.address_) - static_cast<std::ptrdiff_t>(b.address_)) /
           static_cast<std::ptrdiff_t>(sizeof(T));
  }

  friend constexpr bool operator==(global_ptr a, global_ptr b) noexcept = default;
  // Ordered by rank, then address.
  friend constexpr std::strong_ordering operator<=>(global_ptr a, global_ptr b) noexcept = default;

  friend std::ostream& operator<<(std::ostream& os, global_ptr p) {
    if (p.is_null()) return os << "global_ptr(null)";
    return os << "global_ptr(rank " << p.rank_ << ", 0x" << std::hex << p.address_ << std::dec
              << ")";
  }

 private:
  static std::uintptr_t address_of(T* p) noexcept {
    return reinterpret_cast<std::uintptr_t>(const_cast<std::remove_cv_t<T>*>(p));
  }
  static constexpr std::size_t element_bytes() noexcept {
    if constexpr (std::is_void_v<T>) {
      return 1;
    } else {
      return sizeof(T);
    }
  }

  rank_t rank_ = 0;
  std::uintptr_t address_ = 0;
};

// Casts, as their std::shared_ptr namesakes: the same (rank, address) seen as another type.
// static_pointer_cast converts from and to void (class hierarchies, whose casts may move the
// address, are left out); reinterpret_pointer_cast between any types.
template <class T, class U>
requires(std::is_void_v<std::remove_cv_t<T>> || std::is_void_v<std::remove_cv_t<U>> ||
         std::is_same_v<std::remove_cv_t<T>, std::remove_cv_t<U>>)
    global_ptr<T> static_pointer_cast(const global_ptr<U>& p)
noexcept {
  (void)static_cast<T*>(static_cast<U*>(nullptr));  // no cast that drops const
  return global_ptr<T>(p.where(), p.address());
}
template <class T, class U>
global_ptr<T> reinterpret_pointer_cast(const global_ptr<U>& p) noexcept {
  return global_ptr<T>(p.where(), p.address());
}
template <class T, class U>
global_ptr<T> const_pointer_cast(const global_ptr<U>& p) noexcept {
  (void)const_cast<T*>(static_cast<U*>(nullptr));  // only where const_cast<T*> compiles
  return global_ptr<T>(p.where(), p.address());
}

}  // namespace oneside

template <class T>
struct std::hash<oneside::global_ptr<T>> {
  std::size_t operator()(const oneside::global_ptr<T>& p) const noexcept {
    const auto a = static_cast<std::uint64_t>(p.address());
    const auto r = static_cast<std::uint64_t>(static_cast<std::uint32_t>(p.where()));
    std::uint64_t h = a ^ (r * 0x9e3779b97f4a7c15ULL);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return static_cast<std::size_t>(h);
  }
};

// global_ref<T> (what *p and p[i] give) needs global_ptr<T> complete, so it comes last.
#include <oneside/pgas/global_ref.hpp>
