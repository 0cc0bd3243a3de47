// The measuring method every oneside bench shares with its MPI peers (bench/peers), written
// once so both sides of a ratio are measured the same way. Header-only and independent of
// the runtime: the peers link MPI, not oneside.
//
// Every rank runs the same benchmarks in lockstep. A Google Benchmark run is cut into
// batches of K operations: all ranks synchronize, each times its K operations, and the
// batch counts as the slowest rank's time (a max-reduction). The batch is recorded with
// KeepRunningBatch(K) + SetIterationTime(slowest), so the reported time is per operation
// while the run lasts about --benchmark_min_time. Because every rank records the same
// reduced time, Google Benchmark (which, for UseManualTime() benchmarks, decides iteration
// counts from manual time only) takes the same decisions on every rank: the ranks never
// disagree on how many collectives to run, which would deadlock them.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

namespace oneside::bench {

// ---- sizes and batches ----------------------------------------------------------------

inline constexpr std::int64_t min_transfer_bytes = 8;
inline constexpr std::int64_t max_transfer_bytes = std::int64_t{4} << 20;
inline constexpr std::int64_t broadcast_bytes = std::int64_t{1} << 20;
inline constexpr std::int64_t latency_bytes = 8;

// The sizes of every bandwidth family (oneside, memcpy and MPI alike): 8 B, then 16 B to
// 4 MiB in powers of 4 (so 1 MiB and 4 MiB are among them).
inline void transfer_sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(4)->Range(min_transfer_bytes, max_transfer_bytes);
}

// Operations per batch for small operations (latencies, barrier, small reductions): enough
// to hide the skew with which ranks leave the synchronization before the batch.
inline constexpr std::int64_t latency_batch = 256;

// Operations per batch for transfers of `bytes`: about 16 MiB moved per batch, 4 to 256 ops.
constexpr std::int64_t transfer_batch(std::int64_t bytes) {
  return std::clamp<std::int64_t>((std::int64_t{16} << 20) / std::max<std::int64_t>(bytes, 1), 4,
                                  latency_batch);
}

// ---- one-sided operations (micro/rma_bench.cpp and peers/mpi_rma_window_bench.cpp) -----

// Small operations (latencies, atomics, accumulates) per batch: a batch of 1024 operations of
// tens of nanoseconds lasts tens of microseconds, long against the skew with which ranks
// leave the synchronization before it.
inline constexpr std::int64_t rma_batch = 1024;
// 8-byte puts per flush in the message-rate benches.
inline constexpr std::int64_t rma_rate_batch = 4096;
// Bandwidth: operations issued before one flush (issue 3: "64 in flight, then flush").
inline constexpr std::int64_t rma_in_flight = 64;
// Elements of the large accumulates (doubles) and of each rank's block in the scaling bench.
inline constexpr std::int64_t rma_acc_elements = 1024;
// Accumulates per rank and batch in the scaling bench: a batch lasts about a millisecond or
// more, long against a synchronization and against the clock reads that delimit it.
inline constexpr std::int64_t rma_scaling_batch = 4096;

// The sizes of the one-sided bandwidth benches: 8 B to 4 MiB in powers of 2 (so that 8 KiB,
// where issue 3's bandwidth targets start, is among them).
inline void rma_sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(2)->Range(min_transfer_bytes, max_transfer_bytes);
}

// The shifted bandwidth benches: the destination of the bytes starts rma_shift bytes past a
// page boundary, the source on one (a double halo put one element in). Sizes: where glibc's
// memcpy uses `rep movsb` (2 KiB to 1 MiB), and one past it.
inline constexpr std::size_t rma_shift = 8;
inline void rma_shifted_sizes(benchmark::internal::Benchmark* b) {
  for (const std::int64_t n : {4096, 16384, 65536, 262144, 1048576}) b->Arg(n);
}

// Operations per batch of a bandwidth bench of `bytes`: rounds of rma_in_flight operations
// and one flush, as many rounds (1 to 64) as make about 16 MiB, so that small sizes are not
// timed over a couple of microseconds.
constexpr std::int64_t rma_bandwidth_batch(std::int64_t bytes) {
  const std::int64_t rounds = std::clamp<std::int64_t>(
      (std::int64_t{16} << 20) / (rma_in_flight * std::max<std::int64_t>(bytes, 1)), 1, 64);
  return rounds * rma_in_flight;
}

// ---- OSU-style sweeps (micro/osu_bench.cpp and peers/mpi_osu_bench.cpp) ---------------

// The synchronization of an OSU one-sided benchmark (osu_put_latency -s ...): around every
// operation (latency) or every rma_in_flight operations (bandwidth), to the next rank.
//   lock         lock(shared, next); ops; unlock(next)
//   lock_all     lock_all(); ops; unlock_all()
//   flush        ops; flush(next)          inside a lock_all held throughout
//   flush_local  ops; flush_local(next)    inside a lock_all held throughout
//   pscw         post({left}); start({next}); ops; complete(); wait()
//   fence        ops; fence()              the fences chain the epochs
enum class osu_sync { lock, lock_all, flush, flush_local, pscw, fence };
inline constexpr std::array<osu_sync, 6> osu_syncs{osu_sync::lock,  osu_sync::lock_all,
                                                   osu_sync::flush, osu_sync::flush_local,
                                                   osu_sync::pscw,  osu_sync::fence};

constexpr std::string_view osu_sync_name(osu_sync s) {
  switch (s) {
    case osu_sync::lock:
      return "lock";
    case osu_sync::lock_all:
      return "lock_all";
    case osu_sync::flush:
      return "flush";
    case osu_sync::flush_local:
      return "flush_local";
    case osu_sync::pscw:
      return "pscw";
    case osu_sync::fence:
      return "fence";
  }
  return "?";
}

// The message sizes of the put/get sweeps: 1 B to 4 MiB in powers of 4 (OSU's range, every
// other size of its powers of 2).
inline void osu_sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(4)->Range(1, max_transfer_bytes);
}

// The accumulate sweep (int64 sums): 8 B to 2 MiB in powers of 8.
inline void osu_acc_sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(8)->Range(8, std::int64_t{2} << 20);
}

// Operations per batch of a latency sweep: rma_batch small operations, about 16 MiB moved
// per batch for large ones (at least 4 operations).
constexpr std::int64_t osu_latency_batch(std::int64_t bytes) {
  return std::clamp<std::int64_t>((std::int64_t{16} << 20) / std::max<std::int64_t>(bytes, 1), 4,
                                  rma_batch);
}

enum class osu_op { put, get };
enum class osu_atomic { get_acc, fop, cas };

// ---- the lockstep measurement ---------------------------------------------------------

// Runs `batch(k)` (which performs k operations and completes them) in batches of
// `ops_per_batch` until Google Benchmark has enough. `sync()` lines the ranks up before each
// batch; `slowest(seconds)` returns the maximum of `seconds` over all ranks. The benchmark
// must be registered with UseManualTime(). Sets the ops/s counter (items_per_second).
template <class Sync, class Slowest, class Batch>
void measure(benchmark::State& state, std::int64_t ops_per_batch, Sync&& sync, Slowest&& slowest,
             Batch&& batch) {
  using clock = std::chrono::steady_clock;
  while (state.KeepRunningBatch(ops_per_batch)) {
    sync();
    const clock::time_point start = clock::now();
    batch(ops_per_batch);
    const std::chrono::duration<double> elapsed = clock::now() - start;
    state.SetIterationTime(slowest(elapsed.count()));
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["batch"] = static_cast<double>(ops_per_batch);
}

// Like measure(), but a batch counts from the earliest rank's start to the latest rank's end
// on the machine's monotonic clock (steady_clock is CLOCK_MONOTONIC, one clock for every
// process of a node): the wall time the ranks needed together. This is the measure for
// throughput under contention. With more ranks than cores, a batch shorter than a time slice
// often runs without being preempted, so the ranks' batches may not overlap at all and the
// slowest rank's own time would hide that they took turns; the span does not.
// `latest(seconds)` returns the maximum of `seconds` over all ranks.
template <class Sync, class Latest, class Batch>
void measure_span(benchmark::State& state, std::int64_t ops_per_batch, Sync&& sync, Latest&& latest,
                  Batch&& batch) {
  using clock = std::chrono::steady_clock;
  const auto seconds = [](clock::time_point t) {
    return std::chrono::duration<double>(t.time_since_epoch()).count();
  };
  while (state.KeepRunningBatch(ops_per_batch)) {
    sync();
    const clock::time_point start = clock::now();
    batch(ops_per_batch);
    const clock::time_point end = clock::now();
    const double last_end = latest(seconds(end));
    const double first_start = -latest(-seconds(start));
    state.SetIterationTime(std::max(last_end - first_start, 1e-9));
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["batch"] = static_cast<double>(ops_per_batch);
}

// Adds the bytes/s counter (bytes_per_second) for operations of `bytes` each.
inline void count_bytes(benchmark::State& state, std::int64_t bytes) {
  state.SetBytesProcessed(state.iterations() * bytes);
}

// ---- memory ---------------------------------------------------------------------------

// Private, page-aligned memory, touched once so no page fault lands inside a measurement.
class page_buffer {
 public:
  explicit page_buffer(std::size_t bytes)
      : data_(static_cast<std::byte*>(::operator new(std::max<std::size_t>(bytes, 1), page))),
        size_(bytes) {
    std::memset(data_, 0x5a, size_);
  }
  page_buffer(const page_buffer&) = delete;
  page_buffer& operator=(const page_buffer&) = delete;
  ~page_buffer() { ::operator delete(data_, page); }

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  static constexpr std::align_val_t page{4096};
  std::byte* data_;
  std::size_t size_;
};

// The memcpy baseline of the bandwidth benches: copies of `bytes` between two private page
// buffers, the same bytes and working set as a bench repeating one transfer; the
// destination starts `shift` bytes into its buffer.
class copy_baseline {
 public:
  explicit copy_baseline(std::size_t bytes, std::size_t shift = 0)
      : source_(bytes), destination_(bytes + shift), shift_(shift) {
    std::memcpy(destination_.data() + shift_, source_.data(), bytes);
  }
  // `k` copies (one batch).
  void operator()(std::int64_t k) const {
    std::byte* dst = destination_.data() + shift_;
    for (std::int64_t i = 0; i < k; ++i) {
      benchmark::DoNotOptimize(dst);
      std::memcpy(dst, source_.data(), source_.size());
      benchmark::ClobberMemory();
    }
  }

 private:
  page_buffer source_;
  page_buffer destination_;
  std::size_t shift_;
};

// ---- reporting ------------------------------------------------------------------------

// The reporter of ranks other than 0: they run every benchmark but print nothing.
class quiet_reporter final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& /*context*/) override { return true; }
  void ReportRuns(const std::vector<Run>& /*runs*/) override {}
};

// The command line Google Benchmark sees on this rank: ranks other than 0 drop
// --benchmark_out* so that only rank 0 writes the result file. The pointers refer to argv.
inline std::vector<char*> benchmark_args(int argc, char** argv, bool is_reporting_rank) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (!is_reporting_rank && a.starts_with("--benchmark_out")) continue;
    args.push_back(argv[i]);
  }
  args.push_back(nullptr);
  return args;
}

// Parses the flags and runs every selected benchmark in lockstep; rank 0 alone reports.
// Returns false when the command line had an argument Google Benchmark does not know.
inline bool run_benchmarks(int argc, char** argv, bool is_reporting_rank) {
  std::vector<char*> args = benchmark_args(argc, argv, is_reporting_rank);
  int n = static_cast<int>(args.size()) - 1;
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return false;
  if (is_reporting_rank) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    quiet_reporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  return true;
}

// ---- OSU-style sweeps: the measurements ------------------------------------------------

// The synchronization `sync` on a window of either side, as the table at osu_sync says, written
// once: the long epoch (lock_all for flush and flush_local, the first fence) from construction
// to destruction, open()/close() around each group of operations. Window names the calls:
// lock_shared(), unlock(), lock_all(), unlock_all(), flush(), flush_local(), post_start(),
// complete_wait(), fence() and last_fence() (no epoch follows), each on the ring neighbours.
template <class Window>
class osu_epochs {
 public:
  osu_epochs(Window& w, osu_sync sync) : w_(w), sync_(sync) {
    if (held()) w_.lock_all();
    if (sync_ == osu_sync::fence) w_.fence();
  }
  osu_epochs(const osu_epochs&) = delete;
  osu_epochs& operator=(const osu_epochs&) = delete;
  ~osu_epochs() {
    if (held()) w_.unlock_all();
    if (sync_ == osu_sync::fence) w_.last_fence();
  }

  void open() {
    switch (sync_) {
      case osu_sync::lock:
        w_.lock_shared();
        break;
      case osu_sync::lock_all:
        w_.lock_all();
        break;
      case osu_sync::pscw:
        w_.post_start();
        break;
      case osu_sync::flush:
      case osu_sync::flush_local:
      case osu_sync::fence:
        break;
    }
  }

  void close() {
    switch (sync_) {
      case osu_sync::lock:
        w_.unlock();
        break;
      case osu_sync::lock_all:
        w_.unlock_all();
        break;
      case osu_sync::flush:
        w_.flush();
        break;
      case osu_sync::flush_local:
        w_.flush_local();
        break;
      case osu_sync::pscw:
        w_.complete_wait();
        break;
      case osu_sync::fence:
        w_.fence();
        break;
    }
  }

 private:
  bool held() const noexcept { return sync_ == osu_sync::flush || sync_ == osu_sync::flush_local; }

  Window& w_;
  osu_sync sync_;
};

// Registers every OSU sweep, named `prefix` + osu_put_latency/S/N (and so on), S every mode,
// over a window of either side: Window(bytes) with the calls osu_epochs needs, and
// transfer(osu_op, std::byte* local, bytes), accumulate(const std::int64_t*, elements) and
// atomic(osu_atomic, std::int64_t* old), each one operation to the next rank.
// run(state, ops_per_batch, batch) warms up and measures (the side's lockstep). One list of
// names, sizes, loops and epochs for oneside's benches and their peers.
template <class Window, class Run>
bool register_osu(const std::string& prefix, Run run) {
  const auto latency = [run](benchmark::State& st, osu_op op, osu_sync s) {
    const std::int64_t bytes = st.range(0);
    Window w(static_cast<std::size_t>(bytes));
    osu_epochs<Window> e(w, s);
    page_buffer local(static_cast<std::size_t>(bytes));
    run(st, osu_latency_batch(bytes), [&](std::int64_t k) {
      for (std::int64_t i = 0; i < k; ++i) {
        e.open();
        w.transfer(op, local.data(), bytes);
        e.close();
      }
    });
    count_bytes(st, bytes);
  };
  // rma_in_flight operations, then the synchronization (OSU's window size of 64).
  const auto bandwidth = [run](benchmark::State& st, osu_op op, osu_sync s) {
    const std::int64_t bytes = st.range(0);
    Window w(static_cast<std::size_t>(bytes));
    osu_epochs<Window> e(w, s);
    page_buffer local(static_cast<std::size_t>(bytes));
    run(st, rma_bandwidth_batch(bytes), [&](std::int64_t k) {
      for (std::int64_t done = 0; done < k; done += rma_in_flight) {
        e.open();
        for (std::int64_t i = 0; i < rma_in_flight; ++i) w.transfer(op, local.data(), bytes);
        e.close();
      }
    });
    count_bytes(st, bytes);
  };
  const auto accumulate = [run](benchmark::State& st, osu_sync s) {
    const std::int64_t bytes = st.range(0);
    Window w(static_cast<std::size_t>(bytes));
    osu_epochs<Window> e(w, s);
    const std::vector<std::int64_t> src(static_cast<std::size_t>(bytes / 8), 1);
    run(st, osu_latency_batch(bytes), [&](std::int64_t k) {
      for (std::int64_t i = 0; i < k; ++i) {
        e.open();
        w.accumulate(src.data(), bytes / 8);
        e.close();
      }
    });
    count_bytes(st, bytes);
  };
  const auto atomic = [run](benchmark::State& st, osu_atomic kind, osu_sync s) {
    Window w(4096);
    osu_epochs<Window> e(w, s);
    std::int64_t old = 0;
    run(st, rma_batch, [&](std::int64_t k) {
      for (std::int64_t i = 0; i < k; ++i) {
        e.open();
        w.atomic(kind, &old);
        e.close();
      }
    });
    benchmark::DoNotOptimize(old);
    count_bytes(st, 8);
  };
  for (const osu_sync s : osu_syncs) {
    std::string mode(1, '/');  // (not "/" + std::string: GCC 12's false -Wrestrict)
    mode += osu_sync_name(s);
    const auto add = [&](const std::string& name, auto fn) {
      return benchmark::RegisterBenchmark((prefix + name + mode).c_str(), fn)->UseManualTime();
    };
    for (const osu_op op : {osu_op::put, osu_op::get}) {
      const std::string what = op == osu_op::put ? "osu_put" : "osu_get";
      add(what + "_latency", [=](benchmark::State& st) { latency(st, op, s); })->Apply(osu_sizes);
      add(what + "_bw", [=](benchmark::State& st) { bandwidth(st, op, s); })->Apply(osu_sizes);
    }
    add("osu_acc_latency", [=](benchmark::State& st) { accumulate(st, s); })->Apply(osu_acc_sizes);
    add("osu_get_acc_latency", [=](benchmark::State& st) { atomic(st, osu_atomic::get_acc, s); });
    add("osu_fop_latency", [=](benchmark::State& st) { atomic(st, osu_atomic::fop, s); });
    add("osu_cas_latency", [=](benchmark::State& st) { atomic(st, osu_atomic::cas, s); });
  }
  return true;
}

}  // namespace oneside::bench
