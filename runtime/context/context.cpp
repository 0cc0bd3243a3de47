// The runtime's context: created at open, destroyed at close.
#include "context/context.hpp"

#include <atomic>

#include "bootstrap/bootstrap.hpp"
#include "error/check.hpp"
#include "task/arena_impl.hpp"

namespace oneside::detail {
namespace {
std::atomic<context*> g_context{nullptr};
std::atomic<rank_t> g_world_rank{-1};
wait_params g_wait_params{};
}  // namespace

context::context() = default;
context::~context() = default;

const wait_params& current_wait_params() noexcept {
  return g_wait_params;
}

void set_wait_params(const wait_params& w) {
  g_wait_params = w;
}

void install_context(std::unique_ptr<context> c) {
  g_world_rank.store(c->boot->rank(), std::memory_order_relaxed);
  g_context.store(c.release(), std::memory_order_release);
}

std::unique_ptr<context> uninstall_context() {
  std::unique_ptr<context> c(g_context.exchange(nullptr, std::memory_order_acq_rel));
  g_world_rank.store(-1, std::memory_order_relaxed);
  return c;
}

context* current_context() noexcept {
  return g_context.load(std::memory_order_acquire);
}

context& require_context(std::string_view call) {
  context* c = current_context();
  if (c == nullptr) [[unlikely]] {
    raise(error_class::not_open, {.call = call},
          "the oneside runtime is not open in this process (create a oneside::runtime in main "
          "before using oneside, and use oneside only while it is open)");
  }
  return *c;
}

std::shared_ptr<void>& layer_state(layer l, std::string_view call) {
  return require_context(call).layer_state[static_cast<std::size_t>(l)];
}

namespace {
layer_open_fn g_layer_open[layer_count] = {};
}  // namespace

void register_layer_open(layer l, layer_open_fn fn) noexcept {
  g_layer_open[static_cast<std::size_t>(l)] = fn;
}

void run_layer_opens(context& c) {
  for (layer_open_fn fn : g_layer_open) {
    if (fn != nullptr) fn(c);
  }
}

void release_layer_states(context& c) noexcept {
  for (std::size_t i = layer_count; i-- > 0;) c.layer_state[i].reset();
}

rank_t world_rank_if_open() noexcept {
  return g_world_rank.load(std::memory_order_relaxed);
}

}  // namespace oneside::detail
