// A SHMEM-style program: what an OpenSHMEM programmer writes, in oneside's names.
//
// 1. A distributed histogram on the symmetric heap: every rank draws keys and counts each in
//    the bin of its owner rank with a non-fetching atomic add (shmem_atomic_add); quiet() and
//    a barrier complete them, and each rank checks its bins against a reference it computes
//    by drawing every rank's keys itself.
// 2. A ring pipeline with put-with-signal (shmem_put_signal): rank 0 sends its column sums to
//    rank 1, which adds its own and passes them on; each rank waits for its signal with
//    signal_wait_until. Rank 0 receives the totals back and checks them.
// 3. Dynamic work distribution with fetch_add on a ticket counter of rank 0
//    (shmem_atomic_fetch_inc): every ticket is taken exactly once, counted with atomic adds.
//
//   oneside-run -n 4 shmem_style [--keys K] [--bins B]
//
// Prints "Solution validates" on success; exits non-zero with a message on any mismatch.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

namespace {

struct options {
  long keys = 20000;  // per rank
  long bins = 64;     // per rank
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--keys" || a == "--bins") && i + 1 < argc) {
      const long v = std::strtol(argv[++i], nullptr, 10);
      (a == "--keys" ? o.keys : o.bins) = v;
    } else {
      throw std::invalid_argument("unknown argument '" + a + "' (use --keys K --bins B)");
    }
  }
  if (o.keys <= 0 || o.bins <= 0) throw std::invalid_argument("--keys and --bins must be positive");
  return o;
}

// Rank r's keys: the same sequence wherever it is drawn.
std::vector<std::uint64_t> keys_of(int r, long count, std::uint64_t range) {
  std::mt19937_64 gen(std::uint64_t{0x5eed0000} + static_cast<std::uint64_t>(r));
  std::uniform_int_distribution<std::uint64_t> pick(0, range - 1);
  std::vector<std::uint64_t> k(static_cast<std::size_t>(count));
  for (auto& x : k) x = pick(gen);
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  oneside::runtime rt(argc, argv);
  const oneside::team& world = oneside::world();
  const int me = world.rank();
  const int n = world.size();
  options opt;
  try {
    opt = parse(argc, argv);
  } catch (const std::exception& e) {
    if (me == 0) std::fprintf(stderr, "shmem_style: %s\n", e.what());
    return 2;
  }
  const auto bins = static_cast<std::size_t>(opt.bins);
  const std::uint64_t range = bins * static_cast<std::uint64_t>(n);
  long errors = 0;

  // ---- 1. histogram with atomic adds on the symmetric heap -----------------------------
  oneside::global_ptr<std::int64_t> hist = oneside::symmetric_allocate<std::int64_t>(bins);
  std::memset(hist.local(), 0, bins * sizeof(std::int64_t));
  oneside::barrier(world);
  for (std::uint64_t key : keys_of(me, opt.keys, range)) {
    const int owner = static_cast<int>(key / bins);
    (void)oneside::atomic_add(hist.on(owner) + static_cast<std::ptrdiff_t>(key % bins),
                              std::int64_t{1});
  }
  oneside::quiet();
  oneside::barrier(world);
  std::vector<std::int64_t> expect(bins, 0);
  for (int r = 0; r < n; ++r) {
    for (std::uint64_t key : keys_of(r, opt.keys, range)) {
      if (static_cast<int>(key / bins) == me) ++expect[key % bins];
    }
  }
  for (std::size_t b = 0; b < bins; ++b) {
    if (hist.local()[b] != expect[b]) {
      if (errors++ < 5) {
        std::fprintf(stderr, "shmem_style: rank %d bin %zu holds %lld, expected %lld\n", me, b,
                     static_cast<long long>(hist.local()[b]), static_cast<long long>(expect[b]));
      }
    }
  }

  // ---- 2. ring pipeline with put-with-signal --------------------------------------------
  oneside::global_ptr<std::int64_t> inbox = oneside::symmetric_allocate<std::int64_t>(bins);
  oneside::global_ptr<std::uint64_t> arrived = oneside::symmetric_allocate<std::uint64_t>(1);
  *arrived.local() = 0;
  oneside::barrier(world);
  const int right = (me + 1) % n;
  std::vector<std::int64_t> partial(hist.local(), hist.local() + bins);
  if (me != 0) {
    oneside::signal_wait_until(arrived.local(), oneside::cmp::eq, 1);
    for (std::size_t b = 0; b < bins; ++b) partial[b] += inbox.local()[b];
  }
  if (n > 1) {
    oneside::rput(std::span<const std::int64_t>(partial), inbox.on(right), arrived.on(right), 1)
        .wait();
  }
  if (me == 0) {
    if (n > 1) oneside::signal_wait_until(arrived.local(), oneside::cmp::eq, 1);
    const std::int64_t* totals = n > 1 ? inbox.local() : partial.data();
    // Column b summed over every rank's bins b: the keys k with k % bins == b.
    std::vector<std::int64_t> column(bins, 0);
    for (int r = 0; r < n; ++r) {
      for (std::uint64_t key : keys_of(r, opt.keys, range)) ++column[key % bins];
    }
    for (std::size_t b = 0; b < bins; ++b) {
      if (totals[b] != column[b] && errors++ < 5) {
        std::fprintf(stderr, "shmem_style: column %zu sums to %lld, expected %lld\n", b,
                     static_cast<long long>(totals[b]), static_cast<long long>(column[b]));
      }
    }
  }

  // ---- 3. tickets from a shared counter ---------------------------------------------------
  constexpr std::int64_t tickets = 1000;
  oneside::global_ptr<std::int64_t> counter = oneside::symmetric_allocate<std::int64_t>(1);
  oneside::global_ptr<std::int64_t> taken =
      oneside::symmetric_allocate<std::int64_t>(static_cast<std::size_t>(tickets));
  *counter.local() = 0;
  std::memset(taken.local(), 0, static_cast<std::size_t>(tickets) * sizeof(std::int64_t));
  oneside::barrier(world);
  long mine = 0;
  for (;;) {
    const std::int64_t t = oneside::fetch_add(counter.on(0), std::int64_t{1}).wait();
    if (t >= tickets) break;
    ++mine;
    (void)oneside::atomic_add(taken.on(0) + t, std::int64_t{1});
  }
  oneside::quiet();
  oneside::barrier(world);
  const long all_taken = oneside::allreduce(world, mine, oneside::op::sum);
  if (all_taken != tickets && errors++ < 5) {
    std::fprintf(stderr, "shmem_style: rank %d: %ld tickets taken in all, expected %lld\n", me,
                 all_taken, static_cast<long long>(tickets));
  }
  if (me == 0) {
    for (std::int64_t t = 0; t < tickets; ++t) {
      if (taken.local()[t] != 1 && errors++ < 5) {
        std::fprintf(stderr, "shmem_style: ticket %lld taken %lld times\n",
                     static_cast<long long>(t), static_cast<long long>(taken.local()[t]));
      }
    }
  }

  oneside::symmetric_free(taken);
  oneside::symmetric_free(counter);
  oneside::symmetric_free(arrived);
  oneside::symmetric_free(inbox);
  oneside::symmetric_free(hist);
  const long total_errors = oneside::allreduce(world, errors, oneside::op::sum);
  if (me == 0) {
    if (total_errors == 0) {
      std::printf("shmem_style: %d ranks, %ld keys each, %ld bins each, %lld tickets\n", n,
                  opt.keys, opt.bins, static_cast<long long>(tickets));
      std::printf("Solution validates\n");
    } else {
      std::printf("ERROR: %ld mismatches: the solution does not validate\n", total_errors);
    }
  }
  return total_errors == 0 ? 0 : 1;
}
