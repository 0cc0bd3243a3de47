// The rma layer's per-process context (see rma_context.hpp).
#include "context/rma_context.hpp"

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
    : stripes_(transport::current().allocate_segment(sizeof(stripe_table))),
      accumulate_handler_(
          transport::register_am_handler("oneside.rma.accumulate", &apply_accumulate_message)) {
  new (stripes_.base()) stripe_table{};
}

rma_context& rma_context::get(std::string_view call) {
  static std::mutex creation;  // windows may be created by several threads at once
  std::lock_guard lock(creation);
  std::shared_ptr<void>& slot = oneside::detail::layer_state(g_layer, call);
  if (!slot) slot = std::make_shared<rma_context>();
  return *static_cast<rma_context*>(slot.get());
}

}  // namespace oneside::rma::detail
