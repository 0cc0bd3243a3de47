// The runtime's context: created at open, destroyed at close.
#include "context/context.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "bootstrap/bootstrap.hpp"
#include "runtime/check.hpp"
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

namespace {
struct registered_layer {
  std::string_view name;
  int depth = 0;
  layer_open_fn open = nullptr;
};
// Constant-initialized: layers register from static initializers of other libraries.
registered_layer g_layers[max_layers] = {};
std::size_t g_layer_count = 0;

// The registered layers' slots in increasing depth (registration order among equals).
std::array<std::size_t, max_layers> layers_by_depth() noexcept {
  std::array<std::size_t, max_layers> order{};
  for (std::size_t i = 0; i < g_layer_count; ++i) order[i] = i;
  std::stable_sort(
      order.begin(), order.begin() + static_cast<std::ptrdiff_t>(g_layer_count),
      [](std::size_t a, std::size_t b) { return g_layers[a].depth < g_layers[b].depth; });
  return order;
}
}  // namespace

layer_key register_layer(std::string_view name, int depth, layer_open_fn open) noexcept {
  if (g_layer_count == max_layers) {
    std::fprintf(stderr, "oneside: cannot register layer %.*s: %zu layers are registered already\n",
                 static_cast<int>(name.size()), name.data(), max_layers);
    std::abort();
  }
  g_layers[g_layer_count] = {name, depth, open};
  return layer_registry::key(g_layer_count++);
}

std::shared_ptr<void>& layer_state(layer_key key, std::string_view call) {
  return layer_registry::slot(require_context(call), key);
}

void layer_registry::open_all(context& c) {
  const std::array<std::size_t, max_layers> order = layers_by_depth();
  for (std::size_t i = 0; i < g_layer_count; ++i) {
    const registered_layer& l = g_layers[order[i]];
    if (l.open != nullptr) c.layer_state[order[i]] = l.open();
  }
}

void layer_registry::release_all(context& c) noexcept {
  const std::array<std::size_t, max_layers> order = layers_by_depth();
  for (std::size_t i = g_layer_count; i-- > 0;) c.layer_state[order[i]].reset();
}

rank_t world_rank_if_open() noexcept {
  return g_world_rank.load(std::memory_order_relaxed);
}

}  // namespace oneside::detail
