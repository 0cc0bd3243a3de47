// The rma layer's per-process context (see rma_context.hpp).
#include "context/rma_context.hpp"

#include <bit>
#include <memory>
#include <mutex>
#include <new>

#include "ops/accumulate.hpp"
#include "runtime/layers.hpp"

namespace oneside::rma::detail {
namespace {
// rma makes its context on first use (the first window), not at every open.
const oneside::detail::layer_key g_layer = oneside::detail::register_layer("rma", 1, nullptr);
}  // namespace

rma_context::rma_context()
    : fetch_slots_(transport::current().allocate_segment(fetch_slots * fetch_slot_bytes)),
      stripes_(transport::current().allocate_segment(sizeof(stripe_table))),
      accumulate_handler_(
          transport::register_am_handler("oneside.rma.accumulate", &apply_accumulate_message)) {
  new (stripes_.base()) stripe_table{};
}

std::byte* rma_context::take_fetch_slot() noexcept {
  std::uint64_t free = fetch_free_.load(std::memory_order_relaxed);
  while (free != 0) {
    const auto slot = static_cast<std::size_t>(std::countr_zero(free));
    if (fetch_free_.compare_exchange_weak(free, free & (free - 1), std::memory_order_acquire)) {
      return static_cast<std::byte*>(fetch_slots_.base()) + slot * fetch_slot_bytes;
    }
  }
  return nullptr;
}

void rma_context::give_fetch_slot(std::byte* slot) noexcept {
  const auto index = static_cast<std::size_t>(slot - static_cast<std::byte*>(fetch_slots_.base())) /
                     fetch_slot_bytes;
  fetch_free_.fetch_or(std::uint64_t{1} << index, std::memory_order_release);
}

rma_context& rma_context::get(std::string_view call) {
  static std::mutex creation;  // windows may be created by several threads at once
  std::lock_guard lock(creation);
  std::shared_ptr<void>& slot = oneside::detail::layer_state(g_layer, call);
  if (!slot) slot = std::make_shared<rma_context>();
  return *static_cast<rma_context*>(slot.get());
}

}  // namespace oneside::rma::detail
