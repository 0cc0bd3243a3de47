// Owning wrappers for hwloc objects: the loaded topology of this machine and CPU-set bitmaps.
// The only header of oneside that includes hwloc.h; only runtime/topology/*.cpp include it.
// The topology is loaded once per process (machine_handle()) and only read afterwards, which
// hwloc documents as safe from any thread.
#pragma once

#include <memory>
#include <vector>

#include <hwloc.h>

namespace oneside::detail {

struct hwloc_bitmap_deleter {
  void operator()(hwloc_bitmap_s* b) const noexcept { hwloc_bitmap_free(b); }
};
// A CPU set (or any hwloc bitmap) with an owner.
using hwloc_bitmap_ptr = std::unique_ptr<hwloc_bitmap_s, hwloc_bitmap_deleter>;

// A fresh bitmap: a copy of `src`, or empty. Throws error(intern) when hwloc has no memory.
hwloc_bitmap_ptr make_bitmap(hwloc_const_bitmap_t src = nullptr);
// The set bits of `b` in increasing order (OS indices when `b` is a cpuset).
std::vector<int> bitmap_indices(hwloc_const_bitmap_t b);

// A loaded hwloc topology (move-only RAII over hwloc_topology_t).
class topology_handle {
 public:
  // Detects the machine. Throws error(intern) when hwloc cannot.
  static topology_handle load();

  topology_handle(topology_handle&& o) noexcept;
  topology_handle& operator=(topology_handle&& o) noexcept;
  topology_handle(const topology_handle&) = delete;
  topology_handle& operator=(const topology_handle&) = delete;
  ~topology_handle();

  hwloc_topology_t get() const noexcept { return topo_; }
  // The PUs hwloc knows and this process is allowed to use (the topology's cpuset).
  hwloc_const_cpuset_t machine_cpuset() const noexcept;
  // The CPU binding of this process right now, restricted to machine_cpuset().
  hwloc_bitmap_ptr current_binding() const;
  // Objects of one type (cores and packages may be absent on exotic systems: 0 then).
  int count(hwloc_obj_type_t type) const noexcept;
  hwloc_obj_t object(hwloc_obj_type_t type, int index) const noexcept;
  // The core holding PU `os_index`, or the PU itself when hwloc found no core level.
  hwloc_obj_t core_of_pu(int os_index) const noexcept;

 private:
  explicit topology_handle(hwloc_topology_t t) noexcept : topo_(t) {}
  hwloc_topology_t topo_ = nullptr;
};

// This machine's topology, loaded on first use and kept for the life of the process.
const topology_handle& machine_handle();

}  // namespace oneside::detail
