// Configure-time probe (OnesideDeps.cmake): exits 0 when the MPI library grants
// MPI_THREAD_MULTIPLE, which the MPI transport needs.
#include <cstdio>

#include <mpi.h>

int main() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  std::printf("provided thread level %d\n", provided);
  MPI_Finalize();
  return provided == MPI_THREAD_MULTIPLE ? 0 : 1;
}
