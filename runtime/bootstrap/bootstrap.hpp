// The bootstrap: who am I, how many are we, exchange of small records, barrier. Separate
// from data movement (transports); used to set the transport up. Implementations: a single
// process (no launcher), the launcher's environment (oneside-run), and later MPI.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <oneside/runtime/types.hpp>

#include "bootstrap/boot_segment.hpp"

namespace oneside::detail {

// How a job that spans nodes groups its ranks for the on-node backend of the router.
struct node_grouping {
  bool alone = false;      // every rank is a node of its own (ONESIDE_TRANSPORT=mpi)
  int ranks_per_node = 0;  // nodes of this many consecutive ranks within the real ones (0: the
                           // real nodes; ONESIDE_MPI_RANKS_PER_NODE)
};

class bootstrap {
 public:
  bootstrap() = default;
  bootstrap(const bootstrap&) = delete;
  bootstrap& operator=(const bootstrap&) = delete;
  virtual ~bootstrap() = default;

  virtual std::string_view kind() const noexcept = 0;  // "single", "launcher", "mpi"
  virtual rank_t rank() const noexcept = 0;
  virtual int size() const noexcept = 0;
  // Ranks sharing this node's memory (as the launcher counted them).
  virtual rank_t local_rank() const noexcept = 0;
  virtual int local_size() const noexcept = 0;
  // Identifies the job; names its shared-memory objects.
  virtual const std::string& job_id() const noexcept = 0;

  // Collective: every rank gives `bytes` bytes; out receives size()*bytes, in rank order.
  virtual void allgather(const void* in, void* out, std::size_t bytes) = 0;
  virtual void barrier() = 0;
  // This rank is failing and leaves without the others: nothing collective may follow.
  virtual void abandon() noexcept {}
  // Tells the launcher (when there is one) that this rank's runtime is open or closed: a rank
  // that exits with status 0 while it is open fails the job instead of leaving the others
  // waiting for it.
  virtual void note_runtime(runtime_state s) noexcept { (void)s; }
  // Collective: a bootstrap over the ranks of this rank's node, grouped as `how` says, named
  // job_id() + "n<lowest member>"; `members` receives their job ranks, ascending. Null from
  // bootstraps whose job is one node (they are that bootstrap themselves).
  virtual std::unique_ptr<bootstrap> split_node(const node_grouping& how,
                                                std::vector<rank_t>& members) {
    (void)how;
    (void)members;
    return nullptr;
  }
};

// The bootstrap the environment asks for: the launcher's when ONESIDE_JOB_ID is set, MPI's
// when an MPI launcher started the process (builds with ONESIDE_WITH_MPI), a single process
// otherwise. Throws error(intern) when the job cannot be joined, error(arg) when an MPI
// launcher started several ranks of a build without MPI.
std::unique_ptr<bootstrap> make_bootstrap();

#if ONESIDE_HAVE_MPI
// bootstrap_mpi.cpp: initializes MPI (MPI_THREAD_MULTIPLE) unless the program did.
std::unique_ptr<bootstrap> make_mpi_bootstrap();
#endif

}  // namespace oneside::detail
