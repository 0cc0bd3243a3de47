// The rma layer's per-process context (see rma_context.hpp).
#include "context/rma_context.hpp"

#include <memory>
#include <mutex>
#include <new>

#include "context/context.hpp"
#include "ops/accumulate.hpp"

namespace oneside::rma::detail {

rma_context::rma_context()
    : stripes_(transport::current().allocate_segment(sizeof(stripe_table))),
      accumulate_handler_(
          transport::register_am_handler("oneside.rma.accumulate", &apply_accumulate_message)) {
  new (stripes_.base()) stripe_table{};
}

rma_context& rma_context::get(std::string_view call) {
  static std::mutex creation;  // windows may be created by several threads at once
  std::lock_guard lock(creation);
  std::shared_ptr<void>& slot = oneside::detail::layer_state(oneside::detail::layer::rma, call);
  if (!slot) slot = std::make_shared<rma_context>();
  return *static_cast<rma_context*>(slot.get());
}

}  // namespace oneside::rma::detail
