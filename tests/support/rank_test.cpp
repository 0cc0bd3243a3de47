// RankTest: the collective verdict after each multi-rank test.
#include "rank_test.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace oneside::test {

void RankTest::TearDown() {
  const int mine = HasFailure() ? 1 : 0;
  const std::vector<int> all = allgather(world(), mine);
  if (mine != 0) return;
  std::string failed;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r] != 0) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!failed.empty()) ADD_FAILURE() << "failed on rank(s) " << failed;
}

bool on_all_ranks(bool cond) {
  return allreduce(world(), cond ? 1 : 0, op::min) == 1;
}

int scaled(int n) {
  // Started by Open MPI's mpirun: the MPI transport (ONESIDE_TRANSPORT=mpi, or auto with nodes
  // of a few ranks, the hybrid), whose remote peers are reached over TCP.
  const bool over_tcp = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  return world().size() > 4 || over_tcp ? std::max(n / 4, 1) : n;
}

}  // namespace oneside::test
