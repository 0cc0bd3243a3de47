// What the rma layer keeps per process (in the runtime's context, made by the first window):
// the table of striped accumulate locks in exposed memory (ops/stripe_lock.hpp), the id of the
// active-message handler that applies accumulates at their target, and the serial that
// numbers windows.
#pragma once

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

 private:
  transport::segment stripes_;
  transport::am_handler_id accumulate_handler_;
  std::uint64_t window_serial_ = 0;
  std::shared_ptr<window_registry> windows_ = std::make_shared<window_registry>();
};

}  // namespace oneside::rma::detail
