// Process groups: ordered sets of world ranks, with the set algebra of the spec (incl, excl,
// union, intersection, difference), rank translation and comparison. Groups are local
// objects: building one never communicates. PSCW synchronization takes groups.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include <oneside/runtime/types.hpp>

namespace oneside {

enum class group_relation : std::uint8_t {
  identical,  // same members in the same order (MPI_IDENT)
  similar,    // same members, another order (MPI_SIMILAR)
  unequal,    // different members (MPI_UNEQUAL)
};

class group {
 public:
  // The empty group.
  group() = default;
  // The group whose member i is world rank world_ranks[i]. Throws error(rank) for a rank
  // outside the world or a repeated rank. Needs the runtime open.
  explicit group(std::vector<rank_t> world_ranks);
  group(std::initializer_list<rank_t> world_ranks) : group(std::vector<rank_t>(world_ranks)) {}

  int size() const noexcept { return static_cast<int>(members_.size()); }
  bool empty() const noexcept { return members_.empty(); }
  // This process's rank in the group, or no_rank when it is not a member.
  rank_t rank() const;
  // World rank of member r. Throws error(rank) when r is not in [0, size()).
  rank_t world_rank(rank_t r) const;
  // Rank in this group of the process with world rank `w`, or no_rank.
  rank_t from_world(rank_t w) const noexcept;
  bool contains_world(rank_t w) const noexcept { return from_world(w) != no_rank; }
  std::span<const rank_t> world_ranks() const noexcept { return members_; }

  // Members ranks[0], ranks[1], … of this group, in that order (MPI_Group_incl).
  // Throws error(rank) for a rank outside [0, size()) or a repeated rank.
  group incl(std::span<const rank_t> ranks) const;
  group incl(std::initializer_list<rank_t> ranks) const { return incl(std::span(ranks)); }
  // This group without the members `ranks`, order kept (MPI_Group_excl).
  group excl(std::span<const rank_t> ranks) const;
  group excl(std::initializer_list<rank_t> ranks) const { return excl(std::span(ranks)); }

  friend bool operator==(const group& a, const group& b) noexcept {
    return a.members_ == b.members_;
  }

 private:
  std::vector<rank_t> members_;  // world ranks, in group order
  std::vector<rank_t> sorted_;   // (world rank, group rank) lookup: world ranks sorted
  std::vector<rank_t> order_;    // group rank of sorted_[i]
  void index();
};

// Members of a, then the members of b not in a (MPI_Group_union).
group group_union(const group& a, const group& b);
// Members of a that are also in b, in a's order (MPI_Group_intersection).
group group_intersection(const group& a, const group& b);
// Members of a that are not in b, in a's order (MPI_Group_difference).
group group_difference(const group& a, const group& b);
// Ranks in b of the members `ranks` of a; no_rank where absent; proc_null maps to proc_null
// (MPI_Group_translate_ranks). Throws error(rank) for a rank outside a.
std::vector<rank_t> translate_ranks(const group& a, std::span<const rank_t> ranks, const group& b);
group_relation compare(const group& a, const group& b) noexcept;

}  // namespace oneside
