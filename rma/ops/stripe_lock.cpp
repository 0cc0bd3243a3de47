// The stripe locks (see stripe_lock.hpp).
#include "ops/stripe_lock.hpp"

#include <bit>

#include <oneside/runtime/wait.hpp>

namespace oneside::rma::detail {

void stripe_guard::want(std::size_t i) noexcept {
  if (!many_) {
    std::size_t at = 0;
    while (at < count_ && few_[at] < i) ++at;
    if (at < count_ && few_[at] == i) return;
    if (count_ < few) {
      for (std::size_t k = count_; k > at; --k) few_[k] = few_[k - 1];
      few_[at] = static_cast<std::uint16_t>(i);
      ++count_;
      return;
    }
    many_ = true;
    for (std::size_t k = 0; k < count_; ++k)
      wanted_[few_[k] / 64] |= std::uint64_t{1} << (few_[k] % 64);
  }
  wanted_[i / 64] |= std::uint64_t{1} << (i % 64);
}

void stripe_guard::cover(std::uintptr_t owner_address, std::size_t bytes) noexcept {
  if (bytes == 0) return;
  const std::uintptr_t first = owner_address >> stripe_shift;
  const std::uintptr_t last = (owner_address + bytes - 1) >> stripe_shift;
  if (last - first >= stripe_count) {
    many_ = true;
    wanted_.fill(~std::uint64_t{0});  // the range wraps the whole table
    return;
  }
  for (std::uintptr_t s = first; s <= last; ++s) want(s & (stripe_count - 1));
}

// Calls f(stripe index) for the wanted stripes, in ascending order.
template <class F>
void stripe_guard::for_each(F&& f) const noexcept {
  if (!many_) {
    for (std::size_t k = 0; k < count_; ++k) f(static_cast<std::size_t>(few_[k]));
    return;
  }
  for (std::size_t word = 0; word < wanted_.size(); ++word) {
    for (std::uint64_t bits = wanted_[word]; bits != 0; bits &= bits - 1) {
      f(word * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
    }
  }
}

void lock_stripe(std::atomic<std::uint32_t>& w) noexcept {
  std::uint32_t expected = 0;
  if (w.compare_exchange_strong(expected, 1, std::memory_order_acquire)) return;
  oneside::wait_until([&] {
    std::uint32_t e = 0;
    return w.load(std::memory_order_relaxed) == 0 &&
           w.compare_exchange_weak(e, 1, std::memory_order_acquire);
  });
}

void stripe_guard::acquire() noexcept {
  for_each([&](std::size_t i) { lock_stripe(table_->stripes[i].word); });
  held_ = true;
}

void stripe_guard::release() noexcept {
  if (!held_) return;
  for_each([&](std::size_t i) { table_->stripes[i].word.store(0, std::memory_order_release); });
  held_ = false;
}

}  // namespace oneside::rma::detail
