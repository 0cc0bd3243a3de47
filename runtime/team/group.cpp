// Process groups: ordered sets of world ranks and their set algebra (local, no communication).
#include <algorithm>
#include <numeric>
#include <string>

#include <oneside/runtime/group.hpp>

#include "bootstrap/bootstrap.hpp"
#include "context/context.hpp"
#include "runtime/check.hpp"

namespace oneside {
namespace {

// The number of ranks in the job (the world team may not exist yet: it is made of groups).
int world_size_for(std::string_view call) {
  return detail::require_context(call).boot->size();
}

void check_member_rank(rank_t r, int size, std::string_view call) {
  ONESIDE_CHECK(
      r >= 0 && r < size, error_class::rank, {.call = call},
      "rank " + std::to_string(r) + " is not in the group [0, " + std::to_string(size) + ")");
}

}  // namespace

group::group(std::vector<rank_t> world_ranks) : members_(std::move(world_ranks)) {
  const int n = world_size_for("group");
  for (rank_t w : members_) {
    ONESIDE_CHECK(w >= 0 && w < n, error_class::rank, {.call = "group"},
                  "world rank " + std::to_string(w) + " is not in [0, " + std::to_string(n) + ")");
  }
  index();
  ONESIDE_CHECK(std::adjacent_find(sorted_.begin(), sorted_.end()) == sorted_.end(),
                error_class::rank, {.call = "group"}, "a world rank appears twice in the group");
}

void group::index() {
  std::vector<rank_t> idx(members_.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](rank_t a, rank_t b) {
    return members_[static_cast<std::size_t>(a)] < members_[static_cast<std::size_t>(b)];
  });
  sorted_.resize(members_.size());
  order_ = idx;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    sorted_[i] = members_[static_cast<std::size_t>(idx[i])];
  }
}

rank_t group::rank() const {
  return from_world(detail::require_context("group::rank").boot->rank());
}

rank_t group::world_rank(rank_t r) const {
  check_member_rank(r, size(), "group::world_rank");
  return members_[static_cast<std::size_t>(r)];
}

rank_t group::from_world(rank_t w) const noexcept {
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), w);
  if (it == sorted_.end() || *it != w) return no_rank;
  return order_[static_cast<std::size_t>(it - sorted_.begin())];
}

group group::incl(std::span<const rank_t> ranks) const {
  std::vector<rank_t> out;
  out.reserve(ranks.size());
  for (rank_t r : ranks) {
    check_member_rank(r, size(), "group::incl");
    out.push_back(members_[static_cast<std::size_t>(r)]);
  }
  return group(std::move(out));  // rejects repeats
}

group group::excl(std::span<const rank_t> ranks) const {
  std::vector<bool> drop(members_.size(), false);
  for (rank_t r : ranks) {
    check_member_rank(r, size(), "group::excl");
    ONESIDE_CHECK(!drop[static_cast<std::size_t>(r)], error_class::rank, {.call = "group::excl"},
                  "rank " + std::to_string(r) + " appears twice");
    drop[static_cast<std::size_t>(r)] = true;
  }
  std::vector<rank_t> out;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (!drop[i]) out.push_back(members_[i]);
  }
  return group(std::move(out));
}

group group_union(const group& a, const group& b) {
  std::vector<rank_t> out(a.world_ranks().begin(), a.world_ranks().end());
  for (rank_t w : b.world_ranks()) {
    if (!a.contains_world(w)) out.push_back(w);
  }
  return group(std::move(out));
}

group group_intersection(const group& a, const group& b) {
  std::vector<rank_t> out;
  for (rank_t w : a.world_ranks()) {
    if (b.contains_world(w)) out.push_back(w);
  }
  return group(std::move(out));
}

group group_difference(const group& a, const group& b) {
  std::vector<rank_t> out;
  for (rank_t w : a.world_ranks()) {
    if (!b.contains_world(w)) out.push_back(w);
  }
  return group(std::move(out));
}

std::vector<rank_t> translate_ranks(const group& a, std::span<const rank_t> ranks, const group& b) {
  std::vector<rank_t> out;
  out.reserve(ranks.size());
  for (rank_t r : ranks) {
    if (r == proc_null) {
      out.push_back(proc_null);
      continue;
    }
    out.push_back(b.from_world(a.world_rank(r)));
  }
  return out;
}

group_relation compare(const group& a, const group& b) noexcept {
  if (a.world_ranks().size() != b.world_ranks().size()) return group_relation::unequal;
  if (std::equal(a.world_ranks().begin(), a.world_ranks().end(), b.world_ranks().begin())) {
    return group_relation::identical;
  }
  for (rank_t w : a.world_ranks()) {
    if (!b.contains_world(w)) return group_relation::unequal;
  }
  return group_relation::similar;
}

}  // namespace oneside
