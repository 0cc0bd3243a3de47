// The runtime's state: the one place that holds what would otherwise be globals (STYLE.md R7).
// Created by runtime's open, destroyed by its close; everything else reaches it from here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include <oneside/runtime/team.hpp>
#include <oneside/runtime/topology.hpp>
#include <oneside/runtime/types.hpp>

#include "runtime/layers.hpp"
#include "runtime/transport.hpp"

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
  std::uint64_t next_team_id = 1;                 // team ids are agreed collectively (see team.cpp)
  std::shared_ptr<void> layer_state[max_layers];  // the layers above (runtime/layers.hpp)
};

// The layers above the runtime (registered in runtime/layers.hpp), run and released here.
class layer_registry {
 public:
  // Runs the registered open hooks in increasing depth (runtime open).
  static void open_all(context& c);
  // Releases the layers' state in decreasing depth (runtime close).
  static void release_all(context& c) noexcept;
  static constexpr layer_key key(std::size_t index) noexcept { return layer_key(index); }
  static std::shared_ptr<void>& slot(context& c, layer_key key) noexcept {
    return c.layer_state[key.index_];
  }
};

// The open runtime's context, or null.
context* current_context() noexcept;
// The open runtime's context; throws error(not_open) naming `call` when none is open.
context& require_context(std::string_view call);
// This process's world rank while the runtime is open, else -1 (for error messages).
rank_t world_rank_if_open() noexcept;

}  // namespace oneside::detail
