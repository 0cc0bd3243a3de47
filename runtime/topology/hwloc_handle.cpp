// The hwloc topology of this machine, loaded once per process, and bitmap helpers.
#include "topology/hwloc_handle.hpp"

#include <cerrno>
#include <utility>

#include "runtime/check.hpp"

namespace oneside::detail {

hwloc_bitmap_ptr make_bitmap(hwloc_const_bitmap_t src) {
  hwloc_bitmap_ptr b(src != nullptr ? hwloc_bitmap_dup(src) : hwloc_bitmap_alloc());
  if (!b) raise_system("hwloc_bitmap_alloc", "cannot allocate a CPU set", ENOMEM);
  return b;
}

std::vector<int> bitmap_indices(hwloc_const_bitmap_t b) {
  std::vector<int> out;
  for (int i = hwloc_bitmap_first(b); i != -1; i = hwloc_bitmap_next(b, i)) out.push_back(i);
  return out;
}

topology_handle topology_handle::load() {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) {
    raise_system("hwloc_topology_init", "cannot initialize hwloc", errno);
  }
  // Wrap at once so that a failed load still destroys the half-made topology.
  topology_handle h(t);
  if (hwloc_topology_load(t) != 0) {
    raise_system("hwloc_topology_load", "cannot detect this machine's topology", errno);
  }
  return h;
}

topology_handle::topology_handle(topology_handle&& o) noexcept
    : topo_(std::exchange(o.topo_, nullptr)) {}

topology_handle& topology_handle::operator=(topology_handle&& o) noexcept {
  if (this != &o) {
    if (topo_ != nullptr) hwloc_topology_destroy(topo_);
    topo_ = std::exchange(o.topo_, nullptr);
  }
  return *this;
}

topology_handle::~topology_handle() {
  if (topo_ != nullptr) hwloc_topology_destroy(topo_);
}

hwloc_const_cpuset_t topology_handle::machine_cpuset() const noexcept {
  return hwloc_topology_get_topology_cpuset(topo_);
}

hwloc_bitmap_ptr topology_handle::current_binding() const {
  hwloc_bitmap_ptr set = make_bitmap();
  // Flags 0: the binding of the whole process (every thread), as far as the OS can tell.
  if (hwloc_get_cpubind(topo_, set.get(), 0) != 0) {
    raise_system("hwloc_get_cpubind", "cannot read this process's CPU binding", errno);
  }
  hwloc_bitmap_and(set.get(), set.get(), machine_cpuset());
  return set;
}

int topology_handle::count(hwloc_obj_type_t type) const noexcept {
  const int n = hwloc_get_nbobjs_by_type(topo_, type);
  return n > 0 ? n : 0;  // -1 means "at several depths", which no type used here does
}

hwloc_obj_t topology_handle::object(hwloc_obj_type_t type, int index) const noexcept {
  return hwloc_get_obj_by_type(topo_, type, static_cast<unsigned>(index));
}

hwloc_obj_t topology_handle::core_of_pu(int os_index) const noexcept {
  hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo_, static_cast<unsigned>(os_index));
  if (pu == nullptr) return nullptr;
  hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_CORE, pu);
  return core != nullptr ? core : pu;
}

const topology_handle& machine_handle() {
  // Loading takes milliseconds and the machine does not change under a process: once.
  static const topology_handle handle = topology_handle::load();
  return handle;
}

}  // namespace oneside::detail
