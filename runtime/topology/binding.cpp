// Planning and applying rank bindings for the launcher, on hwloc.
#include "topology/binding.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <sched.h>

#include "runtime/check.hpp"
#include "runtime/settings.hpp"
#include "topology/hwloc_handle.hpp"
#include "topology/index_list.hpp"

namespace oneside::detail {
namespace {

// A place a rank can be bound to: a core or a NUMA node, with the PUs of it this process
// may use.
struct place {
  int logical_index = 0;
  std::vector<int> pus;
};

std::vector<place> available_places(hwloc_obj_type_t type) {
  const topology_handle& h = machine_handle();
  const hwloc_bitmap_ptr allowed = h.current_binding();
  // Without a core level (some VMs), every PU is a core.
  if (type == HWLOC_OBJ_CORE && h.count(HWLOC_OBJ_CORE) == 0) type = HWLOC_OBJ_PU;
  std::vector<place> out;
  const hwloc_bitmap_ptr both = make_bitmap();
  for (int i = 0; i < h.count(type); ++i) {
    hwloc_obj_t obj = h.object(type, i);
    if (obj == nullptr || obj->cpuset == nullptr) continue;
    hwloc_bitmap_and(both.get(), obj->cpuset, allowed.get());
    if (hwloc_bitmap_iszero(both.get())) continue;
    out.push_back({static_cast<int>(obj->logical_index), bitmap_indices(both.get())});
  }
  return out;
}

std::vector<int> allowed_pus() {
  return bitmap_indices(machine_handle().current_binding().get());
}

}  // namespace

std::string_view to_string(bind_policy p) noexcept {
  switch (p) {
    case bind_policy::core:
      return "core";
    case bind_policy::numa:
      return "numa";
    case bind_policy::none:
      return "none";
  }
  return "none";
}

std::optional<bind_policy> parse_bind_policy(std::string_view text) noexcept {
  for (bind_policy p : {bind_policy::core, bind_policy::numa, bind_policy::none}) {
    if (text == to_string(p)) return p;
  }
  return std::nullopt;
}

placement_resources available_resources() {
  return {.cores = static_cast<int>(available_places(HWLOC_OBJ_CORE).size()),
          .numa_nodes = static_cast<int>(available_places(HWLOC_OBJ_NUMANODE).size()),
          .pus = static_cast<int>(allowed_pus().size())};
}

bind_policy default_bind_policy(int ranks) {
  return ranks <= available_resources().cores ? bind_policy::core : bind_policy::none;
}

std::vector<rank_binding> plan_bindings(int ranks, bind_policy policy) {
  ONESIDE_CHECK(ranks >= 1, error_class::arg, {.call = "plan_bindings"},
                "a job needs at least one rank, not " + std::to_string(ranks));
  std::vector<rank_binding> plan(static_cast<std::size_t>(ranks));
  if (policy == bind_policy::none) {
    const std::vector<int> pus = allowed_pus();
    std::string d = "not bound (PUs ";
    d.append(format_index_list(pus)).append(")");
    for (rank_binding& b : plan) b = {bind_policy::none, pus, d};
    return plan;
  }
  const bool by_core = policy == bind_policy::core;
  const std::vector<place> places = available_places(by_core ? HWLOC_OBJ_CORE : HWLOC_OBJ_NUMANODE);
  ONESIDE_CHECK(!places.empty(), error_class::intern, {.call = "plan_bindings"},
                "hwloc found no core or NUMA node this process may use");
  if (by_core && ranks > static_cast<int>(places.size())) {
    std::string what = "cannot bind ";
    what.append(std::to_string(ranks)).append(" ranks one per core: only ");
    what.append(std::to_string(places.size())).append(" cores are available");
    raise(error_class::arg, {.call = "plan_bindings"}, what);
  }
  for (int r = 0; r < ranks; ++r) {
    const place& p = places[static_cast<std::size_t>(r) % places.size()];
    std::string d = by_core ? "bound to core " : "bound to NUMA node ";
    d.append(std::to_string(p.logical_index)).append(" (PUs ");
    d.append(format_index_list(p.pus)).append(")");
    plan[static_cast<std::size_t>(r)] = {policy, p.pus, std::move(d)};
  }
  return plan;
}

std::vector<int> spare_pus(std::span<const rank_binding> plan) {
  std::vector<int> spare = allowed_pus();
  for (const rank_binding& b : plan) {
    if (b.policy == bind_policy::none) return {};
    std::erase_if(spare, [&b](int pu) { return std::ranges::find(b.pus, pu) != b.pus.end(); });
  }
  return spare;
}

bool move_to_spare_pus() noexcept {
  try {
    const std::string text = setting_string("ONESIDE_SPARE_PUS");
    if (text.empty()) return false;
    return affinity_mask(parse_index_list(text)).apply() == 0;
  } catch (...) {
    return false;  // malformed (the settings check reports it at open) or out of memory
  }
}

affinity_mask::affinity_mask(std::span<const int> pus) {
  constexpr int bits = static_cast<int>(sizeof(unsigned long)) * CHAR_BIT;
  ONESIDE_CHECK(!pus.empty(), error_class::arg, {.call = "affinity_mask"},
                "a binding needs at least one PU");
  for (int pu : pus) {
    ONESIDE_CHECK(pu >= 0, error_class::arg, {.call = "affinity_mask"},
                  "negative PU index " + std::to_string(pu));
    const auto word = static_cast<std::size_t>(pu / bits);
    if (words_.size() <= word) words_.resize(word + 1, 0UL);
    words_[word] |= 1UL << (pu % bits);
  }
}

int affinity_mask::apply() const noexcept {
  // The kernel reads a cpu_set_t as an array of unsigned long of any length; building it
  // here avoids the fixed 1024-CPU limit of cpu_set_t and its allocation macros.
  const auto* set = reinterpret_cast<const cpu_set_t*>(words_.data());
  return ::sched_setaffinity(0, words_.size() * sizeof(unsigned long), set) == 0 ? 0 : errno;
}

void bind_this_process(std::span<const int> pus) {
  const affinity_mask mask(pus);
  if (const int err = mask.apply(); err != 0) {
    std::string what = "cannot bind to PUs ";
    what.append(format_index_list(pus));
    raise_system("sched_setaffinity", what, err);
  }
}

}  // namespace oneside::detail
