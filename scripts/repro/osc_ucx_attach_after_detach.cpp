// Reproducer of an Open MPI 4.1.4 (Debian) osc/ucx bug that shapes oneside's MPI transport:
// on a dynamic window, detaching regions and then attaching new ones at lower addresses than
// live ones makes MPI_Win_attach fail although far fewer than osc_ucx's 32 regions are live
// (here it fails with 9 live). The MPI transport therefore never detaches a piece before the
// job ends and reuses attached pieces (runtime/transport/mpi/mpi_transport.cpp, attach()).
// The cause: osc ucx searches its sorted array of regions one entry past the end, so a region
// attached above every live one lands a slot too far (a hole that MPI_Win_free later unmaps,
// crashing) and stale entries past the end confuse later calls. The transport therefore first
// attaches a page above anything that can be exposed (the top of the main stack), so no later
// region goes past the end (attach_sentinel()).
//
//   mpicxx -O2 scripts/repro/osc_ucx_attach_after_detach.cpp -o /tmp/attach_repro
//   OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
//     mpirun -n 1 --mca osc ucx -x UCX_TLS=tcp,self /tmp/attach_repro
//
// Prints "attach ... failed, live N" with N < 32 on an affected build (here: iteration 63, live
// 9; MPI_Win_free then segfaults inside ucp_mem_unmap), "done" otherwise.
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Win win;
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  std::vector<char> buffer(std::size_t{1} << 22);
  std::set<int> live;
  std::srand(1);
  int rc = 0;
  for (int i = 0; i < 2000 && rc == 0; ++i) {
    const int k = std::rand() % 20;  // 20 slots of 64 KiB, regions of 4, 8 or 12 KiB
    char* at = buffer.data() + 65536 * k;
    if (live.count(k) != 0) {
      if (MPI_Win_detach(win, at) != MPI_SUCCESS) {
        std::printf("iteration %d: detach of slot %d failed, live %zu\n", i, k, live.size());
        rc = 1;
      }
      live.erase(k);
    } else if (MPI_Win_attach(win, at, 4096 * (1 + k % 3)) != MPI_SUCCESS) {
      std::printf("iteration %d: attach of slot %d failed, live %zu\n", i, k, live.size());
      rc = 1;
    } else {
      live.insert(k);
    }
  }
  if (rc == 0) std::printf("done, live %zu\n", live.size());
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Finalize();
  return rc;
}
