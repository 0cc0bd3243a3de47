// What the rma layer keeps per process (in the runtime's context, made by the first window):
// the table of striped accumulate locks in exposed memory (ops/stripe_lock.hpp), the id of the
// active-message handler that applies accumulates at their target, the slots where targets'
// agents put the old values of fetching operations, and the serial that numbers windows.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "ops/stripe_lock.hpp"
#include "runtime/transport.hpp"
#include "window/window_impl.hpp"

namespace oneside::rma::detail {

class rma_context {
 public:
  rma_context();
  // This process's context; made by the first window. error(not_open) without a runtime.
  static rma_context& get(std::string_view call);

  stripe_table& stripes() noexcept { return *static_cast<stripe_table*>(stripes_.base()); }
  std::uintptr_t stripes_address() const noexcept { return stripes_.address(); }
  transport::am_handler_id accumulate_handler() const noexcept { return accumulate_handler_; }
  std::uint64_t next_window_serial() noexcept { return ++window_serial_; }
  // This process's windows (hang diagnosis; window_impl.hpp).
  const std::shared_ptr<window_registry>& windows() const noexcept { return windows_; }

  // Where a target's agent puts the old values of a fetching operation it applies (at most
  // fetch_slot_bytes): a slot of exposed memory, which the agents of node peers store to
  // directly instead of by cross-memory attach (a system call and the kernel's access checks
  // per operation). Null when every slot is taken (the caller then uses memory of its own).
  static constexpr std::size_t fetch_slot_bytes = 256;
  std::byte* take_fetch_slot() noexcept;
  void give_fetch_slot(std::byte* slot) noexcept;

 private:
  static constexpr std::size_t fetch_slots = 64;  // a bit each in fetch_free_
  transport::segment fetch_slots_;
  std::atomic<std::uint64_t> fetch_free_{~std::uint64_t{0}};
  transport::segment stripes_;
  transport::am_handler_id accumulate_handler_;
  std::uint64_t window_serial_ = 0;
  std::shared_ptr<window_registry> windows_ = std::make_shared<window_registry>();
};

}  // namespace oneside::rma::detail
