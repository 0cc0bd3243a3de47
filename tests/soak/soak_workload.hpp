// The soak workloads: what a long-running program does over and over (windows of each flavour
// made and freed, teams split and dropped, heap blocks allocated and freed, and puts, gets,
// atomics and accumulates between them), and the memory this process holds meanwhile. The CI
// test (soak_test.cpp) runs the mixed workload for a few seconds and checks the resident set
// stays flat; oneside_soak (soak_main.cpp, scripts/soak.sh) runs any of them for longer and
// prints the resident set as it goes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace oneside::soak {

// This process's resident set now (VmRSS) and at its peak (VmHWM), in KiB
// (/proc/self/status).
struct rss_kib {
  long current = 0;
  long peak = 0;
};
rss_kib read_rss();
// The largest current resident set over the world's ranks, in KiB (collective).
long world_max_rss();

// `cycles` windows made and freed, one after another, each with a put, a get and an atomic to
// the next rank under lock_all (collective; the flavours take turns: allocate, create,
// allocate_shared, dynamic with a region attached and detached).
void window_cycles(int cycles);
// `count` splits of the world (every other one by rank parity, the others keeping everyone),
// each team used once (an allreduce) and then dropped (collective).
void team_splits(int count);

// Mixed traffic, a round at a time (collective). Each round: a window of the round's flavour
// made and freed, with puts, gets, fetch-and-ops, accumulates and compare-and-swaps to every
// rank under lock_all (and, on a dynamic window, a second region attached for a while); a
// region attached to, written in and detached from a dynamic window that lives as long as the
// workload; a team split and used; heap blocks allocated, written and read by the next rank
// with rput, rget and fetch_add, and freed (now and then one larger than a heap segment).
class mixed_workload {
 public:
  mixed_workload();  // collective
  ~mixed_workload();
  mixed_workload(const mixed_workload&) = delete;
  mixed_workload& operator=(const mixed_workload&) = delete;

  // Runs the next round; false (on every rank) when a value read back was wrong.
  bool round();

 private:
  struct state;
  std::unique_ptr<state> state_;
  std::uint64_t round_ = 0;
};

// `cycles` times: the runtime opened, a window made, used and freed, a team split, and the
// runtime closed (collective; call it with no runtime open). Returns the largest VmRSS over
// the ranks after each `every` cycles, measured before the close.
std::vector<long> reopen_cycles(int cycles, int every);

}  // namespace oneside::soak
