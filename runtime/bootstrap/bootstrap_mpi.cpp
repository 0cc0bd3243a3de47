// The bootstrap of a job started by an MPI launcher (mpirun, srun, mpiexec): ranks, node
// membership and record exchange come from MPI_COMM_WORLD. MPI is initialized here with
// MPI_THREAD_MULTIPLE unless the program did it first, and then finalized when the process
// exits (MPI cannot be initialized twice, and a runtime may be opened again). Its node split
// is the bootstrap of the router's on-node backend: the ranks of one node, over MPI.
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <mpi.h>

#include "bootstrap/bootstrap.hpp"
#include "runtime/check.hpp"
#include "transport/shm/shm_object.hpp"

namespace oneside::detail {
namespace {

// Set when this process must not call MPI_Finalize at exit: a rank that failed leaves at
// once (the launcher ends the job), as a finalize would wait for ranks that never come.
bool g_skip_finalize = false;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized == 0 && !g_skip_finalize) MPI_Finalize();
}

void init_mpi() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      std::atexit(finalize_at_exit);
    }
  });
  int provided = 0;
  MPI_Query_thread(&provided);
  ONESIDE_CHECK(provided == MPI_THREAD_MULTIPLE, error_class::intern, {.call = "runtime"},
                "the MPI library gives thread level " + std::to_string(provided) +
                    ", but oneside needs MPI_THREAD_MULTIPLE (" +
                    std::to_string(MPI_THREAD_MULTIPLE) + ")");
}

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  raise(error_class::intern, {.call = "runtime"},
        std::string(what).append(" failed: ").append(text, static_cast<std::size_t>(len)));
}

// A bootstrap over the ranks of `comm` (one node), which it frees.
class comm_bootstrap final : public bootstrap {
 public:
  comm_bootstrap(MPI_Comm comm, std::string job) : comm_(comm), job_(std::move(job)) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~comm_bootstrap() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0) MPI_Comm_free(&comm_);
  }
  std::string_view kind() const noexcept override { return "mpi-node"; }
  rank_t rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  rank_t local_rank() const noexcept override { return rank_; }
  int local_size() const noexcept override { return size_; }
  const std::string& job_id() const noexcept override { return job_; }
  void allgather(const void* in, void* out, std::size_t bytes) override {
    check_mpi(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                            MPI_BYTE, comm_),
              "MPI_Allgather");
  }
  void barrier() override { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  MPI_Comm comm_;
  std::string job_;
  int rank_ = 0;
  int size_ = 1;
};

class mpi_bootstrap final : public bootstrap {
 public:
  mpi_bootstrap() {
    init_mpi();
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_),
              "MPI_Comm_split_type");
    MPI_Comm_rank(node_, &local_rank_);
    MPI_Comm_size(node_, &local_size_);
    // One job id for everyone, chosen by world rank 0.
    char id[64] = {};
    if (rank_ == 0) make_job_id().copy(id, sizeof id - 1);
    check_mpi(MPI_Bcast(id, sizeof id, MPI_CHAR, 0, comm_), "MPI_Bcast");
    job_ = id;
  }
  ~mpi_bootstrap() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) return;
    MPI_Comm_free(&node_);
    MPI_Comm_free(&comm_);
  }

  std::string_view kind() const noexcept override { return "mpi"; }
  rank_t rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  rank_t local_rank() const noexcept override { return local_rank_; }
  int local_size() const noexcept override { return local_size_; }
  const std::string& job_id() const noexcept override { return job_; }

  void allgather(const void* in, void* out, std::size_t bytes) override {
    ONESIDE_CHECK(bytes <= static_cast<std::size_t>(INT32_MAX), error_class::intern,
                  {.call = "runtime"}, "bootstrap record too large");
    check_mpi(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                            MPI_BYTE, comm_),
              "MPI_Allgather");
  }
  void barrier() override { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }
  void abandon() noexcept override { g_skip_finalize = true; }

  std::unique_ptr<bootstrap> split_node(const node_grouping& how,
                                        std::vector<rank_t>& members) override {
    MPI_Comm node = MPI_COMM_NULL;
    if (how.alone) {
      check_mpi(MPI_Comm_split(comm_, rank_, 0, &node), "MPI_Comm_split");
    } else if (how.ranks_per_node > 0) {
      // Pretended nodes of consecutive ranks, within the real ones (memory must be shared).
      check_mpi(MPI_Comm_split(node_, rank_ / how.ranks_per_node, rank_, &node), "MPI_Comm_split");
    } else {
      check_mpi(MPI_Comm_dup(node_, &node), "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    int n = 1;
    MPI_Comm_size(node, &n);
    members.resize(static_cast<std::size_t>(n));
    check_mpi(MPI_Allgather(&rank_, 1, MPI_INT, members.data(), 1, MPI_INT, node), "MPI_Allgather");
    // Objects of each node are named apart: nodes may share /dev/shm (namespaces of one
    // machine, or pretended nodes).
    return std::make_unique<comm_bootstrap>(node, job_ + "n" + std::to_string(members.front()));
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  std::string job_;
};

}  // namespace

std::unique_ptr<bootstrap> make_mpi_bootstrap() {
  return std::make_unique<mpi_bootstrap>();
}

}  // namespace oneside::detail
