// Where this rank runs: the cores and NUMA nodes of its binding, read through hwloc when the
// runtime opens. Plain structs; no hwloc type appears here.
#pragma once

#include <string>
#include <vector>

namespace oneside {

struct machine_topology {
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int pus = 0;  // hardware threads
};

struct rank_topology {
  std::vector<int> pus;          // OS indices of the hardware threads this rank may run on
  std::vector<int> cores;        // logical indices of the cores holding those threads
  std::vector<int> numa_nodes;   // logical indices of the NUMA nodes holding those cores
  bool is_bound = false;         // true when narrower than the whole machine
  std::string describe() const;  // "cores 0-1 (PUs 0,1) NUMA 0" / "unbound (cores 0-1)"
};

// The machine this process runs on. Works without an open runtime.
machine_topology this_machine();
// This rank's placement, as of the runtime's open (or now, without an open runtime).
const rank_topology& this_rank_topology();

}  // namespace oneside
