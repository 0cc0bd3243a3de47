// Rank placement for the launcher (oneside-run --bind-to): which PUs each rank of a job on
// this node gets under a policy. Planned once in the launcher from hwloc; applied in each
// child between fork and exec with a single system call, so the child does no hwloc work and
// no allocation there. No hwloc type appears in this header.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oneside::detail {

enum class bind_policy : std::uint8_t { core, numa, none };

// "core", "numa", "none" (the spelling of --bind-to and ONESIDE_BINDING).
std::string_view to_string(bind_policy p) noexcept;
// The inverse of to_string; nullopt for anything else.
std::optional<bind_policy> parse_bind_policy(std::string_view text) noexcept;

// What the calling process may use: the cores, NUMA nodes and PUs that intersect its own CPU
// binding (so `taskset -c 2,3 oneside-run ...` places ranks on PUs 2 and 3 only, as mpirun
// does inside the cpuset it is given).
struct placement_resources {
  int cores = 0;
  int numa_nodes = 0;
  int pus = 0;
};
placement_resources available_resources();

// ONESIDE_BIND_TO=auto: core while `ranks` do not outnumber the available cores, else none.
bind_policy default_bind_policy(int ranks);

struct rank_binding {
  bind_policy policy = bind_policy::none;
  std::vector<int> pus;     // OS indices the rank runs on (none: the launcher's own set)
  std::string description;  // "bound to core 1 (PUs 1)", "bound to NUMA node 0 (PUs 0-1)",
                            // "not bound (PUs 0-1)"
};

// One binding per rank. core: rank r on the r-th available core (all of its available PUs);
// numa: rank r on available NUMA node r mod their count; none: the launcher's set, unchanged.
// Throws error(arg) when ranks < 1, or for core when ranks outnumber the available cores.
std::vector<rank_binding> plan_bindings(int ranks, bind_policy policy);

// The PUs the launcher may use that no rank of `plan` is bound to (empty when the ranks are
// not bound, or when they take every PU): where the ranks' helper threads that mostly wait on
// the kernel (file I/O threads) can run without taking a computing rank's core. The launcher
// passes them to its ranks as ONESIDE_SPARE_PUS.
std::vector<int> spare_pus(std::span<const rank_binding> plan);

// Moves the calling thread to the spare PUs ONESIDE_SPARE_PUS names (oneside-run's; mpirun
// sets none). Returns whether it moved; a thread stays where it is when there are none or
// the OS refuses.
bool move_to_spare_pus() noexcept;

// A CPU mask prepared in advance for sched_setaffinity.
class affinity_mask {
 public:
  // Throws error(arg) for an empty list or a negative index.
  explicit affinity_mask(std::span<const int> pus);
  // Binds the calling thread. Returns 0 or the errno of sched_setaffinity. Async-signal-safe:
  // meant for a child between fork and exec.
  int apply() const noexcept;

 private:
  std::vector<unsigned long> words_;  // the kernel's cpu_set_t layout: bit i of word i / 64
};

// Binds the calling thread to `pus` (the whole process when it has no other thread yet).
// Throws error(arg) for an empty list, error(intern) when the OS refuses.
void bind_this_process(std::span<const int> pus);

}  // namespace oneside::detail
