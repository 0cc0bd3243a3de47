// Pointer chasing over a distributed linked list (issue 19, Grappa's style): every rank owns
// --nodes-per-rank nodes of one list, a random cycle through all nodes of all ranks, so that
// each hop goes to a random rank. Each rank walks it from --fibers F random places at once,
// one fiber per walker, each reading node after node with a blocking-looking
// `node n = oneside::rget(p).wait();`: inside a fiber that wait suspends the fiber and the
// rank's other fibers issue their reads meanwhile (one flush then completes them all on the MPI
// transport); on the shared-memory path a node is a load. --fibers 0 is the baseline: the same
// hops in a plain loop on the rank's thread, one walker.
//
//   oneside-run -n 4 chase [--nodes-per-rank N] [--fibers F] [--hops H] [--seed S]
//
// The list: a pseudo-random permutation sigma of the M = N x ranks global node ids (a Feistel
// network over the next power of four, cycle-walked into [0, M), as format-preserving
// encryption does), laid out as the cycle sigma(0) -> sigma(1) -> ... -> sigma(M-1) ->
// sigma(0). Global id g is node g % N of rank g / N; it holds a pointer to its successor and a
// payload, a hash of g. Each rank fills its own nodes, one array per rank: an
// rma::window::allocate window's memory (the default), or a symmetric_allocate block with
// --memory heap (over MPI the heap lies in the job's dynamic window, where Open MPI's osc ucx
// makes every MPI_Get wait for a lookup of the target's regions: nothing can overlap it). The
// walkers only ever follow the pointers in memory.
//
// Verification: a walker that starts at cycle position k and makes h hops must visit sigma(k),
// ..., sigma(k + h - 1) and end at sigma(k + h); each rank recomputes that from the permutation
// (no memory read) and compares both the payload sum and the end pointer of every walker.
// Rank 0 prints "Solution validates" and the rates (hops per second of each rank, and the
// total), or every rank fails with a message and a non-zero status.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "common/app_main.hpp"
#include "common/option_reader.hpp"

namespace {

// 16 bytes, so that rget(p) keeps the node in its future (a larger value would take a shared
// state from the heap per get). `next` is the successor's (rank, index), packed as Grappa's
// global addresses are: the rank above bit 40.
struct node {
  std::uint64_t next;
  std::uint64_t payload;
};
constexpr int index_bits = 40;

struct options {
  std::uint64_t nodes_per_rank = 1'000'000;
  int fibers = 256;              // 0: the plain loop
  std::uint64_t hops = 200'000;  // per rank, shared among the walkers
  std::uint64_t seed = 19;
  std::string memory = "window";  // where the nodes live: window | heap
  bool prefetch = false;          // fibers prefetch a directly loaded node and yield first
  bool inject_error = false;      // testing only: corrupt one pointer so verification must fail
  bool help = false;
};

constexpr const char* usage =
    "usage: chase [--nodes-per-rank N] [--fibers F] [--hops H] [--memory window|heap]\n"
    "             [--prefetch] [--seed S] [--inject-error]\n"
    "  --nodes-per-rank N  list nodes each rank owns (default 1000000)\n"
    "  --fibers F          walkers per rank, one fiber each; 0: one walker in a plain loop\n"
    "                      (default 256)\n"
    "  --hops H            hops per rank, shared among its walkers (default 200000)\n"
    "  --memory M          where the nodes live: an rma::window::allocate window (window,\n"
    "                      the default) or the symmetric heap (heap)\n"
    "  --prefetch          fibers prefetch a node they load directly and yield before reading\n"
    "                      it, so that their cache misses overlap\n"
    "  --seed S            the list's and the start points' seed (default 19)\n"
    "  --inject-error      corrupt one pointer of the list (verification must fail)\n";

// Parses `--name value` and `--name=value`; returns the first error, or an empty string.
std::string parse_options(int argc, char** argv, options& o) {
  oneside::apps::option_reader in(argc, argv);
  while (in.next()) {
    if (in.name() == "--help" || in.name() == "-h") {
      o.help = true;
    } else if (in.name() == "--nodes-per-rank") {
      in.number(o.nodes_per_rank, 1, 1LL << 28);
    } else if (in.name() == "--fibers") {
      in.number(o.fibers, 0, 1 << 16);
    } else if (in.name() == "--hops") {
      in.number(o.hops, 1, 1LL << 40);
    } else if (in.name() == "--seed") {
      in.number(o.seed, 0, (1LL << 62));
    } else if (in.name() == "--memory") {
      in.choice(o.memory, {"window", "heap"}, "memory");
    } else if (in.name() == "--prefetch") {
      o.prefetch = true;
    } else if (in.name() == "--inject-error") {
      o.inject_error = true;
    } else {
      in.fail("unknown option '" + std::string(in.name()) + "'");
    }
  }
  return in.error();
}

// splitmix64's finalizer: a bijective mix of 64 bits.
constexpr std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// A pseudo-random permutation of [0, m) with its inverse: a balanced four-round Feistel
// network on 2b bits (4^b >= m), cycle-walked until the value falls in [0, m) (fewer than four
// steps on average). Pure arithmetic: every rank computes the same one.
class permutation {
 public:
  permutation(std::uint64_t m, std::uint64_t seed) : m_(m) {
    int bits = std::max(2, static_cast<int>(std::bit_width(m - 1)));
    bits += bits & 1;
    half_ = bits / 2;
    mask_ = (std::uint64_t{1} << half_) - 1;
    for (int i = 0; i < rounds; ++i) keys_[i] = mix(seed * rounds + static_cast<unsigned>(i) + 1);
  }

  std::uint64_t size() const noexcept { return m_; }

  std::uint64_t operator()(std::uint64_t x) const noexcept {
    do {
      x = forward(x);
    } while (x >= m_);
    return x;
  }
  std::uint64_t inverse(std::uint64_t y) const noexcept {
    do {
      y = backward(y);
    } while (y >= m_);
    return y;
  }

 private:
  static constexpr int rounds = 4;
  std::uint64_t f(std::uint64_t half, int round) const noexcept {
    return mix(half ^ keys_[round]) & mask_;
  }
  std::uint64_t forward(std::uint64_t x) const noexcept {
    std::uint64_t l = x >> half_;
    std::uint64_t r = x & mask_;
    for (int i = 0; i < rounds; ++i) {
      const std::uint64_t t = l ^ f(r, i);
      l = r;
      r = t;
    }
    return (l << half_) | r;
  }
  std::uint64_t backward(std::uint64_t y) const noexcept {
    std::uint64_t l = y >> half_;
    std::uint64_t r = y & mask_;
    for (int i = rounds - 1; i >= 0; --i) {
      const std::uint64_t t = r ^ f(l, i);
      r = l;
      l = t;
    }
    return (l << half_) | r;
  }

  std::uint64_t m_;
  int half_ = 1;
  std::uint64_t mask_ = 1;
  std::uint64_t keys_[rounds] = {};
};

// What the list and its walkers are made of, the same on every rank.
struct layout {
  permutation sigma;
  std::uint64_t per_rank;
  std::vector<std::uint64_t> bases;  // where each rank's array lies in its address space

  // The packed (rank, index) of global id g, and the pointer it names.
  std::uint64_t code(std::uint64_t g) const noexcept {
    return (g / per_rank) << index_bits | (g % per_rank);
  }
  oneside::global_ptr<node> at(std::uint64_t code) const {
    const auto r = static_cast<std::size_t>(code >> index_bits);
    const std::uint64_t i = code & ((std::uint64_t{1} << index_bits) - 1);
    return oneside::global_ptr<node>(static_cast<oneside::rank_t>(r),
                                     static_cast<std::uintptr_t>(bases[r] + i * sizeof(node)));
  }
  // The code of the node at cycle position k (mod M).
  std::uint64_t code_at_position(std::uint64_t k) const { return code(sigma(k % sigma.size())); }
  static std::uint64_t payload(std::uint64_t g) noexcept { return mix(g ^ 0x6a09e667f3bcc908ULL); }
};

// A walker: where it starts on the cycle, how many hops it makes, what it found.
struct walker {
  std::uint64_t start;  // cycle position
  std::uint64_t hops;
  std::uint64_t sum = 0;
  std::uint64_t end = 0;  // the code of the node it stopped at
};

std::vector<walker> make_walkers(const options& o, int me, const permutation& sigma) {
  const std::uint64_t count = static_cast<std::uint64_t>(std::max(o.fibers, 1));
  std::vector<walker> w(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    w[i].start = mix(o.seed ^ mix(static_cast<std::uint64_t>(me) * count + i + 1)) % sigma.size();
    w[i].hops = o.hops / count + (i < o.hops % count ? 1 : 0);
  }
  return w;
}

// The chase itself: what every fiber (or the plain loop) runs. With `prefetch` (fibers only),
// a node this process loads directly is first prefetched and the fiber yields, so that the
// other fibers' cache misses overlap with its own (Grappa's prefetch-and-yield).
void walk(walker& w, const layout& l, bool prefetch) {
  std::uint64_t sum = 0;
  std::uint64_t code = l.code_at_position(w.start);  // the list's head, given to the walker
  for (std::uint64_t h = 0; h < w.hops; ++h) {
    const oneside::global_ptr<node> p = l.at(code);
    if (prefetch && p.is_local()) {
      __builtin_prefetch(p.local());
      oneside::this_fiber::yield();
    }
    const node n = oneside::rget(p).wait();
    sum += n.payload;
    code = n.next;
  }
  w.sum = sum;
  w.end = code;
}

// The walk recomputed from the permutation alone: how many walkers went wrong.
std::uint64_t check(const layout& l, const std::vector<walker>& walkers) {
  std::uint64_t wrong = 0;
  for (const walker& w : walkers) {
    std::uint64_t sum = 0;
    for (std::uint64_t h = 0; h < w.hops; ++h) {
      sum += layout::payload(l.sigma((w.start + h) % l.sigma.size()));
    }
    if (sum != w.sum || l.code_at_position(w.start + w.hops) != w.end) ++wrong;
  }
  return wrong;
}

int run(int argc, char** argv) {
  const oneside::team& world = oneside::world();
  const int me = world.rank();
  const int ranks = world.size();
  options o;
  if (const std::string error = parse_options(argc, argv, o); !error.empty()) {
    std::fprintf(stderr, "chase: rank %d: %s\n%s", me, error.c_str(), me == 0 ? usage : "");
    return 2;
  }
  if (o.help) {
    if (me == 0) std::fputs(usage, stdout);
    return 0;
  }
  // The list: this rank's nodes, each pointing at its successor on the cycle, in an rma
  // window's memory or in the symmetric heap (--memory).
  const std::uint64_t n = o.nodes_per_rank;
  std::optional<oneside::rma::window> win;
  oneside::global_ptr<node> heap_block;
  node* mine = nullptr;
  if (o.memory == "window") {
    win = oneside::rma::window::allocate(world, n * sizeof(node), sizeof(node));
    mine = static_cast<node*>(win->base());
  } else {
    heap_block = oneside::symmetric_allocate<node>(n);
    mine = heap_block.local();
  }
  const layout l{permutation(n * static_cast<std::uint64_t>(ranks), o.seed), n,
                 oneside::allgather(world, std::uint64_t{reinterpret_cast<std::uintptr_t>(mine)})};
  const std::uint64_t first = static_cast<std::uint64_t>(me) * n;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t g = first + i;
    mine[i] = node{l.code_at_position(l.sigma.inverse(g) + 1), layout::payload(g)};
  }
  std::vector<walker> walkers = make_walkers(o, me, l.sigma);
  oneside::barrier(world);
  if (o.inject_error && me == 0) {
    // The first walker's first node now skips its successor.
    const walker& w = walkers.front();
    oneside::put(node{l.code_at_position(w.start + 2), layout::payload(l.sigma(w.start))},
                 l.at(l.code_at_position(w.start)));
  }
  oneside::barrier(world);

  const auto start = std::chrono::steady_clock::now();
  if (o.fibers == 0) {
    walk(walkers.front(), l, false);
  } else {
    std::vector<oneside::fiber> fibers;
    fibers.reserve(walkers.size());
    for (walker& w : walkers) {
      fibers.push_back(oneside::fiber::spawn([&w, &l, &o] { walk(w, l, o.prefetch); }));
    }
    for (oneside::fiber& f : fibers) f.join();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  oneside::barrier(world);

  const std::uint64_t wrong = check(l, walkers);
  const std::uint64_t wrong_total = oneside::allreduce(world, wrong, oneside::op::sum);
  const double rate = static_cast<double>(o.hops) / seconds;
  const std::vector<double> rates = oneside::gather(world, rate, 0);
  const double total = oneside::allreduce(world, rate, oneside::op::sum);
  if (win) {
    win->free();
  } else {
    oneside::symmetric_free(heap_block);
  }
  if (wrong_total != 0) {
    std::fprintf(stderr,
                 "chase: rank %d: %llu of this rank's %zu walkers (%llu of all ranks') did not "
                 "visit the nodes the list holds: the walk does not validate\n",
                 me, static_cast<unsigned long long>(wrong), walkers.size(),
                 static_cast<unsigned long long>(wrong_total));
    return 1;
  }
  if (me == 0) {
    std::printf("chase: %d ranks, %llu nodes per rank, %s, %llu hops per rank\n", ranks,
                static_cast<unsigned long long>(n),
                o.fibers == 0 ? "plain loop (no fibers)"
                              : (std::to_string(o.fibers) + " fibers per rank").c_str(),
                static_cast<unsigned long long>(o.hops));
    for (int r = 0; r < ranks; ++r) {
      std::printf("rank %d: %.0f hops/s\n", r, rates[static_cast<std::size_t>(r)]);
    }
    std::printf("Solution validates\n");
    std::printf("Rate (hops/s): %.0f total, %.0f per rank (min %.0f)\n", total, total / ranks,
                *std::min_element(rates.begin(), rates.end()));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return oneside::apps::app_main("chase", argc, argv, run);
}
