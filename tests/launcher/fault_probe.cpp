// fault_probe: the rank program of the fault tests (fault_test.cpp). Every rank runs rounds of
// one synchronization mode with traffic to its neighbours; the victim rank kills itself with
// SIGKILL at a point drawn from the seed (a round and a phase inside it), wherever that lands:
// holding a lock, inside a fence, between start and complete, in a collective, inside a heap
// operation. The job must end, naming the rank, and leave nothing behind.
//   fault_probe MODE VICTIM SEED      MODE: fence|pscw|lock|lock_all|collective|pgas
// Rank 0 prints "job <id>" (under oneside-run) and "pid <its pid>" first.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include <oneside/oneside.hpp>

namespace {

namespace rma = oneside::rma;

constexpr int rounds = 40;
constexpr int phases = 4;

struct kill_point {
  int round = -1;
  int phase = -1;
};

// Phase p of round r: the victim dies here when (r, p) is its point.
void at(const kill_point& k, int round, int phase) {
  if (round == k.round && phase == k.phase) std::raise(SIGKILL);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr,
                 "usage: fault_probe fence|pscw|lock|lock_all|collective|pgas VICTIM SEED\n");
    return 64;
  }
  const std::string_view mode(argv[1]);
  const int victim = std::atoi(argv[2]);
  const auto seed = static_cast<std::uint64_t>(std::strtoull(argv[3], nullptr, 10));
  oneside::runtime rt(argc, argv);
  const oneside::team& world = oneside::world();
  const oneside::rank_t me = world.rank();
  const int n = world.size();
  if (me == 0) {
    // Under oneside-run the job's id; under mpirun its objects are named after rank 0's pid.
    std::printf("job %s\npid %d\n", oneside::setting_value("ONESIDE_JOB_ID").c_str(),
                static_cast<int>(::getpid()));
    std::fflush(stdout);
  }
  kill_point k;
  if (me == victim) {
    std::mt19937_64 draw(seed);
    k.round = static_cast<int>(draw() % rounds);
    k.phase = static_cast<int>(draw() % phases);
  }
  const oneside::rank_t right = (me + 1) % n;
  const oneside::rank_t left = (me + n - 1) % n;
  std::vector<long> out(64, me);

  if (mode == "pgas") {
    oneside::global_ptr<long> mine = oneside::symmetric_allocate<long>(64);
    for (int r = 0; r < rounds; ++r) {
      at(k, r, 0);
      oneside::global_ptr<long> block = oneside::allocate<long>(static_cast<std::size_t>(16 + r));
      at(k, r, 1);
      oneside::rput(std::span<const long>(out), mine.on(right)).wait();
      (void)oneside::fetch_add(mine.on(left), 1L).wait();
      at(k, r, 2);
      oneside::deallocate(block);
      oneside::barrier(world);
      at(k, r, 3);
    }
  } else if (mode == "collective") {
    for (int r = 0; r < rounds; ++r) {
      at(k, r, 0);
      long sum = oneside::allreduce(world, static_cast<long>(me), oneside::op::sum);
      at(k, r, 1);
      std::vector<long> all(static_cast<std::size_t>(n));
      oneside::allgather(world, &sum, 1, oneside::datatype::of<long>(), all.data());
      at(k, r, 2);
      oneside::barrier(world);
      at(k, r, 3);
    }
  } else {
    rma::window w = rma::window::allocate(world, 64 * sizeof(long), sizeof(long));
    for (int r = 0; r < rounds; ++r) {
      const std::span<const long> data(out);
      if (mode == "fence") {
        at(k, r, 0);
        w.fence();
        at(k, r, 1);
        w.put(data, right, 0);
        at(k, r, 2);
        w.fence();
        at(k, r, 3);
      } else if (mode == "pscw") {
        std::vector<oneside::rank_t> neighbours{left};
        if (right != left) neighbours.push_back(right);
        const oneside::group peers(neighbours);
        at(k, r, 0);
        w.post(peers);
        w.start(peers);
        at(k, r, 1);
        w.put(data, right, 0);
        at(k, r, 2);
        w.complete();
        w.wait();
        at(k, r, 3);
      } else if (mode == "lock") {
        at(k, r, 0);
        w.lock(r % 2 == 0 ? rma::lock_type::exclusive : rma::lock_type::shared, right);
        at(k, r, 1);
        w.put(data, right, 0);
        w.flush(right);
        at(k, r, 2);
        w.unlock(right);
        at(k, r, 3);
      } else if (mode == "lock_all") {
        at(k, r, 0);
        w.lock_all();
        at(k, r, 1);
        w.put(data, right, 0);
        long old = 0;
        const long one = 1;
        w.fetch_and_op(&one, &old, oneside::datatype::of<long>(), left, 0, oneside::op::sum);
        w.flush_all();
        at(k, r, 2);
        w.unlock_all();
        oneside::barrier(world);
        at(k, r, 3);
      } else {
        std::fprintf(stderr, "fault_probe: unknown mode %s\n", argv[1]);
        return 64;
      }
    }
    w.free();
  }
  oneside::barrier(world);
  return 0;
}
