// The Google Benchmark main of the MPI peer baselines: the same lockstep method as
// oneside's bench_main.cpp (every rank runs every benchmark, the slowest rank's batch time
// counts, rank 0 alone reports), over MPI only. Run with mpirun -n N.
#include <cstdio>
#include <string>
#include <thread>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "lockstep.hpp"
#include "mpi_support.hpp"

#ifndef ONESIDE_BENCH_GIT_COMMIT
#define ONESIDE_BENCH_GIT_COMMIT "unknown"
#endif

namespace {

namespace peers = oneside::bench::peers;

int ranks_on_node() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 0;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string v(text, static_cast<std::size_t>(length));
  if (const auto end = v.find_first_of(",\n"); end != std::string::npos) v.resize(end);
  return v;
}

void add_context(int on_node) {
  const unsigned hw = std::thread::hardware_concurrency();
  benchmark::AddCustomContext("git_commit", ONESIDE_BENCH_GIT_COMMIT);
  benchmark::AddCustomContext("ranks", std::to_string(peers::world_size()));
  benchmark::AddCustomContext("ranks_on_node", std::to_string(on_node));
  benchmark::AddCustomContext("hardware_threads", std::to_string(hw));
  benchmark::AddCustomContext("transport", "mpi");
  benchmark::AddCustomContext("mpi_library", library_version());
  benchmark::AddCustomContext("oversubscribed", static_cast<unsigned>(on_node) > hw ? "yes" : "no");
  benchmark::AddCustomContext("method",
                              "per operation; each batch timed on every rank, slowest rank counts");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const bool reporting = peers::world_rank() == 0;
  const int on_node = ranks_on_node();
  if (reporting) add_context(on_node);
  const bool ok = oneside::bench::run_benchmarks(argc, argv, reporting);
  MPI_Finalize();
  return ok ? 0 : 2;
}
