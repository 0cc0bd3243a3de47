// Point-to-point waiting through the waiting primitive (detail::wait_until): a rank stores a
// flag in a peer's segment (a transport atomic), flushes and rings the peer's doorbell; the
// peer waits for the flag. What such a wait costs, above all when ranks outnumber cores,
// where a spin-only wait once measured 7.9 ms per round trip here.
//   ping_pong:  round trips between pairs of ranks (0<->1, 2<->3, …; an odd last rank idles),
//               every pair at once.
//   token_ring: one token passed around all ranks (0 -> 1 -> … -> 0); an operation is one
//               full circle. When ranks outnumber cores, most hops must wake a rank that is
//               not running. With 2 ranks it is a ping-pong.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>
#include <oneside/runtime/wait.hpp>

#include "bench_support.hpp"
#include "runtime/transport.hpp"

namespace {

namespace bench = oneside::bench;
namespace transport = oneside::transport;

// One 8-byte flag per rank, in exposed memory; flags only grow.
class flags {
 public:
  flags()
      : t_(transport::current()),
        memory_(t_.allocate_segment(sizeof(std::uint64_t))),
        addresses_(oneside::allgather(oneside::world(), std::uint64_t{memory_.address()})) {}

  // Sets `rank`'s flag to `value` and wakes it.
  void signal(oneside::rank_t rank, std::uint64_t value) {
    const transport::amo_args store{transport::amo_op::store, transport::amo_type::u64, value};
    t_.amo(rank, static_cast<std::uintptr_t>(addresses_[static_cast<std::size_t>(rank)]), store,
           nullptr);
    t_.flush(rank);
    t_.wake(rank);
  }

  // Returns once this rank's flag has reached `value`.
  void wait_for(std::uint64_t value) {
    std::atomic_ref<std::uint64_t> mine(*static_cast<std::uint64_t*>(memory_.base()));
    oneside::detail::wait_until(t_.local_doorbell(),
                                [&] { return mine.load(std::memory_order_acquire) >= value; });
  }

 private:
  transport::backend& t_;
  transport::segment memory_;
  std::vector<std::uint64_t> addresses_;
};

void ping_pong(benchmark::State& state) {
  const oneside::team& w = oneside::world();
  if (w.size() < 2) {  // the same on every rank: no rank is left waiting
    state.SkipWithError("needs at least 2 ranks");
    return;
  }
  flags f;
  const oneside::rank_t partner = w.rank() ^ 1;
  const bool has_partner = partner < w.size();
  const bool starts = w.rank() % 2 == 0;
  std::uint64_t round = 0;
  bench::measure(state, bench::latency_batch, [&](std::int64_t n) {
    if (!has_partner) return;
    for (std::int64_t i = 0; i < n; ++i) {
      ++round;
      if (starts) {
        f.signal(partner, round);
        f.wait_for(round);
      } else {
        f.wait_for(round);
        f.signal(partner, round);
      }
    }
  });
}
BENCHMARK(ping_pong)->Arg(bench::latency_bytes)->UseManualTime();

void token_ring(benchmark::State& state) {
  const oneside::team& w = oneside::world();
  if (w.size() < 2) {
    state.SkipWithError("needs at least 2 ranks");
    return;
  }
  flags f;
  const oneside::rank_t next = (w.rank() + 1) % w.size();
  std::uint64_t round = 0;
  bench::measure(state, bench::latency_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      ++round;
      if (w.rank() == 0) {
        f.signal(next, round);
        f.wait_for(round);
      } else {
        f.wait_for(round);
        f.signal(next, round);
      }
    }
  });
}
BENCHMARK(token_ring)->Arg(bench::latency_bytes)->UseManualTime();

}  // namespace
