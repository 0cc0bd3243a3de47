// The ring demo: a token travels around the ranks `laps` times, each rank adding its rank
// number as it passes the token on with a one-sided put into the next rank's mailbox; then an
// allreduce checks every rank's view of the result. Each rank prints where it runs and what
// it saw; the program exits non-zero if any check fails.
//
//   oneside-run -n 4 ring [laps]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <oneside/oneside.hpp>
#include <oneside/runtime/transport.hpp>
#include <oneside/runtime/wait.hpp>

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

  // A mailbox in exposed memory; everyone learns everyone's mailbox address.
  auto& transport = oneside::transport::current();
  oneside::transport::segment mailbox = transport.allocate_segment(sizeof(std::int64_t) * 2);
  auto* box = static_cast<std::atomic<std::int64_t>*>(mailbox.base());
  new (box) std::atomic<std::int64_t>[2] {};  // [0]: token value, [1]: hops seen
  const std::vector<std::uint64_t> boxes =
      oneside::allgather(world, std::uint64_t{mailbox.address()});
  const int next = (me + 1) % n;
  oneside::barrier(world);

  // The token: (value, hop number). Rank 0 starts each lap; a rank waits for hop h to arrive,
  // adds its rank and sends hop h+1 on.
  const auto start = std::chrono::steady_clock::now();
  std::int64_t value = 0;
  for (long lap = 0; lap < laps; ++lap) {
    const std::int64_t hop = lap * n + me;  // the hop that reaches this rank in this lap
    if (!(lap == 0 && me == 0)) {
      oneside::wait_until([&] { return box[1].load(std::memory_order_acquire) == hop; });
      value = box[0].load(std::memory_order_relaxed);
    }
    value += me;
    if (n == 1) {
      box[0].store(value, std::memory_order_relaxed);
      box[1].store(hop + 1, std::memory_order_release);
      continue;
    }
    // Put the value, then announce it: an atomic store of the hop number, ordered after the
    // put (the receiver reads the hop word with acquire, then the value).
    const auto base = boxes[static_cast<std::size_t>(next)];
    transport.put(next, base, std::as_bytes(std::span(&value, 1)));
    transport.amo(next, base + sizeof(std::int64_t),
                  {oneside::transport::amo_op::store, oneside::transport::amo_type::i64,
                   static_cast<std::uint64_t>(hop + 1)},
                  nullptr);
    transport.wake(next);
  }
  if (me == 0 && n > 1) {
    // The final hop comes back to rank 0.
    oneside::wait_until([&] { return box[1].load(std::memory_order_acquire) == laps * n; });
    value = box[0].load(std::memory_order_relaxed);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

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
