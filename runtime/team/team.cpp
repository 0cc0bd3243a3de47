// Teams: the world team, split(), the node-local team and the team accessors.
#include <algorithm>
#include <cstring>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/team.hpp>

#include "bootstrap/bootstrap.hpp"
#include "context/context.hpp"
#include "runtime/check.hpp"
#include "runtime/settings.hpp"
#include "team/team_impl.hpp"

namespace oneside {
namespace detail {

coll_engine::barrier_kind barrier_kind_setting(const context& c) {
  const std::string b = setting_string("ONESIDE_BARRIER");
  if (b == "central") return coll_engine::barrier_kind::central;
  if (b == "dissemination") return coll_engine::barrier_kind::dissemination;
  return c.oversubscribed ? coll_engine::barrier_kind::central
                          : coll_engine::barrier_kind::dissemination;
}

team_impl& team_of(const team& t, std::string_view call) {
  require_context(call);
  ONESIDE_CHECK(t.is_valid(), error_class::comm, {.call = call}, "the team is null");
  return t.impl();
}

team team_impl::make_world() {
  context& c = require_context("runtime");
  auto impl = std::make_shared<team_impl>();
  const int n = c.boot->size();
  std::vector<rank_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  impl->id = 0;
  impl->rank = c.boot->rank();
  impl->size = n;
  impl->coll = std::make_unique<coll_engine>(
      *c.transport, static_cast<std::size_t>(setting_int("ONESIDE_COLL_SLOT_BYTES")),
      static_cast<std::size_t>(setting_int("ONESIDE_COLL_SLOTS")), impl->rank, all,
      barrier_kind_setting(c));
  impl->members = group(std::move(all));
  const std::uint64_t mine = impl->coll->area_address();
  std::vector<std::uint64_t> areas(static_cast<std::size_t>(n));
  c.boot->allgather(&mine, areas.data(), sizeof mine);
  impl->coll->connect(areas);
  c.boot->barrier();  // every member connected to (pull: pinned) every area
  return team(std::move(impl));
}

}  // namespace detail

namespace {

// An area word with this bit set says its member failed (the low byte: its error class);
// areas are user-space addresses, far below it.
constexpr std::uint64_t failed_area = std::uint64_t{1} << 63;

// Ids of split teams: the parent's id, its split count and the color, mixed (splitmix64).
std::uint64_t child_id(std::uint64_t parent, std::uint64_t split, int color) {
  std::uint64_t x =
      parent * 0x9E3779B97F4A7C15ULL ^ (split + 1) * 0xBF58476D1CE4E5B9ULL ^
      static_cast<std::uint64_t>(static_cast<std::uint32_t>(color)) * 0x94D049BB133111EBULL;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return x == 0 ? 1 : x;
}

struct split_record {
  std::int32_t color;
  std::int32_t key;
  std::uint64_t area;
};

}  // namespace

rank_t team::rank() const {
  return detail::team_of(*this, "team::rank").rank;
}
int team::size() const {
  return detail::team_of(*this, "team::size").size;
}
const oneside::group& team::group() const {
  return detail::team_of(*this, "team::group").members;
}
std::uint64_t team::id() const {
  return detail::team_of(*this, "team::id").id;
}

rank_t team::to_world(rank_t r) const {
  return detail::team_of(*this, "team::to_world").members.world_rank(r);
}

rank_t team::from_world(rank_t w) const {
  return detail::team_of(*this, "team::from_world").members.from_world(w);
}

detail::team_impl& team::impl() const {
  ONESIDE_CHECK(impl_ != nullptr, error_class::comm, {.call = "team"}, "the team is null");
  return *impl_;
}

namespace detail {

void describe_team(const void* team, rank_t root, std::string& out) noexcept {
  try {
    const auto& t = *static_cast<const team_impl*>(team);
    out.append(t.id == 0 ? "world team" : "team #" + std::to_string(t.id));
    out.append(", rank ").append(std::to_string(t.rank)).append(" of ");
    out.append(std::to_string(t.size));
    if (t.id != 0 && t.size <= 16) {
      out.append(" (world ranks");
      for (rank_t w : t.members.world_ranks()) out.append(" ").append(std::to_string(w));
      out.append(")");
    }
    if (root >= 0) out.append(", root ").append(std::to_string(root));
    out.append("; its collective #").append(std::to_string(t.collectives)).append(" on this team");
  } catch (...) {
    // Out of memory: the description stays short.
  }
}

team duplicate_team(const team& parent, std::size_t slot_bytes, std::size_t slots) {
  team_impl& p = team_of(parent, "duplicate_team");
  context& c = require_context("duplicate_team");
  const std::uint64_t split_no = p.splits++;
  std::vector<rank_t> members(p.members.world_ranks().begin(), p.members.world_ranks().end());
  auto engine = std::make_unique<coll_engine>(*c.transport, slot_bytes, slots, p.rank, members,
                                              barrier_kind_setting(c));
  const std::uint64_t mine = engine->area_address();
  std::vector<std::uint64_t> areas(static_cast<std::size_t>(p.size));
  allgather(parent, &mine, 1, datatype::of<std::uint64_t>(), areas.data());
  auto impl = std::make_shared<team_impl>();
  impl->id = child_id(p.id, split_no, 0);
  impl->size = p.size;
  impl->rank = p.rank;
  impl->members = p.members;
  engine->connect(areas);
  impl->coll = std::move(engine);
  impl->coll->barrier();  // every member connected to every area before anyone drops its own
  return team_impl::wrap(std::move(impl));
}

}  // namespace detail

team team::split(int color, int key) const {
  detail::team_impl& parent = detail::team_of(*this, "team::split");
  const auto waiting = detail::collective_scope("team::split", parent);
  ONESIDE_CHECK(color >= 0 || color == no_color, error_class::arg, {.call = "team::split"},
                "color " + std::to_string(color) + " is negative (use team::no_color to opt out)");
  detail::context& c = detail::require_context("team::split");
  const std::uint64_t split_no = parent.splits++;

  // Members make their area first, so one exchange gives everyone everything.
  std::unique_ptr<detail::coll_engine> engine;
  std::vector<rank_t> world_members;
  split_record mine{color, key, 0};
  std::exception_ptr failed;  // this member's error making its area
  std::vector<split_record> all(static_cast<std::size_t>(parent.size));
  // The area size needs the member count; exchange (color, key) first.
  {
    std::vector<std::int32_t> pairs(2 * static_cast<std::size_t>(parent.size));
    const std::int32_t me[2] = {color, key};
    allgather(*this, me, 2, datatype::of<std::int32_t>(), pairs.data());
    for (std::size_t r = 0; r < all.size(); ++r) {
      all[r].color = pairs[2 * r];
      all[r].key = pairs[2 * r + 1];
    }
  }
  std::vector<rank_t> order;  // parent ranks of my new team's members, in new-team order
  if (color != no_color) {
    for (rank_t r = 0; r < parent.size; ++r) {
      if (all[static_cast<std::size_t>(r)].color == color) order.push_back(r);
    }
    std::stable_sort(order.begin(), order.end(), [&](rank_t a, rank_t b) {
      return all[static_cast<std::size_t>(a)].key < all[static_cast<std::size_t>(b)].key;
    });
    for (rank_t r : order) world_members.push_back(parent.members.world_rank(r));
    const auto my_pos =
        static_cast<rank_t>(std::find(order.begin(), order.end(), parent.rank) - order.begin());
    try {
      engine = std::make_unique<detail::coll_engine>(
          *c.transport, static_cast<std::size_t>(detail::setting_int("ONESIDE_COLL_SLOT_BYTES")),
          static_cast<std::size_t>(detail::setting_int("ONESIDE_COLL_SLOTS")), my_pos,
          world_members, detail::barrier_kind_setting(c));
      mine.area = engine->area_address();
    } catch (const error& e) {
      failed = std::current_exception();
      mine.area = failed_area | static_cast<std::uint64_t>(e.error_class());
    }
  }
  std::vector<std::uint64_t> areas(static_cast<std::size_t>(parent.size));
  allgather(*this, &mine.area, 1, datatype::of<std::uint64_t>(), areas.data());
  // A member that could not make its area (no room in /dev/shm, a bad setting) would leave
  // the others waiting for it in the new team's first collective: every rank of the parent
  // raises instead, that member its own error and the others one naming it (issue 18).
  for (rank_t r = 0; r < parent.size; ++r) {
    const std::uint64_t a = areas[static_cast<std::size_t>(r)];
    if ((a & failed_area) == 0) continue;
    if (failed) std::rethrow_exception(failed);
    detail::raise(static_cast<error_class>(a & 0xff), {.call = "team::split"},
                  "rank " + std::to_string(r) +
                      " of the parent team could not make its part of the new team (its "
                      "collective area), so no team was made");
  }
  if (color == no_color) return team();

  auto impl = std::make_shared<detail::team_impl>();
  impl->id = child_id(parent.id, split_no, color);
  impl->size = static_cast<int>(order.size());
  impl->rank =
      static_cast<rank_t>(std::find(order.begin(), order.end(), parent.rank) - order.begin());
  impl->members = oneside::group(world_members);
  std::vector<std::uint64_t> member_areas;
  for (rank_t r : order) member_areas.push_back(areas[static_cast<std::size_t>(r)]);
  engine->connect(member_areas);
  impl->coll = std::move(engine);
  impl->coll->barrier();  // every member connected to every area before anyone drops its own
  return detail::team_impl::wrap(std::move(impl));
}

const team& world() {
  return detail::require_context("world").world;
}
const team& local_team() {
  return detail::require_context("local_team").local;
}

}  // namespace oneside
