// The runtime's state: the one place that holds what would otherwise be globals (STYLE.md R7).
// Created by runtime's open, destroyed by its close; everything else reaches it from here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include <oneside/runtime/team.hpp>
#include <oneside/runtime/topology.hpp>
#include <oneside/runtime/transport.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside::detail {

class bootstrap;
class arena_impl;

// How waits escalate (read from the settings at open; defaults before).
struct wait_params {
  std::int64_t spin_ns = 20000;
  std::int64_t yield_ns = 200000;
  std::int64_t sleep_max_ns = 1000000;
  bool poll_progress = false;  // ONESIDE_AGENT=poll: waits run the transport's progress
};
const wait_params& current_wait_params() noexcept;

// State the layers above keep per process (the rma layer's lock tables, the pgas heap). The
// runtime only owns it: it is released at close, before the transport.
enum class layer : std::uint8_t { rma, pgas };
inline constexpr std::size_t layer_count = 2;

struct context {
  context();
  ~context();
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  std::unique_ptr<bootstrap> boot;
  std::unique_ptr<transport::backend> transport;
  std::unique_ptr<arena_impl> arena;
  team world;
  team local;
  rank_topology topology;
  bool oversubscribed = false;
  std::uint64_t next_team_id = 1;  // team ids are agreed collectively (see team.cpp)
  std::shared_ptr<void> layer_state[layer_count];
};

// The slot of `l` in the open runtime's context (error(not_open) when none is open).
std::shared_ptr<void>& layer_state(layer l, std::string_view call);

// An upper layer's hook run at the end of every runtime open, on every rank and in layer
// order, with the world team, the transport and the arena ready: where a layer makes state
// that must be collective (the pgas heap's job-wide window) into its layer_state slot.
// Registered once per process before the runtime opens (a static initializer of the layer's
// library); the state goes at close, upper layers first, before the transport.
using layer_open_fn = void (*)(context&);
void register_layer_open(layer l, layer_open_fn fn) noexcept;
// Runs the registered hooks (runtime open).
void run_layer_opens(context& c);
// Releases the layers' state, upper layers first.
void release_layer_states(context& c) noexcept;

// The open runtime's context, or null.
context* current_context() noexcept;
// The open runtime's context; throws error(not_open) naming `call` when none is open.
context& require_context(std::string_view call);
// This process's world rank while the runtime is open, else -1 (for error messages).
rank_t world_rank_if_open() noexcept;

}  // namespace oneside::detail
