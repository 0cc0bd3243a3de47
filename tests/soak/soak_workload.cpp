// The soak workloads (see soak_workload.hpp).
#include "soak_workload.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

namespace oneside::soak {
namespace {

namespace rma = oneside::rma;
using rma::disp_t;

constexpr std::uint64_t round_mix = 1'000'003;

// A window of `flavor` over `words` 64-bit words per rank, zeroed, with what a rank needs to
// reach the others: their memory's displacement (the address, for a dynamic window) and a
// pointer to its own words.
struct soak_window {
  std::vector<std::uint64_t> owned;  // create: the exposed memory; dynamic: the attached region
  rma::window win;                   // (freed first)
  std::uint64_t* local = nullptr;
  std::vector<std::uint64_t> disp;  // by rank: where its words start (0, or an address)
};

soak_window make_window(rma::flavor f, std::size_t words) {
  const team& w = world();
  // Shared windows need every rank in one shared-memory domain (not so under mpirun over TCP,
  // or with ONESIDE_SHM_LOAD_STORE=0): such a run allocates instead.
  if (f == rma::flavor::allocate_shared && local_team().size() != w.size()) {
    f = rma::flavor::allocate;
  }
  soak_window s;
  const std::size_t bytes = words * sizeof(std::uint64_t);
  switch (f) {
    case rma::flavor::allocate:
      s.win = rma::window::allocate(w, bytes, 1);
      s.local = static_cast<std::uint64_t*>(s.win.base());
      break;
    case rma::flavor::create:
      s.owned.assign(words, 0);
      s.win = rma::window::create(w, s.owned.data(), bytes, 1);
      s.local = s.owned.data();
      break;
    case rma::flavor::allocate_shared:
      s.win = rma::window::allocate_shared(w, bytes, 1);
      s.local = static_cast<std::uint64_t*>(s.win.base());
      break;
    case rma::flavor::dynamic:
      s.win = rma::window::create_dynamic(w);
      s.owned.assign(words, 0);
      s.win.attach(s.owned.data(), bytes);
      s.local = s.owned.data();
      break;
  }
  const std::uint64_t mine =
      f == rma::flavor::dynamic ? reinterpret_cast<std::uintptr_t>(s.local) : 0;
  s.disp = allgather(w, mine);
  return s;
}

rma::flavor flavor_of(std::uint64_t i) {
  constexpr rma::flavor order[] = {rma::flavor::allocate, rma::flavor::create,
                                   rma::flavor::allocate_shared, rma::flavor::dynamic};
  return order[i % 4];
}

disp_t at(const soak_window& s, rank_t r, std::size_t word) {
  return static_cast<disp_t>(s.disp[static_cast<std::size_t>(r)] + word * sizeof(std::uint64_t));
}

// Every rank puts a value into its own word of every rank's window, adds one to word 0 with
// accumulate and to word 1 with fetch_and_op, swaps its word once more, and reads its words
// back. Returns whether everything read back was right.
bool window_traffic(soak_window& s, std::uint64_t round) {
  const team& w = world();
  const rank_t me = w.rank();
  const auto mine = static_cast<std::size_t>(2 + me);
  const std::uint64_t value = round * round_mix + static_cast<std::uint64_t>(me) + 1;
  bool ok = true;
  s.win.lock_all();
  for (rank_t t = 0; t < w.size(); ++t) {
    const std::uint64_t one = 1;
    s.win.put(value, t, at(s, t, mine));
    s.win.accumulate(std::span<const std::uint64_t>(&one, 1), t, at(s, t, 0), op::sum);
    (void)s.win.fetch_and_op(one, t, at(s, t, 1), op::sum);
    s.win.flush(t);
    const std::uint64_t old = s.win.compare_and_swap(value + 1, value, t, at(s, t, mine));
    std::uint64_t back = 0;
    s.win.get(std::span<std::uint64_t>(&back, 1), t, at(s, t, mine));
    s.win.flush(t);
    ok = ok && old == value && back == value + 1;
  }
  s.win.unlock_all();
  barrier(w);
  const auto n = static_cast<std::uint64_t>(w.size());
  ok = ok && s.local[0] == n && s.local[1] == n;
  return ok;
}

// On a dynamic window: another region attached, written by every rank and detached, `times`
// times (each attach and detach is a new version of the rank's region table).
bool region_churn(soak_window& s, std::uint64_t round, int times) {
  const team& w = world();
  const rank_t me = w.rank();
  bool ok = true;
  for (int k = 0; k < times; ++k) {
    std::vector<std::uint64_t> extra(static_cast<std::size_t>(w.size()), 0);
    s.win.attach(extra.data(), extra.size() * sizeof(std::uint64_t));
    const auto where =
        allgather(w, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(extra.data())));
    const std::uint64_t value = round * round_mix + static_cast<std::uint64_t>(k);
    s.win.lock_all();
    for (rank_t t = 0; t < w.size(); ++t) {
      s.win.put(value, t,
                static_cast<disp_t>(where[static_cast<std::size_t>(t)] +
                                    static_cast<std::uint64_t>(me) * sizeof(std::uint64_t)));
    }
    s.win.unlock_all();
    barrier(w);
    for (std::uint64_t v : extra) ok = ok && v == value;
    s.win.detach(extra.data());
    barrier(w);  // nobody reaches `extra` any more
  }
  return ok;
}

// A heap block per rank (of a size that changes with the round; now and then one larger than a
// heap segment, which the heap serves from a segment of its own), written and read by the
// previous rank with rput, fetch_add and rget.
bool heap_traffic(std::uint64_t round) {
  const team& w = world();
  const rank_t me = w.rank();
  const std::size_t words =
      round % 16 == 5 ? (std::size_t{3} << 20) / sizeof(std::uint64_t) : 8 + (round % 7) * 100;
  global_ptr<std::uint64_t> mine = allocate<std::uint64_t>(words);
  std::uint64_t* p = mine.local();
  for (std::size_t i = 0; i < words; ++i) p[i] = 0;
  const auto where = allgather(w, static_cast<std::uint64_t>(mine.address()));
  barrier(w);
  const rank_t next = (me + 1) % w.size();
  const global_ptr<std::uint64_t> there(
      next, static_cast<std::uintptr_t>(where[static_cast<std::size_t>(next)]));
  const std::uint64_t value = round * round_mix + static_cast<std::uint64_t>(me);
  rput(value, there + 1).wait();
  (void)fetch_add(there, std::uint64_t{1}).wait();
  bool ok = rget(there + 1).wait() == value;
  barrier(w);
  ok = ok && p[0] == 1;
  deallocate(mine);
  return ok;
}

bool all_ok(bool ok) {
  return allreduce(world(), ok ? 1 : 0, op::min) == 1;
}

}  // namespace

rss_kib read_rss() {
  rss_kib r;
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return r;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    long v = 0;
    if (std::sscanf(line, "VmRSS: %ld", &v) == 1) r.current = v;
    if (std::sscanf(line, "VmHWM: %ld", &v) == 1) r.peak = v;
  }
  std::fclose(f);
  return r;
}

long world_max_rss() {
  return allreduce(world(), read_rss().current, op::max);
}

void window_cycles(int cycles) {
  const std::size_t words = 2 + static_cast<std::size_t>(world().size());
  for (int i = 0; i < cycles; ++i) {
    soak_window s = make_window(flavor_of(static_cast<std::uint64_t>(i)), words);
    const rank_t next = (world().rank() + 1) % world().size();
    s.win.lock_all();
    s.win.put(std::uint64_t{1}, next, at(s, next, 0));
    std::uint64_t back = 0;
    s.win.get(std::span<std::uint64_t>(&back, 1), next, at(s, next, 1));
    (void)s.win.fetch_and_op(std::uint64_t{1}, next, at(s, next, 1), op::sum);
    s.win.unlock_all();
    s.win.free();
  }
}

void team_splits(int count) {
  const team& w = world();
  for (int i = 0; i < count; ++i) {
    const team t = w.split(i % 2 == 0 ? 0 : w.rank() % 2, w.rank());
    (void)allreduce(t, 1, op::sum);
  }
}

// The dynamic window that lives as long as the mixed workload.
struct mixed_workload::state {
  soak_window lasting =
      make_window(rma::flavor::dynamic, 2 + static_cast<std::size_t>(world().size()));
};

mixed_workload::mixed_workload() : state_(std::make_unique<state>()) {}

mixed_workload::~mixed_workload() = default;

bool mixed_workload::round() {
  const team& w = world();
  const std::uint64_t r = round_++;
  bool ok = true;
  {
    soak_window s = make_window(flavor_of(r), 2 + static_cast<std::size_t>(w.size()));
    ok = window_traffic(s, r) && ok;
    if (s.win.flavor() == rma::flavor::dynamic) ok = region_churn(s, r, 4) && ok;
    s.win.free();
  }
  ok = region_churn(state_->lasting, r, 2) && ok;
  {
    const team t =
        w.split(static_cast<int>((static_cast<std::uint64_t>(w.rank()) + r) % 2), w.rank());
    ok = allreduce(t, 1, op::sum) == t.size() && ok;
  }
  ok = heap_traffic(r) && ok;
  return all_ok(ok);
}

std::vector<long> reopen_cycles(int cycles, int every) {
  std::vector<long> rss;
  for (int i = 1; i <= cycles; ++i) {
    runtime rt;
    window_cycles(4);
    team_splits(1);
    if (i % every == 0) rss.push_back(world_max_rss());
    rt.close();
  }
  return rss;
}

}  // namespace oneside::soak
