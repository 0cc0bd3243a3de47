// The public topology API (include/oneside/runtime/topology.hpp) on hwloc: what this machine
// has, and where this process may run.
#include <algorithm>
#include <set>

#include <oneside/runtime/topology.hpp>

#include "topology/hwloc_handle.hpp"
#include "topology/index_list.hpp"

namespace oneside {
namespace {

rank_topology read_rank_topology() {
  const detail::topology_handle& h = detail::machine_handle();
  const detail::hwloc_bitmap_ptr binding = h.current_binding();
  rank_topology t;
  t.pus = detail::bitmap_indices(binding.get());
  std::set<int> cores;
  for (int pu : t.pus) {
    if (hwloc_obj_t core = h.core_of_pu(pu); core != nullptr) {
      cores.insert(static_cast<int>(core->logical_index));
    }
  }
  t.cores.assign(cores.begin(), cores.end());
  // NUMA nodes are memory children in hwloc 2, not ancestors of cores: match by cpuset.
  for (int i = 0; i < h.count(HWLOC_OBJ_NUMANODE); ++i) {
    hwloc_obj_t node = h.object(HWLOC_OBJ_NUMANODE, i);
    if (node != nullptr && hwloc_bitmap_intersects(node->cpuset, binding.get())) {
      t.numa_nodes.push_back(static_cast<int>(node->logical_index));
    }
  }
  t.is_bound = !hwloc_bitmap_isequal(binding.get(), h.machine_cpuset());
  return t;
}

}  // namespace

std::string rank_topology::describe() const {
  std::string d;
  if (!is_bound) {
    d = "unbound (";
    d.append(cores.size() == 1 ? "core " : "cores ").append(detail::format_index_list(cores));
    d += ')';
    return d;
  }
  d = cores.size() == 1 ? "core " : "cores ";
  d.append(detail::format_index_list(cores));
  d.append(" (PUs ").append(detail::format_index_list(pus)).append(") NUMA ");
  d.append(detail::format_index_list(numa_nodes));
  return d;
}

machine_topology this_machine() {
  const detail::topology_handle& h = detail::machine_handle();
  machine_topology m;
  m.pus = h.count(HWLOC_OBJ_PU);
  // hwloc may find no core or package level on some virtual machines and architectures;
  // every PU is then its own core, and there is one package and one NUMA node.
  m.cores = h.count(HWLOC_OBJ_CORE) > 0 ? h.count(HWLOC_OBJ_CORE) : m.pus;
  m.packages = std::max(1, h.count(HWLOC_OBJ_PACKAGE));
  m.numa_nodes = std::max(1, h.count(HWLOC_OBJ_NUMANODE));
  return m;
}

const rank_topology& this_rank_topology() {
  // Read once: the binding is set by the launcher before exec and does not change after.
  static const rank_topology topology = read_rank_topology();
  return topology;
}

}  // namespace oneside
