// What a team handle points to: its members, this process's rank among them, and the
// collective engine that runs its collectives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <oneside/runtime/group.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/wait.hpp>

#include "collectives/coll_engine.hpp"
#include "runtime/team_copy.hpp"

namespace oneside::detail {

struct context;

struct team_impl {
  std::uint64_t id = 0;
  oneside::group members;  // world ranks, in team order
  rank_t rank = 0;
  int size = 0;
  std::unique_ptr<coll_engine> coll;
  std::uint64_t splits = 0;       // split() calls so far: part of the children's ids
  std::uint64_t collectives = 0;  // collective calls so far (hang diagnosis: which one waits)

  // The world team, made when the runtime opens (collective over the bootstrap).
  static team make_world();
  static team wrap(std::shared_ptr<team_impl> impl) { return team(std::move(impl)); }
};

// For hang diagnosis: "team #id, rank r of n (world ranks …), its collective #k" of the
// team_impl at `team` (a wait_scope's describe).
void describe_team(const void* team, rank_t root, std::string& out) noexcept;

// Opens the wait scope of collective `call` on `t` (counting it), naming `root` if any.
inline wait_scope collective_scope(const char* call, team_impl& t, rank_t root = -1) noexcept {
  ++t.collectives;
  return wait_scope(call, root, describe_team, &t);
}

// The barrier algorithm ONESIDE_BARRIER asks for (auto: by oversubscription).
coll_engine::barrier_kind barrier_kind_setting(const context& c);

// The implementation behind a team handle, checked: error(comm) for a null team and
// error(not_open) when the runtime is closed. `call` names the API call for the message.
team_impl& team_of(const team& t, std::string_view call);

}  // namespace oneside::detail
