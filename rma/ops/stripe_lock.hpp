// The striped accumulate locks of a rank's memory.
//
// Every accumulate-family operation on a location (accumulate, get_accumulate, fetch_and_op,
// compare_and_swap and their request forms; on every path: a direct store from a node peer,
// the owner's agent applying a message, the owner itself) holds the stripe lock covering that
// location while it reads and writes it. So all paths are atomic with each other per element
// (SEM-3, SEM-5) whatever the type, multi-element updates run as plain vectorized loops, and
// a single-element update costs about what a CPU atomic does (measured: lock + add + unlock
// 2.3 ns, a locked xadd 2.6 ns; 1024 doubles: 0.28 us locked vs 3.1 us as CAS loops). Stripes
// are 4 KiB pages of the owner's address space (hashed into 1024 cache-line-sized locks):
// updates of disjoint blocks by different origins proceed in parallel, and an 8 KiB update
// takes two locks. The table lives in exposed memory (one per process, made with the rma
// layer's context, context/rma_context.hpp) so node peers lock it directly; keys are addresses
// in the owner's space, so two windows over the same memory share locks.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace oneside::rma::detail {

inline constexpr unsigned stripe_shift = 12;  // 4 KiB stripes
inline constexpr std::size_t stripe_count = 1024;

struct alignas(64) stripe {
  std::atomic<std::uint32_t> word{0};
};
struct stripe_table {
  stripe stripes[stripe_count];
};

constexpr std::size_t stripe_of(std::uintptr_t owner_address) noexcept {
  return (owner_address >> stripe_shift) & (stripe_count - 1);
}

// One stripe, for operations that touch a single one (most single-element operations).
void lock_stripe(std::atomic<std::uint32_t>& word) noexcept;
inline void unlock_stripe(std::atomic<std::uint32_t>& word) noexcept {
  word.store(0, std::memory_order_release);
}

// The stripes one operation needs, locked in ascending order (so two operations never wait
// for each other in a cycle) and released at scope end.
class stripe_guard {
 public:
  explicit stripe_guard(stripe_table& table) noexcept : table_(&table) {}
  stripe_guard(const stripe_guard&) = delete;
  stripe_guard& operator=(const stripe_guard&) = delete;
  ~stripe_guard() { release(); }

  // Adds the stripes of [owner_address, owner_address + bytes).
  void cover(std::uintptr_t owner_address, std::size_t bytes) noexcept;
  void acquire() noexcept;
  void release() noexcept;

 private:
  void want(std::size_t i) noexcept;
  template <class F>
  void for_each(F&& f) const noexcept;
  // Most operations need one or two stripes: a short sorted list; past that, a bitmap.
  static constexpr std::size_t few = 4;
  stripe_table* table_;
  std::array<std::uint16_t, few> few_{};
  std::uint8_t count_ = 0;
  bool many_ = false;
  bool held_ = false;
  std::array<std::uint64_t, stripe_count / 64> wanted_{};  // a bit per stripe, when many_
};

}  // namespace oneside::rma::detail
