// The runtime's registry of the layers above it: where each keeps its per-process state (its
// tables, its heap) without the runtime knowing who they are (STYLE.md R7: no globals).
//
// A layer registers once per process, from a static initializer of its library, with a name
// (for messages) and its depth above the runtime (1 for the layer right above, 2 for the one
// above that). At the end of every open, on every rank, with the world team, the transport and
// the arena ready, the runtime runs the layers' open hooks in increasing depth; at close it
// releases their state in decreasing depth, before the transport goes.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace oneside::detail {

// A registered layer's slot in the open runtime.
class layer_key {
 public:
  constexpr layer_key() noexcept = default;
  [[nodiscard]] constexpr bool is_valid() const noexcept { return index_ != none; }

 private:
  friend class layer_registry;
  static constexpr std::size_t none = ~std::size_t{0};
  constexpr explicit layer_key(std::size_t index) noexcept : index_(index) {}
  std::size_t index_ = none;
};

// The most layers that can register (a process holds rma and pgas today).
inline constexpr std::size_t max_layers = 8;

// Makes the layer's state at open (collective when the layer needs it so: every rank runs
// it at the same point of open). Null: the layer makes its state on first use instead.
using layer_open_fn = std::shared_ptr<void> (*)();

// Registers a layer (before any runtime opens; not thread-safe, static initializers only).
// Aborts with a message when more than max_layers register.
layer_key register_layer(std::string_view name, int depth, layer_open_fn open) noexcept;

// The layer's state in the open runtime (null until made); error(not_open) naming `call` when
// no runtime is open.
std::shared_ptr<void>& layer_state(layer_key key, std::string_view call);

}  // namespace oneside::detail
