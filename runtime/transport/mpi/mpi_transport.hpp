// The MPI transport (ONESIDE_WITH_MPI): peers on other nodes are reached through MPI, node
// peers through the shm transport (hybrid), or every peer through MPI when forced
// (ONESIDE_TRANSPORT=mpi: each rank then has a node of its own).
//
//   memory     segments are carved out of 64 MiB chunks, each attached once to one MPI
//              dynamic window of the job, locked with lock_all for the transport's life;
//              addresses are absolute. Exposed memory the runtime did not allocate (and
//              chunks past the engine's limit of attachments) is not attached: it is served
//              by messages, so a program can expose any number of regions
//   put/get    MPI_Put/MPI_Get (MPI_Rput/MPI_Rget with a completion) to attached memory, once
//              an acknowledgement told the origin the range is attached; iovec forms use
//              hindexed datatypes on both sides; a put with a null completion is copied first
//              (small) or completed locally before the call returns (large). Otherwise a
//              message carries the bytes (put) or asks for them (get; they come back in the
//              acknowledgement), copied by the owner's progress thread
//   atomics    run by the owner (an active message, applied with CPU atomics), so they are
//              atomic with every other path to the location: node peers' CPU atomics, the
//              owner's stripe locks, its agent (MPI atomics are not atomic with respect to
//              CPU atomics on the same memory, MPI's separate semantics)
//   messages   active messages, their acknowledgements (which carry small results back) and
//              wake-ups travel on a duplicated communicator; a progress thread per rank
//              receives them and keeps MPI progressing, and so do the rank's own waits
//   flush      MPI_Win_flush(_all) plus every acknowledgement of messages sent
//
// MPI headers stay inside this folder (and bootstrap_mpi.cpp): this header is free of them.
#pragma once

#include <cstdint>
#include <memory>

#include "transport/runtime_backend.hpp"
#include "transport/shm/shm_transport.hpp"

namespace oneside::detail {
class bootstrap;
}

namespace oneside::transport {

struct mpi_options {
  shm::options node;                  // the node peers' shm transport
  bool every_peer_remote = false;     // ONESIDE_TRANSPORT=mpi
  int ranks_per_node = 0;             // ONESIDE_MPI_RANKS_PER_NODE (0: the real nodes)
  std::int64_t spin_ns = 50'000;      // progress thread: polls this long after a message
  std::int64_t poll_max_ns = 20'000;  // then sleeps between polls, at most this long
  bool attach = true;                 // ONESIDE_MPI_ATTACH: chunks attached to the window
};

// Collective over the bootstrap's ranks, which must be MPI's (bootstrap kind "mpi").
std::unique_ptr<runtime_backend> make_mpi_transport(oneside::detail::bootstrap& boot,
                                                    const mpi_options& opts);

}  // namespace oneside::transport
