// The MPI backend (ONESIDE_WITH_MPI): the network half of the router, reaching ranks on other
// nodes (or, with ONESIDE_TRANSPORT=mpi, every other rank) through MPI. Free of MPI headers:
// the transport table includes it; mpi_backend.hpp holds the class.
//
//   memory     segments are carved out of 64 MiB chunks of the node backend's memory (so node
//              peers reach them by load/store), each attached once to one MPI dynamic window
//              of the job, locked with lock_all for the backend's life; addresses are
//              absolute. Exposed memory the runtime did not allocate (and chunks past the
//              engine's limit of attachments) is not attached: it is served by messages, so a
//              program can expose any number of regions
//   rma        MPI_Put/MPI_Get (MPI_Rput/MPI_Rget with a completion) to attached memory, once
//              an acknowledgement told the origin the range is attached; iovec forms use
//              hindexed datatypes on both sides; a put with a null completion is copied first
//              (small) or completed locally before the call returns (large). Otherwise a
//              message carries the bytes (put) or asks for them (get; they come back in the
//              acknowledgement), copied by the owner's progress thread. Atomics run at the
//              owner (an active message, applied with CPU atomics), so they are atomic with
//              every other path to the location: node peers' CPU atomics, the owner's stripe
//              locks, its agent (MPI atomics are not atomic with respect to CPU atomics on the
//              same memory, MPI's separate semantics)
//   messages   active messages, their acknowledgements (which carry small results back) and
//              wake-ups travel on a duplicated communicator; a progress thread per rank
//              receives them and keeps MPI progressing, and so do the rank's own waits
//   completion MPI_Win_flush(_all) plus every acknowledgement of messages sent
#pragma once

#include <cstdint>
#include <memory>

#include "transport/runtime_backend.hpp"

namespace oneside::detail {
class bootstrap;
class doorbell;
}  // namespace oneside::detail

namespace oneside::transport {

struct mpi_options {
  std::int64_t spin_ns = 50'000;      // progress thread: polls this long after a message
  std::int64_t poll_max_ns = 20'000;  // then sleeps between polls, at most this long
  bool attach = true;                 // ONESIDE_MPI_ATTACH: chunks attached to the window
  bool get_batch = true;              // ONESIDE_MPI_GET_BATCH: a flush's small gets in one message
  // Where segments' memory comes from (the node backend: node peers then load and store it),
  // the doorbell this process's waiting threads sleep on (the node backend's: acknowledgements
  // ring it), and the transport active-message handlers receive (the router).
  backend* memory = nullptr;
  oneside::detail::doorbell* bell = nullptr;
  backend* front = nullptr;
};

// Collective over the bootstrap's ranks, which must be MPI's (bootstrap kind "mpi").
std::unique_ptr<runtime_backend> make_mpi_backend(oneside::detail::bootstrap& boot,
                                                  const mpi_options& opts);

}  // namespace oneside::transport
