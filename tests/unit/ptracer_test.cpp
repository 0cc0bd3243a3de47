// The job's ptracer (runtime/transport/shm/ptracer.hpp, issue 18): the ranks of a node declare
// their nearest common ancestor, never "any process".
#include "transport/shm/ptracer.hpp"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

namespace {

using oneside::transport::shm_detail::ancestors_of_self;
using oneside::transport::shm_detail::nearest_common_ancestor;

using chains = std::vector<std::vector<pid_t>>;

TEST(Ptracer, NearestCommonAncestorOfSiblingsIsTheirParent) {
  const chains c{{100, 50, 20}, {101, 50, 20}, {102, 50, 20}};
  EXPECT_EQ(nearest_common_ancestor(c), 50);
}

TEST(Ptracer, RanksUnderOneWrapperShareTheWrapper) {
  // Rank 0 was started directly by the launcher (50); rank 1 through a shell (70) under it.
  const chains c{{50, 20}, {70, 50, 20}};
  EXPECT_EQ(nearest_common_ancestor(c), 50);
}

TEST(Ptracer, ProcessesWithoutACommonAncestorGetNone) {
  const chains c{{100, 20}, {101, 30}};
  EXPECT_EQ(nearest_common_ancestor(c), 0);
  EXPECT_EQ(nearest_common_ancestor(chains{}), 0);
  EXPECT_EQ(nearest_common_ancestor(chains{{100}, {}}), 0);
}

TEST(Ptracer, OneProcessDeclaresItsParent) {
  EXPECT_EQ(nearest_common_ancestor(chains{{100, 50}}), 100);
}

TEST(Ptracer, AncestorsOfSelfStartAtTheParentAndStopBeforeInit) {
  const std::vector<pid_t> mine = ancestors_of_self(64);
  if (::getppid() > 1) {
    ASSERT_FALSE(mine.empty());
    EXPECT_EQ(mine.front(), ::getppid());
  }
  for (pid_t p : mine) EXPECT_GT(p, 1);
  // A child's chain is this process followed by this process's chain.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::vector<pid_t> theirs = ancestors_of_self(64);
    std::vector<pid_t> want{::getppid()};
    want.insert(want.end(), mine.begin(), mine.end());
    ::_exit(theirs == want ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's chain differs";
}

}  // namespace
