// Progress while a rank computes: rank 0 computes (a loop that never calls oneside) until a
// remote atomic from every other rank has landed in its memory. Over load/store the peers'
// stores land by themselves; on the network-shaped paths the owner's agent thread (or the MPI
// transport's progress thread) applies them. pgas.progress.np2.poll_thread runs it with
// ONESIDE_AGENT=poll (nobody but the owner's waits would apply them) and
// ONESIDE_PROGRESS_THREAD=1: there only the progress thread can.
#include <atomic>
#include <chrono>
#include <cstdint>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"

namespace oneside::test {
namespace {

class Progress : public RankTest {};

TEST_F(Progress, RemoteAtomicsLandWhileTheTargetComputes) {
  global_ptr<std::int64_t> word = symmetric_allocate<std::int64_t>(1);
  *word.local() = 0;
  barrier(world());
  if (rank() == 0) {
    std::atomic_ref<std::int64_t> seen(*word.local());
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (seen.load(std::memory_order_acquire) < size() - 1 &&
           std::chrono::steady_clock::now() < until) {
    }
    EXPECT_EQ(seen.load(), size() - 1) << "the peers' atomics did not land while rank 0 computed";
  } else {
    atomic_add(word.on(0), std::int64_t{1}).wait();
  }
  barrier(world());
  symmetric_free(word);
}

}  // namespace
}  // namespace oneside::test
