// The rma layer's per-process state and the stripe locks (see rma_state.hpp).
#include "state/rma_state.hpp"

#include <bit>
#include <memory>
#include <mutex>

#include <oneside/runtime/wait.hpp>

#include "context/context.hpp"
#include "ops/accumulate.hpp"

namespace oneside::rma::detail {

void stripe_guard::cover(std::uintptr_t owner_address, std::size_t bytes) noexcept {
  if (bytes == 0) return;
  const std::uintptr_t first = owner_address >> stripe_shift;
  const std::uintptr_t last = (owner_address + bytes - 1) >> stripe_shift;
  if (last - first >= stripe_count) {
    wanted_.fill(~std::uint64_t{0});  // the range wraps the whole table
    return;
  }
  for (std::uintptr_t s = first; s <= last; ++s) want(s & (stripe_count - 1));
}

// Calls f(stripe index) for the wanted stripes, in ascending order.
template <class F>
void for_each_wanted(const std::array<std::uint64_t, stripe_count / 64>& wanted, F&& f) {
  for (std::size_t word = 0; word < wanted.size(); ++word) {
    for (std::uint64_t bits = wanted[word]; bits != 0; bits &= bits - 1) {
      f(word * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
    }
  }
}

void stripe_guard::acquire() noexcept {
  for_each_wanted(wanted_, [&](std::size_t i) {
    std::atomic<std::uint32_t>& w = table_->stripes[i].word;
    std::uint32_t expected = 0;
    if (!w.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
      oneside::wait_until([&] {
        std::uint32_t e = 0;
        return w.load(std::memory_order_relaxed) == 0 &&
               w.compare_exchange_weak(e, 1, std::memory_order_acquire);
      });
    }
  });
  held_ = true;
}

void stripe_guard::release() noexcept {
  if (!held_) return;
  for_each_wanted(
      wanted_, [&](std::size_t i) { table_->stripes[i].word.store(0, std::memory_order_release); });
  held_ = false;
}

rma_state::rma_state()
    : stripes_(transport::current().allocate_segment(sizeof(stripe_table))),
      accumulate_handler_(
          transport::register_am_handler("oneside.rma.accumulate", &apply_accumulate_message)) {
  new (stripes_.base()) stripe_table{};
}

rma_state& rma_state::get(std::string_view call) {
  static std::mutex creation;  // windows may be created by several threads at once
  std::lock_guard lock(creation);
  std::shared_ptr<void>& slot = oneside::detail::layer_state(oneside::detail::layer::rma, call);
  if (!slot) slot = std::make_shared<rma_state>();
  return *static_cast<rma_state*>(slot.get());
}

}  // namespace oneside::rma::detail
