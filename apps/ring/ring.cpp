// The ring demo: a token travels around the ranks `laps` times, each rank adding its rank
// number as it passes the token on with one-sided puts into the next rank's mailbox, a word
// of an rma window: the value, then the hop number as a flag the next rank waits for
// (oneside::wait_until) and a wake-up so that it notices at once. Then a broadcast and an
// allreduce check every rank's view of the result. Each rank prints where it runs and what it
// saw; the program exits non-zero if any check fails.
//
//   oneside-run -n 4 ring [laps]
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include <oneside/oneside.hpp>
#include <oneside/runtime/wait.hpp>

namespace {

namespace rma = oneside::rma;

// A rank's mailbox: its window's two words, at these displacements (units of 8 bytes).
constexpr oneside::rma::disp_t value_word = 0;  // the token's value
constexpr oneside::rma::disp_t hop_word = 1;    // the number of the last hop that arrived

}  // namespace

int main(int argc, char** argv) {
  oneside::runtime rt(argc, argv);
  const oneside::team& world = oneside::world();
  const int me = world.rank();
  const int n = world.size();
  const long laps = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 1000;
  if (laps <= 0) {
    if (me == 0) std::fprintf(stderr, "ring: laps must be positive\n");
    return 2;
  }

  // The mailboxes, one per rank, in one window over the world; a passive-target epoch to
  // every rank for the whole run (nobody takes exclusive locks).
  rma::window win = rma::window::allocate(world, 2 * sizeof(std::int64_t), sizeof(std::int64_t));
  auto* box = static_cast<std::int64_t*>(win.base());
  box[value_word] = 0;
  box[hop_word] = 0;
  const std::atomic_ref<std::int64_t> hop_seen(box[hop_word]);
  const std::atomic_ref<std::int64_t> value_seen(box[value_word]);
  win.lock_all(rma::mode::nocheck);
  const int next = (me + 1) % n;
  oneside::barrier(world);

  // The token: (value, hop number). Rank 0 starts each lap; a rank waits for hop h to arrive,
  // adds its rank and sends hop h+1 on.
  const auto start = std::chrono::steady_clock::now();
  std::int64_t value = 0;
  for (long lap = 0; lap < laps; ++lap) {
    const std::int64_t hop = lap * n + me;  // the hop that reaches this rank in this lap
    if (!(lap == 0 && me == 0)) {
      oneside::wait_until([&] { return hop_seen.load(std::memory_order_acquire) == hop; });
      value = value_seen.load(std::memory_order_relaxed);
    }
    value += me;
    // Put the value and complete it at the next rank, then announce it: the hop number,
    // written atomically (the receiver reads it with acquire, then the value), completed too,
    // and a wake-up for the next rank in case it sleeps.
    const std::int64_t arrived = hop + 1;
    win.put(std::span<const std::int64_t>(&value, 1), next, value_word);
    win.flush(next);
    win.accumulate(std::span<const std::int64_t>(&arrived, 1), next, hop_word,
                   oneside::op::replace);
    win.flush(next);
    oneside::wake(next);
  }
  if (me == 0) {
    // The final hop comes back to rank 0.
    oneside::wait_until([&] { return hop_seen.load(std::memory_order_acquire) == laps * n; });
    value = value_seen.load(std::memory_order_relaxed);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  oneside::barrier(world);
  win.unlock_all();
  win.free();

  // Every lap adds 0 + 1 + … + n-1.
  const std::int64_t expected = laps * static_cast<std::int64_t>(n) * (n - 1) / 2;
  const std::int64_t final_value = oneside::broadcast(world, value, 0);
  const int ok_here = final_value == expected ? 1 : 0;
  const int ok_everywhere = oneside::allreduce(world, ok_here, oneside::op::land);
  const long hops_total = oneside::allreduce(world, laps, oneside::op::sum);

  std::printf("rank %d of %d on %s: token after %ld laps = %lld (expected %lld) %s\n", me, n,
              oneside::this_rank_topology().describe().c_str(), laps,
              static_cast<long long>(final_value), static_cast<long long>(expected),
              ok_here ? "ok" : "WRONG");
  std::fflush(stdout);
  oneside::barrier(world);
  if (me == 0) {
    std::printf("ring: %ld hops in %.3f s (%.2f us per hop); allreduce of %d ranks: %s\n",
                hops_total, seconds, seconds * 1e6 / static_cast<double>(laps * n), n,
                ok_everywhere ? "all correct" : "MISMATCH");
  }
  return ok_everywhere ? 0 : 1;
}
