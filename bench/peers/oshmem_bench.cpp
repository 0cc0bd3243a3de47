// The OpenSHMEM peer of the PGAS layer's one-sided operations: what Open MPI's OSHMEM
// (OpenSHMEM 1.4 over UCX) costs for put, get and fetch-add between two PEs of one node,
// with memcpy of the same sizes in the same run as the ratio baseline. PE 0 is the origin,
// PE 1 the target. Measured with the lockstep method of the MPI peers (../support/lockstep.hpp)
// over OpenSHMEM alone: shmem_barrier_all before each batch, the slowest PE's batch time by
// shmem_double_max_to_all, PE 0 alone reports. Linked with OSHMEM and Google Benchmark only,
// never with oneside. Run with oshrun -n 2; bench/README.md gives the flags this machine needs.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <shmem.h>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include <benchmark/benchmark.h>

#include "lockstep.hpp"

#ifndef ONESIDE_BENCH_GIT_COMMIT
#define ONESIDE_BENCH_GIT_COMMIT "unknown"
#endif

namespace {

namespace bench = oneside::bench;

constexpr int origin_pe = 0;
constexpr int target_pe = 1;
// Operations issued before the first batch, so that first-touch work (page faults, UCX
// mapping the target's segment) stays out of the figures, as in micro/rma_bench.cpp.
constexpr int warm_up_ops = 16;
constexpr std::int64_t mib = std::int64_t{1} << 20;

// The fetch-add bench stands for the PGAS layer's int64 atomics. OpenSHMEM 1.4 lists int64_t
// among the AMO types, but Open MPI's OSHMEM 4.1 has no shmem_int64_atomic_* functions, so the
// bench uses long, which is int64_t on this ABI.
static_assert(sizeof(long) == sizeof(std::int64_t));

bool is_origin() {
  return shmem_my_pe() == origin_pe;
}

// `count` elements of symmetric memory (shmem_malloc: the same address on every PE, remotely
// accessible). Collective: construction and destruction end in a barrier of all PEs.
template <class T>
class symmetric {
  // shmem_malloc hands out raw memory; only types that need no constructor may live in it.
  static_assert(std::is_trivially_default_constructible_v<T> &&
                std::is_trivially_destructible_v<T>);

 public:
  explicit symmetric(std::size_t count)
      : data_(static_cast<T*>(shmem_malloc(std::max<std::size_t>(count, 1) * sizeof(T)))) {
    if (data_ == nullptr) {
      std::fprintf(stderr, "oshmem_bench: shmem_malloc of %zu bytes failed on PE %d\n",
                   count * sizeof(T), shmem_my_pe());
      shmem_global_exit(1);
    }
  }
  symmetric(const symmetric&) = delete;
  symmetric& operator=(const symmetric&) = delete;
  ~symmetric() { shmem_free(data_); }

  T* get() const noexcept { return data_; }

 private:
  T* data_;
};

// The maximum of one double over all PEs (shmem_double_max_to_all). Collective. OpenSHMEM 1.4
// lets a pSync array be reused only once every PE has left the previous reduction; measure()
// puts a shmem_barrier_all between any two reductions, which guarantees that.
class max_over_pes {
 public:
  max_over_pes() : space_(1) {
    std::fill(space_.get()->sync.begin(), space_.get()->sync.end(), SHMEM_SYNC_VALUE);
    shmem_barrier_all();  // every PE's pSync is initialized before any PE reduces
  }

  double operator()(double value) {
    reduce_space& s = *space_.get();
    s.source = value;
    shmem_double_max_to_all(&s.result, &s.source, nreduce, 0, 0, shmem_n_pes(), s.work.data(),
                            s.sync.data());
    return s.result;
  }

 private:
  static constexpr int nreduce = 1;
  // OpenSHMEM 1.4: pWrk holds max(nreduce / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) elements.
  static constexpr std::size_t work_size =
      std::max<std::size_t>(nreduce / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE);
  struct reduce_space {
    double source;
    double result;
    std::array<double, work_size> work;
    std::array<long, SHMEM_REDUCE_SYNC_SIZE> sync;
  };
  symmetric<reduce_space> space_;
};

// Runs `batch(k)` on the origin in lockstep batches of `ops_per_batch` (lockstep.hpp). The
// target's batch is empty: it waits in the reduction that closes the batch. It need not do
// anything else for the origin's operations to complete: on one node UCX maps the target's
// symmetric heap into the origin (rma and amo over the sysv/posix transports), so the
// origin's CPU performs every access itself; and the reduction is an OSHMEM call that
// progresses UCX, for a transport that would need the target (tcp).
template <class Batch>
void measure(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  max_over_pes slowest;
  bench::measure(
      state, ops_per_batch, [] { shmem_barrier_all(); }, slowest,
      [&](std::int64_t n) {
        if (is_origin()) batch(n);
      });
}

// Issues `op` warm_up_ops times on the origin, then lines the PEs up.
template <class Op>
void warm_up(Op&& op) {
  if (is_origin()) {
    for (int i = 0; i < warm_up_ops; ++i) op();
  }
  shmem_barrier_all();
}

// ---- put and get --------------------------------------------------------------------------

// shmem_putmem of `bytes` into the target's symmetric buffer, each completed at the target
// by shmem_quiet (the peer of rput(...).wait()). Per operation; 8 B for latency, 1 MiB for
// bandwidth (bytes_per_second).
void put(benchmark::State& state, std::int64_t ops_per_batch) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  symmetric<std::byte> remote(bytes);
  bench::page_buffer source(bytes);
  const auto op = [&] {
    shmem_putmem(remote.get(), source.data(), bytes, target_pe);
    shmem_quiet();
  };
  warm_up(op);
  measure(state, ops_per_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) op();
  });
  bench::count_bytes(state, state.range(0));
}

// shmem_getmem of `bytes` from the target's symmetric buffer: blocking, the data is in
// place when it returns (the peer of rget(...).wait()).
void get(benchmark::State& state, std::int64_t ops_per_batch) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  symmetric<std::byte> remote(bytes);
  bench::page_buffer destination(bytes);
  const auto op = [&] { shmem_getmem(destination.data(), remote.get(), bytes, target_pe); };
  warm_up(op);
  measure(state, ops_per_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) op();
  });
  bench::count_bytes(state, state.range(0));
}

void oshmem_put_latency(benchmark::State& state) {
  put(state, bench::rma_batch);
}
BENCHMARK(oshmem_put_latency)->Arg(bench::latency_bytes)->UseManualTime();

void oshmem_get_latency(benchmark::State& state) {
  get(state, bench::rma_batch);
}
BENCHMARK(oshmem_get_latency)->Arg(bench::latency_bytes)->UseManualTime();

void oshmem_put_bandwidth(benchmark::State& state) {
  put(state, bench::transfer_batch(state.range(0)));
}
BENCHMARK(oshmem_put_bandwidth)->Arg(mib)->UseManualTime();

void oshmem_get_bandwidth(benchmark::State& state) {
  get(state, bench::transfer_batch(state.range(0)));
}
BENCHMARK(oshmem_get_bandwidth)->Arg(mib)->UseManualTime();

// ---- atomics ------------------------------------------------------------------------------

// shmem_long_atomic_fetch_add of 1 on the target's counter: blocking, returns the old value
// (the peer of a fetch_add on a global_ptr<std::int64_t>). The counter is checked at the end.
void oshmem_fetch_add(benchmark::State& state) {
  symmetric<long> counter(1);
  *counter.get() = 0;
  shmem_barrier_all();  // every counter is zero before the origin adds
  long issued = 0;
  const auto op = [&] {
    shmem_long_atomic_fetch_add(counter.get(), 1, target_pe);
    ++issued;
  };
  warm_up(op);
  measure(state, bench::rma_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) op();
  });
  if (is_origin()) {
    const long found = shmem_long_atomic_fetch(counter.get(), target_pe);
    if (found != issued) state.SkipWithError("fetch_add: the target's counter is wrong");
  }
  shmem_barrier_all();  // the check reads the counter before the target frees it
}
BENCHMARK(oshmem_fetch_add)->Name("oshmem_fetch_add/int64")->UseManualTime();

// ---- baseline -----------------------------------------------------------------------------

// memcpy between two private page-aligned buffers on the origin, the sizes and batches of the
// put benches: the baseline of "put 1 MiB: N× memcpy" in the same run.
void memcpy_between_buffers(benchmark::State& state, std::int64_t ops_per_batch) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  bench::page_buffer source(bytes);
  bench::page_buffer destination(bytes);
  std::byte* dst = destination.data();
  const std::byte* src = source.data();
  const auto op = [&] {
    benchmark::DoNotOptimize(dst);
    std::memcpy(dst, src, bytes);
    benchmark::ClobberMemory();
  };
  warm_up(op);
  measure(state, ops_per_batch, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) op();
  });
  bench::count_bytes(state, state.range(0));
}

void oshmem_memcpy_latency(benchmark::State& state) {
  memcpy_between_buffers(state, bench::rma_batch);
}
BENCHMARK(oshmem_memcpy_latency)->Arg(bench::latency_bytes)->UseManualTime();

void oshmem_memcpy_bandwidth(benchmark::State& state) {
  memcpy_between_buffers(state, bench::transfer_batch(state.range(0)));
}
BENCHMARK(oshmem_memcpy_bandwidth)->Arg(mib)->UseManualTime();

// ---- main ---------------------------------------------------------------------------------

// "Open MPI OSHMEM 4.1.4, OpenSHMEM 1.4": Open MPI's shmem_info_get_name gives only its URL.
std::string library_name() {
  std::array<char, SHMEM_MAX_NAME_LEN> name{};
  shmem_info_get_name(name.data());
  std::string text(name.data());
#ifdef OSHMEM_MAJOR_VERSION
  text = "Open MPI OSHMEM " + std::to_string(OSHMEM_MAJOR_VERSION) + "." +
         std::to_string(OSHMEM_MINOR_VERSION) + "." + std::to_string(OSHMEM_RELEASE_VERSION);
#endif
  int major = 0;
  int minor = 0;
  shmem_info_get_version(&major, &minor);
  return text + ", OpenSHMEM " + std::to_string(major) + "." + std::to_string(minor);
}

void add_context() {
  const unsigned hw = std::thread::hardware_concurrency();
  const int pes = shmem_n_pes();
  benchmark::AddCustomContext("git_commit", ONESIDE_BENCH_GIT_COMMIT);
  benchmark::AddCustomContext("ranks", std::to_string(pes));
  benchmark::AddCustomContext("hardware_threads", std::to_string(hw));
  benchmark::AddCustomContext("transport", "oshmem");
  benchmark::AddCustomContext("shmem_library", library_name());
  benchmark::AddCustomContext("oversubscribed", static_cast<unsigned>(pes) > hw ? "yes" : "no");
  benchmark::AddCustomContext("method",
                              "per operation by PE 0 to PE 1; each batch timed on every PE, "
                              "slowest PE counts");
}

}  // namespace

int main(int argc, char** argv) {
  shmem_init();
  const bool reporting = shmem_my_pe() == origin_pe;
  int status = 0;
  if (shmem_n_pes() < 2) {
    std::fprintf(stderr, "oshmem_bench: needs 2 PEs (oshrun -n 2), has %d\n", shmem_n_pes());
    status = 1;
  } else {
    if (reporting) add_context();
    status = oneside::bench::run_benchmarks(argc, argv, reporting) ? 0 : 2;
  }
  shmem_finalize();
  return status;
}
