// hang_probe: the rank program of the hang-diagnosis tests (hang_test.cpp). Every rank opens
// the runtime, rank 0 prints "job <id>" on stdout, then all do what the first argument says:
//   lock-cycle        rank 0 takes the exclusive lock of its own window memory and puts;
//                     after a barrier it enters another, while the others want the lock
//   fence-vs-barrier  rank 0 calls window::fence, the others barrier(world): a hang
//   flag              every rank waits on a local word that nobody sets: a hang
//   compute S         rank 0 computes (no wait) for S seconds, then barrier: no hang
//   compute-waiting S as compute, while a thread of rank 0 waits in oneside for the main
//                     thread's result: no hang
//   fiber-flag        every rank's two fibers wait on a local word that nobody sets, and its
//                     own code joins them: a hang (a thread whose contexts all wait waits)
//   fiber-compute S   rank 0's fiber waits for another fiber's result, which computes (never
//                     yielding) for S seconds, then barrier: no hang (a fiber computing is
//                     computing)
// and close the runtime (when they get there).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include <oneside/oneside.hpp>

namespace {

namespace rma = oneside::rma;

// Busy work for `seconds` (a computing rank, never in a oneside wait).
double compute(int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  volatile double x = 1.0;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 100000; ++i) x = x * 1.0000001 + 1e-9;
  }
  return x;
}

int usage() {
  std::fprintf(stderr,
               "usage: hang_probe lock-cycle|fence-vs-barrier|flag|compute S|compute-waiting S|"
               "fiber-flag|fiber-compute S\n");
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string_view mode(argv[1]);
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 0;
  oneside::runtime rt(argc, argv);
  const oneside::team& world = oneside::world();
  const oneside::rank_t me = world.rank();
  if (me == 0) {
    std::printf("job %s\n", oneside::setting_value("ONESIDE_JOB_ID").c_str());
    std::fflush(stdout);
  }
  if (mode == "lock-cycle") {
    rma::window w = rma::window::allocate(world, sizeof(long), sizeof(long));
    const long one = 1;
    if (me == 0) {
      w.lock(rma::lock_type::exclusive, 0);
      w.put(std::span<const long>(&one, 1), 0, 0);
      w.flush(0);
      oneside::barrier(world);  // rank 0 holds the lock
      oneside::barrier(world);  // the others never come: they wait for the lock
      w.unlock(0);
    } else {
      oneside::barrier(world);
      w.lock(rma::lock_type::exclusive, 0);
      w.put(std::span<const long>(&one, 1), 0, 0);
      w.unlock(0);
      oneside::barrier(world);
    }
    w.free();
  } else if (mode == "fence-vs-barrier") {
    rma::window w = rma::window::allocate(world, sizeof(long), sizeof(long));
    if (me == 0) {
      w.fence();
    } else {
      oneside::barrier(world);
    }
    w.free();
  } else if (mode == "flag") {
    static std::uint64_t flag = 0;
    oneside::wait_until(&flag, oneside::cmp::ne, std::uint64_t{0});
  } else if (mode == "compute") {
    if (me == 0) (void)compute(seconds);
    oneside::barrier(world);
  } else if (mode == "compute-waiting") {
    if (me == 0) {
      std::atomic<int> result{0};
      std::thread waiter([&] { oneside::wait_until([&] { return result.load() != 0; }); });
      (void)compute(seconds);
      result.store(1);
      oneside::wake(0);
      waiter.join();
    }
    oneside::barrier(world);
  } else if (mode == "fiber-flag") {
    static std::uint64_t flag = 0;
    auto wait_for_flag = [] { oneside::wait_until(&flag, oneside::cmp::ne, std::uint64_t{0}); };
    oneside::fiber a = oneside::fiber::spawn(wait_for_flag);
    oneside::fiber b = oneside::fiber::spawn(wait_for_flag);
    a.join();
    b.join();
  } else if (mode == "fiber-compute") {
    if (me == 0) {
      std::atomic<int> result{0};
      oneside::fiber waiter =
          oneside::fiber::spawn([&] { oneside::wait_until([&] { return result.load() != 0; }); });
      oneside::fiber worker = oneside::fiber::spawn([&] {
        (void)compute(seconds);
        result.store(1);
      });
      waiter.join();
      worker.join();
    }
    oneside::barrier(world);
  } else {
    return usage();
  }
  return 0;
}
