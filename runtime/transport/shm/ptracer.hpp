// Who may use cross-memory attach (process_vm_readv/writev) on this process where the Yama
// security module restricts ptrace to descendants (ptrace_scope 1): the ranks of a node declare
// their nearest common ancestor (the launcher, or the MPI daemon that started them) as their
// ptracer, which Yama extends to that process's descendants — the node's ranks, and nobody
// outside the job's process tree (PR_SET_PTRACER_ANY would admit every process of the user).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <sys/types.h>
#include <vector>

namespace oneside::detail {
class bootstrap;
}

namespace oneside::transport::shm_detail {

// The chain of this process's ancestors, nearest first (its parent, its grandparent, …),
// read from /proc; at most `limit` entries, ending before pid 1 (init is everybody's
// ancestor and names no job).
std::vector<pid_t> ancestors_of_self(std::size_t limit);

// The nearest process that is an ancestor in every one of `chains` (each nearest first, as
// ancestors_of_self gives them), or 0 when they share none.
pid_t nearest_common_ancestor(std::span<const std::vector<pid_t>> chains);

// Collective over the node's bootstrap: declares the ranks' nearest common ancestor as this
// process's ptracer (prctl PR_SET_PTRACER). Returns it, or 0 when the ranks share none (then
// nothing is declared, and cross-memory attach under Yama needs ptrace_scope 0). Harmless
// where Yama is absent.
pid_t declare_job_ptracer(oneside::detail::bootstrap& boot);

}  // namespace oneside::transport::shm_detail
