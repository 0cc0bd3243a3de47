// Which transport a job gets, and making it: the one table that knows the backends (the only
// place outside transport/mpi/ and the MPI bootstrap that asks whether MPI was built in).
//
//   job started by           transport
//   no launcher, oneside-run  the shm backend alone
//   an MPI launcher           the router: shm for the node's ranks, MPI for the others
//                             (ONESIDE_TRANSPORT=mpi: every other rank through MPI;
//                             ONESIDE_TRANSPORT=shm: shm alone, every rank on one node)
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/runtime_backend.hpp"
#include "transport/shm/shm_transport.hpp"

namespace oneside::detail {
class bootstrap;
}

namespace oneside::transport {

struct transport_plan {
  shm::options node;               // the shm backend (alone, or the router's on-node half)
  bool network = false;            // a network backend beside it: the router
  bool every_peer_remote = false;  // ONESIDE_TRANSPORT=mpi: nodes of one rank each
  int ranks_per_node = 0;          // ONESIDE_MPI_RANKS_PER_NODE
  std::int64_t poll_spin_ns = 0;   // the network backend's progress thread: polls this long
  std::int64_t poll_max_ns = 0;    // then sleeps at most this long between polls
  bool attach = true;              // ONESIDE_MPI_ATTACH
  bool get_batch = true;           // ONESIDE_MPI_GET_BATCH
  // Whether waiting threads must also drive the transport: a network backend moves data only
  // while someone polls it.
  bool waits_progress() const noexcept { return network; }
};

// A test hook: messages that carried batched gets (the MPI transport, ONESIDE_MPI_GET_BATCH).
extern std::atomic<std::uint64_t> batched_get_messages_for_testing;

// What this build lacks for the transport the settings ask for ("ONESIDE_TRANSPORT='mpi' needs a
// oneside built with ONESIDE_WITH_MPI"), or an empty string. Reads only the settings.
std::string build_problem();

// Reads and checks the transport's settings for a job joined through `boot` (error(arg) for
// a choice this job or this build cannot honour). Nothing is made yet. `oversubscribed`: the
// node's ranks outnumber its PUs; `full`: they take every PU, so a helper thread (the shm
// agent, the MPI progress thread) that spins or polls often takes the time of a rank that
// computes on its core: then, unless the settings say otherwise, the agent and the progress
// thread do not spin after a message and the progress thread sleeps up to 1 ms between polls
// when nothing arrives (20 us polling cost a computing rank 2.5x its time, bench/RESULTS.md).
transport_plan plan_transport(const oneside::detail::bootstrap& boot, bool oversubscribed,
                              bool full);

// Makes the transport of `plan`. Collective over the job.
std::unique_ptr<runtime_backend> make_transport(oneside::detail::bootstrap& boot,
                                                const transport_plan& plan);

}  // namespace oneside::transport
