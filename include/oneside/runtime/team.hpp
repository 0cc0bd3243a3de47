// Teams: an ordered set of processes that run collectives together (MPI's communicator,
// UPC++'s team). world() holds every rank; split() makes sub-teams; local_team() holds the
// ranks that share this node's memory. A team is a cheap handle; copies name the same team.
#pragma once

#include <cstdint>
#include <memory>

#include <oneside/runtime/group.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

namespace detail {
struct team_impl;
}

class team {
 public:
  // The color that leaves a process out of every team made by split() (MPI_UNDEFINED).
  static constexpr int no_color = -1;

  // A null team: is_valid() is false, every other call throws error(comm).
  team() = default;

  bool is_valid() const noexcept { return impl_ != nullptr; }
  // This process's rank in the team, and the number of members.
  rank_t rank() const;
  int size() const;
  // The members as a group of world ranks.
  const oneside::group& group() const;
  // World rank of member r, and team rank of world rank w (no_rank when not a member).
  rank_t to_world(rank_t r) const;
  rank_t from_world(rank_t w) const;
  // Identifier of this team, the same on every member.
  std::uint64_t id() const;

  // Collective over this team: members with equal color form a new team, ordered by key,
  // ties broken by rank in this team (MPI_Comm_split). A member passing no_color gets a null
  // team. Throws error(arg) for a negative color other than no_color.
  team split(int color, int key) const;

  friend bool operator==(const team& a, const team& b) noexcept { return a.impl_ == b.impl_; }

  detail::team_impl& impl() const;  // for the layers above; throws error(comm) on a null team

 private:
  friend struct detail::team_impl;
  explicit team(std::shared_ptr<detail::team_impl> impl) noexcept : impl_(std::move(impl)) {}
  std::shared_ptr<detail::team_impl> impl_;
};

// Every rank of the job. Throws error(not_open) when the runtime is not open.
const team& world();
// The ranks of world() that share memory with this one (same node), in world order.
const team& local_team();

}  // namespace oneside
