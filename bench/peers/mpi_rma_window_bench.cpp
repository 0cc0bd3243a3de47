// The MPI peers of micro/rma_bench.cpp: the same one-sided measurements over MPI RMA, for
// each kind of window — `allocate` (MPI_Win_allocate), `dynamic` (MPI_Win_create_dynamic +
// MPI_Win_attach of MPI_Alloc_mem memory) and `create` (MPI_Win_create over a std::vector) —
// under MPI_Win_lock_all held for the benchmark, to the next rank, with MPI_Win_flush. Names
// are oneside's with an `mpi_` prefix (mpi_rma_put_latency/allocate/8, …); sizes, batches,
// warm-up, checks and the timing method are the same (lockstep.hpp).
//
// Which Open MPI one-sided component serves a window depends on the kind, and
// bench/run.py chooses it per family (--mca osc …): osc/sm only creates MPI_Win_allocate
// (and allocate_shared) windows and refuses MPI_Win_create and MPI_Win_create_dynamic
// (MPI_ERR_WIN), so those run on another component. See bench/README.md.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "mpi_support.hpp"

namespace {

namespace bench = oneside::bench;
namespace peers = oneside::bench::peers;

enum class window_kind { allocate, dynamic, create };
constexpr std::array<window_kind, 3> window_kinds{window_kind::allocate, window_kind::dynamic,
                                                  window_kind::create};

std::string_view kind_name(window_kind k) {
  switch (k) {
    case window_kind::allocate:
      return "allocate";
    case window_kind::dynamic:
      return "dynamic";
    case window_kind::create:
      return "create";
  }
  return "?";
}

constexpr std::size_t small_window_bytes = 4096;

// A window of `bytes` on every rank, of one kind, with MPI_Win_lock_all held from
// construction to destruction (collective both ways); memory faulted in, the next rank's
// memory written and read once in full, then zeroed again — as oneside's bench_window.
class mpi_window {
 public:
  mpi_window(window_kind kind, std::size_t bytes) : kind_(kind), bytes_(bytes) {
    next_ = (peers::world_rank() + 1) % peers::world_size();
    const auto size = static_cast<MPI_Aint>(bytes);
    // Window creation returns its error instead of aborting (the component of --mca osc may
    // refuse this kind of window); whether it failed is the same on every rank.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_SUCCESS;
    switch (kind) {
      case window_kind::allocate:
        rc = MPI_Win_allocate(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &local_, &win_);
        break;
      case window_kind::dynamic:
        MPI_Alloc_mem(size, MPI_INFO_NULL, &local_);
        rc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win_);
        break;
      case window_kind::create:
        user_.resize(bytes);
        local_ = user_.data();
        rc = MPI_Win_create(local_, size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_);
        break;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rc != MPI_SUCCESS) {
      win_ = MPI_WIN_NULL;
      return;
    }
    if (kind == window_kind::dynamic) {
      MPI_Win_attach(win_, local_, size);
      MPI_Aint mine = 0;
      MPI_Get_address(local_, &mine);
      bases_.resize(static_cast<std::size_t>(peers::world_size()));
      MPI_Allgather(&mine, 1, MPI_AINT, bases_.data(), 1, MPI_AINT, MPI_COMM_WORLD);
    }
    std::memset(local_, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win_);
    bench::page_buffer scratch(bytes);
    const int n = static_cast<int>(bytes);
    MPI_Put(scratch.data(), n, MPI_BYTE, next_, disp(next_, 0), n, MPI_BYTE, win_);
    MPI_Win_flush(next_, win_);
    MPI_Get(scratch.data(), n, MPI_BYTE, next_, disp(next_, 0), n, MPI_BYTE, win_);
    MPI_Win_flush(next_, win_);
    MPI_Barrier(MPI_COMM_WORLD);
    std::memset(local_, 0, bytes);
    MPI_Win_sync(win_);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  mpi_window(const mpi_window&) = delete;
  mpi_window& operator=(const mpi_window&) = delete;
  ~mpi_window() {
    if (win_ != MPI_WIN_NULL) {
      MPI_Win_unlock_all(win_);
      if (kind_ == window_kind::dynamic) MPI_Win_detach(win_, local_);
      MPI_Win_free(&win_);
    }
    if (kind_ == window_kind::dynamic) MPI_Free_mem(local_);
  }

  // False when the one-sided component refused to create this kind of window.
  bool is_open() const noexcept { return win_ != MPI_WIN_NULL; }

  MPI_Win get() const noexcept { return win_; }
  int next() const noexcept { return next_; }
  std::byte* local() const noexcept { return static_cast<std::byte*>(local_); }
  // The displacement of byte `offset` of `target`'s memory (disp_unit 1; for a dynamic
  // window, the address MPI_Get_address gave on the target).
  MPI_Aint disp(int target, std::size_t offset) const {
    const auto off = static_cast<MPI_Aint>(offset);
    if (kind_ != window_kind::dynamic || !is_open()) return off;
    return MPI_Aint_add(bases_[static_cast<std::size_t>(target)], off);
  }

 private:
  window_kind kind_;
  std::size_t bytes_;
  int next_ = 0;
  void* local_ = nullptr;
  std::vector<std::byte> user_;  // create
  std::vector<MPI_Aint> bases_;  // dynamic
  MPI_Win win_ = MPI_WIN_NULL;
};

bool everywhere(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v == 1;
}

void report_wrong(benchmark::State& state, bool ok, const char* what) {
  if (!everywhere(ok)) state.SkipWithError(what);
}

constexpr std::int64_t warm_up_ops = 16;

// Measures `batch` on window `w` (see rma_bench.cpp), or reports the benchmark as skipped
// when the one-sided component refused the window.
template <class Batch>
void run(benchmark::State& state, const mpi_window& w, std::int64_t ops_per_batch, Batch&& batch,
         bool span = false) {
  if (!w.is_open()) {
    state.SkipWithError(
        "this Open MPI one-sided component refuses this kind of window (MPI_ERR_WIN): run it "
        "with --mca osc rdma (bench/README.md)");
    return;
  }
  batch(std::min(warm_up_ops, ops_per_batch));
  MPI_Barrier(MPI_COMM_WORLD);
  if (span) {
    peers::measure_span(state, ops_per_batch, batch);
  } else {
    peers::measure(state, ops_per_batch, batch);
  }
}

// ---- put and get ------------------------------------------------------------------------

enum class direction { put, get };

template <direction D>
void transfer(const mpi_window& w, std::byte* local, int n, MPI_Aint d) {
  if constexpr (D == direction::put) {
    MPI_Put(local, n, MPI_BYTE, w.next(), d, n, MPI_BYTE, w.get());
  } else {
    MPI_Get(local, n, MPI_BYTE, w.next(), d, n, MPI_BYTE, w.get());
  }
}

template <direction D>
void latency(benchmark::State& state, window_kind kind) {
  const int bytes = static_cast<int>(state.range(0));
  mpi_window w(kind, small_window_bytes);
  bench::page_buffer local(static_cast<std::size_t>(bytes));
  const MPI_Aint d = w.disp(w.next(), 0);
  run(state, w, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      transfer<D>(w, local.data(), bytes, d);
      MPI_Win_flush(w.next(), w.get());
    }
  });
  bench::count_bytes(state, bytes);
}

// `shift`: as in oneside's rma_bench.cpp, the destination of the bytes starts `shift` bytes
// past a page boundary, the source on one.
template <direction D>
void bandwidth(benchmark::State& state, window_kind kind, std::size_t shift = 0) {
  const int bytes = static_cast<int>(state.range(0));
  const std::size_t put_shift = D == direction::put ? shift : 0;
  const std::size_t get_shift = D == direction::get ? shift : 0;
  mpi_window w(kind, static_cast<std::size_t>(bytes) + put_shift);
  bench::page_buffer local(static_cast<std::size_t>(bytes) + get_shift);
  const MPI_Aint d = w.disp(w.next(), put_shift);
  run(state, w, bench::rma_bandwidth_batch(bytes), [&](std::int64_t k) {
    for (std::int64_t done = 0; done < k; done += bench::rma_in_flight) {
      for (std::int64_t i = 0; i < bench::rma_in_flight; ++i) {
        transfer<D>(w, local.data() + get_shift, bytes, d);
      }
      MPI_Win_flush(w.next(), w.get());
    }
  });
  bench::count_bytes(state, bytes);
}

void put_rate(benchmark::State& state, window_kind kind) {
  const int bytes = static_cast<int>(state.range(0));
  mpi_window w(kind, small_window_bytes);
  bench::page_buffer local(static_cast<std::size_t>(bytes));
  const MPI_Aint d = w.disp(w.next(), 0);
  run(state, w, bench::rma_rate_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) transfer<direction::put>(w, local.data(), bytes, d);
    MPI_Win_flush(w.next(), w.get());
  });
  bench::count_bytes(state, bytes);
}

// ---- atomics and accumulates --------------------------------------------------------------

// A fetching int64 sum (MPI_Fetch_and_op, MPI_Get_accumulate) and flush, in a loop. Each
// rank's element is changed by its previous rank alone, so every fetched value is predictable.
template <class Fetch>
void fetching_sum(benchmark::State& state, window_kind kind, Fetch&& fetch, const char* wrong) {
  mpi_window w(kind, small_window_bytes);
  const int t = w.next();
  const MPI_Aint d = w.disp(t, 0);
  const std::int64_t one = 1;
  std::int64_t old = -1;
  std::int64_t issued = 0;
  bool ok = true;
  run(state, w, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      fetch(w.get(), &one, &old, t, d);
      MPI_Win_flush(t, w.get());
    }
    issued += k;
    ok = ok && old == issued - 1;
  });
  report_wrong(state, ok, wrong);
  bench::count_bytes(state, 8);
}

void fetch_and_op(benchmark::State& state, window_kind kind) {
  fetching_sum(
      state, kind,
      [](MPI_Win win, const std::int64_t* one, std::int64_t* old, int t, MPI_Aint d) {
        MPI_Fetch_and_op(one, old, MPI_INT64_T, t, d, MPI_SUM, win);
      },
      "MPI_Fetch_and_op returned wrong values");
}

void compare_and_swap(benchmark::State& state, window_kind kind) {
  mpi_window w(kind, small_window_bytes);
  const int t = w.next();
  const MPI_Aint d = w.disp(t, 0);
  std::int64_t expected = 0;
  std::int64_t old = -1;
  bool ok = true;
  run(state, w, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      const std::int64_t desired = expected + 1;
      MPI_Compare_and_swap(&desired, &expected, &old, MPI_INT64_T, t, d, w.get());
      MPI_Win_flush(t, w.get());
      ok = ok && old == expected;
      expected = desired;
    }
  });
  report_wrong(state, ok, "MPI_Compare_and_swap returned wrong values");
  bench::count_bytes(state, 8);
}

void accumulate_latency(benchmark::State& state, window_kind kind) {
  const int elements = static_cast<int>(state.range(0));
  const auto bytes = static_cast<std::size_t>(elements) * sizeof(double);
  mpi_window w(kind, std::max(bytes, small_window_bytes));
  const std::vector<double> src(static_cast<std::size_t>(elements), 1.0);
  const int t = w.next();
  const MPI_Aint d = w.disp(t, 0);
  run(state, w, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      MPI_Accumulate(src.data(), elements, MPI_DOUBLE, t, d, elements, MPI_DOUBLE, MPI_SUM,
                     w.get());
      MPI_Win_flush(t, w.get());
    }
  });
  bench::count_bytes(state, static_cast<std::int64_t>(bytes));
}

void get_accumulate(benchmark::State& state, window_kind kind) {
  fetching_sum(
      state, kind,
      [](MPI_Win win, const std::int64_t* one, std::int64_t* old, int t, MPI_Aint d) {
        MPI_Get_accumulate(one, 1, MPI_INT64_T, old, 1, MPI_INT64_T, t, d, 1, MPI_INT64_T, MPI_SUM,
                           win);
      },
      "MPI_Get_accumulate returned wrong values");
}

// As oneside's: every origin adds 1024 ones into its own 8 KiB block of rank 0's window; `all`
// = every rank at once, else rank 1 alone (rank 0 with one rank). Rank 0 checks the sums.
void accumulate_scaling(benchmark::State& state, window_kind kind, bool all) {
  const int rank = peers::world_rank();
  const int size = peers::world_size();
  const auto block = static_cast<std::size_t>(bench::rma_acc_elements) * sizeof(double);
  mpi_window w(kind, block * static_cast<std::size_t>(size));
  const std::vector<double> src(static_cast<std::size_t>(bench::rma_acc_elements), 1.0);
  const int solo = size > 1 ? 1 : 0;
  const bool active = all || rank == solo;
  const MPI_Aint d = w.disp(0, block * static_cast<std::size_t>(rank));
  const int n = static_cast<int>(bench::rma_acc_elements);
  std::int64_t issued = 0;
  run(
      state, w, bench::rma_scaling_batch,
      [&](std::int64_t k) {
        if (!active) return;
        for (std::int64_t i = 0; i < k; ++i) {
          MPI_Accumulate(src.data(), n, MPI_DOUBLE, 0, d, n, MPI_DOUBLE, MPI_SUM, w.get());
          MPI_Win_flush(0, w.get());
        }
        issued += k;
      },
      true);
  if (!w.is_open()) return;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(size));
  MPI_Allgather(&issued, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
  bool ok = true;
  if (rank == 0) {
    MPI_Win_sync(w.get());
    for (int r = 0; r < size; ++r) {
      const auto expect = static_cast<double>(counts[static_cast<std::size_t>(r)]);
      const auto* v =
          reinterpret_cast<const double*>(w.local() + block * static_cast<std::size_t>(r));
      for (int i = 0; i < n; ++i) ok = ok && v[i] == expect;
    }
  }
  report_wrong(state, ok, "MPI accumulate scaling: a block has a wrong sum");
  state.counters["origins"] = all ? static_cast<double>(size) : 1.0;
  state.counters["aggregate_ops_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * (all ? static_cast<double>(size) : 1.0),
      benchmark::Counter::kIsRate);
}

// ---- registration -------------------------------------------------------------------------

template <class Fn>
benchmark::internal::Benchmark* add(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->UseManualTime();
}

bool register_all() {
  add("mpi_rma_put_bandwidth_shifted/allocate", [](benchmark::State& s) {
    bandwidth<direction::put>(s, window_kind::allocate, bench::rma_shift);
  })->Apply(bench::rma_shifted_sizes);
  add("mpi_rma_get_bandwidth_shifted/allocate", [](benchmark::State& s) {
    bandwidth<direction::get>(s, window_kind::allocate, bench::rma_shift);
  })->Apply(bench::rma_shifted_sizes);
  for (const window_kind k : window_kinds) {
    const std::string kind(kind_name(k));
    const auto with = [k](auto fn) { return [k, fn](benchmark::State& s) { fn(s, k); }; };
    add("mpi_rma_put_latency/" + kind, with(latency<direction::put>))->Arg(bench::latency_bytes);
    add("mpi_rma_get_latency/" + kind, with(latency<direction::get>))->Arg(bench::latency_bytes);
    add("mpi_rma_put_rate/" + kind, with(put_rate))->Arg(bench::latency_bytes);
    add("mpi_rma_fetch_and_op/" + kind, with(fetch_and_op));
    add("mpi_rma_compare_and_swap/" + kind, with(compare_and_swap));
    add("mpi_rma_accumulate_latency/" + kind, with(accumulate_latency))
        ->Arg(1)
        ->Arg(bench::rma_acc_elements);
    add("mpi_rma_get_accumulate/" + kind, with(get_accumulate));
    add("mpi_rma_accumulate_scaling/" + kind + "/one",
        [k](benchmark::State& s) { accumulate_scaling(s, k, false); });
    add("mpi_rma_accumulate_scaling/" + kind + "/all",
        [k](benchmark::State& s) { accumulate_scaling(s, k, true); });
    add("mpi_rma_put_bandwidth/" + kind, [k](benchmark::State& s) {
      bandwidth<direction::put>(s, k);
    })->Apply(bench::rma_sizes);
    add("mpi_rma_get_bandwidth/" + kind, [k](benchmark::State& s) {
      bandwidth<direction::get>(s, k);
    })->Apply(bench::rma_sizes);
  }
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
