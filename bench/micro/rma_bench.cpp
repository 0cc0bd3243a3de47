// One-sided communication through rma::window (issue 3), for each window flavour an
// application meets: `allocate`, `dynamic` (create_dynamic + attach of memory from oneside's
// own allocations: a transport segment) and `create` over user memory (a std::vector). Every
// benchmark opens lock_all once, targets the next rank (rank + 1 mod size; with one rank,
// itself) and closes the epoch at its end; every rank works at once. The MPI peers
// (peers/mpi_rma_window_bench.cpp) measure the same over MPI_Win_allocate,
// MPI_Win_create_dynamic and MPI_Win_create, under the same names with an `mpi_` prefix.
//
//   rma_put_latency/K/8, rma_get_latency/K/8       one 8-byte put/get, then flush(target)
//   rma_put_bandwidth/K/N, rma_get_bandwidth/K/N   rounds of 64 operations of N bytes, one flush
//   rma_put_rate/K/8                               4096 8-byte puts, one flush
//   rma_fetch_and_op/K, rma_compare_and_swap/K     int64 (sum; swap that always succeeds), flush
//   rma_accumulate_latency/K/E                     accumulate of E doubles (sum), flush
//   rma_get_accumulate/K                           get_accumulate of one int64 (sum), flush
//   rma_accumulate_scaling/K/{one,all}             1024 doubles (sum) into this rank's own block
//                                                  of rank 0's window, then flush(0): by one
//                                                  rank, and by every rank at once
//   rma_memcpy_bandwidth/N                         memcpy between private buffers, the same
//                                                  sizes and batches: the bandwidth baseline
//   rma_add_scaling/{one,all}                      the scaling bench's additions on private
//                                                  memory: the machine's own ceiling
//   rma_{put,get}_bandwidth_shifted/allocate/N     the bandwidth bench with the destination
//   rma_memcpy_bandwidth_shifted/N                 of the bytes 8 bytes past a page boundary
//                                                  and the source on one (runtime/copy.hpp)
//   rma_attached_fetch_and_op/T/M                  fetch_and_op + flush on a dynamic window
//                                                  over a std::vector (M = page: 4 KiB,
//                                                  small: 64 B) or an allocate window
//                                                  (M = allocate), to the next rank or by
//                                                  every rank to rank 0 (T = next, rank0)
//
// The scaling bench is timed as the span from the earliest rank's start to the latest rank's
// end (lockstep.hpp, measure_span), so that ranks taking turns (on a lock, or on too few cores)
// show up as time. The atomics and the scaling bench check their results afterwards and
// report an error instead of a figure when they are wrong.
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

#include <oneside/oneside.hpp>

#include "bench_support.hpp"
#include "runtime/transport.hpp"

namespace {

namespace bench = oneside::bench;
namespace rma = oneside::rma;
using oneside::rank_t;
using rma::disp_t;

// dynamic_user: a dynamic window over an attached std::vector (the attached_* benches only).
enum class window_kind { allocate, dynamic, create, dynamic_user };
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
    case window_kind::dynamic_user:
      return "dynamic_user";
  }
  return "?";
}

// Window size of the small-operation benches: one page.
constexpr std::size_t small_window_bytes = 4096;

const oneside::datatype& byte_type() {
  return oneside::datatype::of<std::byte>();
}
const oneside::datatype& int64_type() {
  return oneside::datatype::of<std::int64_t>();
}
const oneside::datatype& double_type() {
  return oneside::datatype::of<double>();
}

// A window of `bytes` on every rank, of one kind, with lock_all held from construction to
// destruction (collective both ways). Each rank zeroes its own memory (so its pages are
// faulted in before any measurement), then every rank writes and reads the next rank's memory
// once in full (so mappings, pins and region views exist before any measurement).
class bench_window {
 public:
  // (The window is built in the initializer list: rma::window's defaulted default
  // constructor does not compile outside the rma library, as window_impl is incomplete there.)
  bench_window(window_kind kind, std::size_t bytes)
      : kind_(kind),
        bytes_(bytes),
        segment_(kind == window_kind::dynamic
                     ? oneside::transport::current().allocate_segment(bytes)
                     : oneside::transport::segment()),
        user_(kind == window_kind::create || kind == window_kind::dynamic_user ? bytes : 0),
        local_(kind == window_kind::dynamic ? static_cast<std::byte*>(segment_.base())
                                            : user_.data()),
        win_(make_window(kind, local_, bytes)) {
    const oneside::team& w = oneside::world();
    next_ = (w.rank() + 1) % w.size();
    if (kind == window_kind::allocate) local_ = static_cast<std::byte*>(win_.base());
    // Memory from oneside's own allocations (a transport segment), or the user's (a
    // std::vector), attached for the window's life.
    if (is_dynamic()) win_.attach(local_, bytes);
    std::memset(local_, 0, bytes);
    if (is_dynamic()) {
      bases_ = oneside::allgather(w, std::uint64_t{reinterpret_cast<std::uintptr_t>(local_)});
    }
    oneside::barrier(w);
    win_.lock_all();
    bench::page_buffer scratch(bytes);
    const auto n = static_cast<oneside::count_t>(bytes);
    win_.put(scratch.data(), n, byte_type(), next_, disp(next_, 0), n, byte_type());
    win_.flush(next_);
    win_.get(scratch.data(), n, byte_type(), next_, disp(next_, 0), n, byte_type());
    win_.flush(next_);
    oneside::barrier(w);
    // Start from zeroes again (the atomics check their results against that).
    std::memset(local_, 0, bytes);
    win_.sync();
    oneside::barrier(w);
  }
  bench_window(const bench_window&) = delete;
  bench_window& operator=(const bench_window&) = delete;
  ~bench_window() {
    win_.unlock_all();
    if (is_dynamic()) win_.detach(local_);
    win_.free();
  }

  rma::window& win() noexcept { return win_; }
  rank_t next() const noexcept { return next_; }
  std::byte* local() const noexcept { return local_; }
  std::size_t bytes() const noexcept { return bytes_; }
  // The displacement of byte `offset` of `target`'s memory (disp_unit 1; for a dynamic
  // window, the absolute address in the target's address space).
  disp_t disp(rank_t target, std::size_t offset) const {
    if (!is_dynamic()) return static_cast<disp_t>(offset);
    return static_cast<disp_t>(bases_[static_cast<std::size_t>(target)] + offset);
  }

 private:
  bool is_dynamic() const noexcept {
    return kind_ == window_kind::dynamic || kind_ == window_kind::dynamic_user;
  }
  static rma::window make_window(window_kind kind, std::byte* memory, std::size_t bytes) {
    switch (kind) {
      case window_kind::allocate:
        return rma::window::allocate(oneside::world(), bytes, 1);
      case window_kind::dynamic:
      case window_kind::dynamic_user:
        return rma::window::create_dynamic(oneside::world());
      case window_kind::create:
        break;
    }
    return rma::window::create(oneside::world(), memory, bytes, 1);
  }

  window_kind kind_;
  std::size_t bytes_;
  oneside::transport::segment segment_;  // dynamic: the attached memory
  std::vector<std::byte> user_;          // create, dynamic_user: the user's memory
  std::byte* local_;                     // this rank's memory of the window
  rma::window win_;                      // after its memory: freed before the memory goes
  rank_t next_ = 0;
  std::vector<std::uint64_t> bases_;  // dynamic: every rank's attached address
};

// True on every rank when `ok` holds on every rank (collective).
bool everywhere(bool ok) {
  return oneside::allreduce(oneside::world(), ok ? 1 : 0, oneside::op::min) == 1;
}

// A few operations first (first-touch work of an operation kind stays out of the figures),
// then the lockstep measurement (measure_span when `span`).
constexpr std::int64_t warm_up_ops = 16;

template <class Batch>
void run(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch, bool span = false) {
  batch(std::min(warm_up_ops, ops_per_batch));
  oneside::barrier(oneside::world());
  if (span) {
    bench::measure_span(state, ops_per_batch, batch);
  } else {
    bench::measure(state, ops_per_batch, batch);
  }
}

void report_wrong(benchmark::State& state, bool ok, const char* what) {
  if (!everywhere(ok)) state.SkipWithError(what);
}

// ---- put and get ------------------------------------------------------------------------

enum class direction { put, get };

template <direction D>
void transfer(bench_window& bw, std::byte* local, oneside::count_t n, disp_t d) {
  if constexpr (D == direction::put) {
    bw.win().put(local, n, byte_type(), bw.next(), d, n, byte_type());
  } else {
    bw.win().get(local, n, byte_type(), bw.next(), d, n, byte_type());
  }
}

template <direction D>
void latency(benchmark::State& state, window_kind kind) {
  const std::int64_t bytes = state.range(0);
  bench_window bw(kind, small_window_bytes);
  bench::page_buffer local(static_cast<std::size_t>(bytes));
  const disp_t d = bw.disp(bw.next(), 0);
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      transfer<D>(bw, local.data(), bytes, d);
      bw.win().flush(bw.next());
    }
  });
  bench::count_bytes(state, bytes);
}

// `shift`: the destination of the bytes (the target's memory for put, the origin buffer for
// get) starts `shift` bytes past a page boundary while the source is page-aligned: the
// relative alignment that glibc's memcpy handles 30x slower on some CPUs (runtime/copy.hpp).
template <direction D>
void bandwidth(benchmark::State& state, window_kind kind, std::size_t shift = 0) {
  const std::int64_t bytes = state.range(0);
  const std::size_t put_shift = D == direction::put ? shift : 0;
  const std::size_t get_shift = D == direction::get ? shift : 0;
  bench_window bw(kind, static_cast<std::size_t>(bytes) + put_shift);
  bench::page_buffer local(static_cast<std::size_t>(bytes) + get_shift);
  const disp_t d = bw.disp(bw.next(), put_shift);
  run(state, bench::rma_bandwidth_batch(bytes), [&](std::int64_t k) {
    for (std::int64_t done = 0; done < k; done += bench::rma_in_flight) {
      for (std::int64_t i = 0; i < bench::rma_in_flight; ++i) {
        transfer<D>(bw, local.data() + get_shift, bytes, d);
      }
      bw.win().flush(bw.next());
    }
  });
  bench::count_bytes(state, bytes);
}

void put_rate(benchmark::State& state, window_kind kind) {
  const std::int64_t bytes = state.range(0);
  bench_window bw(kind, small_window_bytes);
  bench::page_buffer local(static_cast<std::size_t>(bytes));
  const disp_t d = bw.disp(bw.next(), 0);
  run(state, bench::rma_rate_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) transfer<direction::put>(bw, local.data(), bytes, d);
    bw.win().flush(bw.next());
  });
  bench::count_bytes(state, bytes);
}

// memcpy between two private page-aligned buffers (the destination `shift` bytes past its
// page boundary), in the batches of the bandwidth benches.
void memcpy_bandwidth(benchmark::State& state, std::size_t shift = 0) {
  const bench::copy_baseline copy(static_cast<std::size_t>(state.range(0)), shift);
  run(state, bench::rma_bandwidth_batch(state.range(0)), [&](std::int64_t k) { copy(k); });
  bench::count_bytes(state, state.range(0));
}

// ---- atomics and accumulates --------------------------------------------------------------

// Which element the fetching benches change: the next rank's, which its previous rank alone
// changes (every fetched value is predictable), or rank 0's, which every rank changes at once
// (the final value is checked).
enum class fetch_target { next, rank0 };

// A fetching int64 sum (fetch_and_op, get_accumulate) and flush, in a loop, on a window of
// `bytes` per rank.
template <class Fetch>
void fetching_sum(benchmark::State& state, window_kind kind, Fetch&& fetch, const char* wrong,
                  std::size_t bytes = small_window_bytes, fetch_target to = fetch_target::next) {
  bench_window bw(kind, bytes);
  const rank_t t = to == fetch_target::next ? bw.next() : 0;
  const disp_t d = bw.disp(t, 0);
  const std::int64_t one = 1;
  std::int64_t old = -1;
  std::int64_t issued = 0;
  bool ok = true;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      fetch(bw.win(), &one, &old, t, d);
      bw.win().flush(t);
    }
    issued += k;
    ok = ok && (to == fetch_target::rank0 || old == issued - 1);
  });
  if (to == fetch_target::rank0) {
    const std::int64_t all = oneside::allreduce(oneside::world(), issued, oneside::op::sum);
    if (oneside::world().rank() == 0) {
      bw.win().sync();
      std::int64_t v = 0;
      std::memcpy(&v, bw.local(), sizeof v);
      ok = v == all;
    }
  }
  report_wrong(state, ok, wrong);
  bench::count_bytes(state, 8);
}

void fetch_and_op(benchmark::State& state, window_kind kind) {
  fetching_sum(
      state, kind,
      [](rma::window& w, const std::int64_t* one, std::int64_t* old, rank_t t, disp_t d) {
        w.fetch_and_op(one, old, int64_type(), t, d, oneside::op::sum);
      },
      "fetch_and_op returned wrong values");
}

// fetch_and_op on a dynamic window over attached user memory (a std::vector of `bytes`: a
// page, which node peers load and store once attach moved it into shared memory; or 64 bytes,
// which stays with the owner's agent), next to the same on an allocate window (issue 18).
void attached_fetch_and_op(benchmark::State& state, window_kind kind, std::size_t bytes,
                           fetch_target to) {
  fetching_sum(
      state, kind,
      [](rma::window& w, const std::int64_t* one, std::int64_t* old, rank_t t, disp_t d) {
        w.fetch_and_op(one, old, int64_type(), t, d, oneside::op::sum);
      },
      "fetch_and_op returned wrong values", bytes, to);
}

void compare_and_swap(benchmark::State& state, window_kind kind) {
  bench_window bw(kind, small_window_bytes);
  const rank_t t = bw.next();
  const disp_t d = bw.disp(t, 0);
  std::int64_t expected = 0;
  std::int64_t old = -1;
  bool ok = true;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      const std::int64_t desired = expected + 1;  // always succeeds: this rank alone writes it
      bw.win().compare_and_swap(&desired, &expected, &old, int64_type(), t, d);
      bw.win().flush(t);
      ok = ok && old == expected;
      expected = desired;
    }
  });
  report_wrong(state, ok, "compare_and_swap returned wrong values");
  bench::count_bytes(state, 8);
}

void accumulate_latency(benchmark::State& state, window_kind kind) {
  const std::int64_t elements = state.range(0);
  const auto bytes = static_cast<std::size_t>(elements) * sizeof(double);
  bench_window bw(kind, std::max(bytes, small_window_bytes));
  const std::vector<double> src(static_cast<std::size_t>(elements), 1.0);
  const rank_t t = bw.next();
  const disp_t d = bw.disp(t, 0);
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      bw.win().accumulate(src.data(), elements, double_type(), t, d, elements, double_type(),
                          oneside::op::sum);
      bw.win().flush(t);
    }
  });
  bench::count_bytes(state, static_cast<std::int64_t>(bytes));
}

void get_accumulate(benchmark::State& state, window_kind kind) {
  fetching_sum(
      state, kind,
      [](rma::window& w, const std::int64_t* one, std::int64_t* old, rank_t t, disp_t d) {
        w.get_accumulate(one, 1, int64_type(), old, 1, int64_type(), t, d, 1, int64_type(),
                         oneside::op::sum);
      },
      "get_accumulate returned wrong values");
}

// Every origin adds 1024 ones into its own 8 KiB block of rank 0's window (blocks are
// disjoint, page-aligned, and cover different accumulate stripes); `all` = every rank at once,
// else only rank 1 (rank 0 with one rank) while the others idle. Afterwards rank 0 checks each
// block: every element must equal the number of accumulates of that block's origin.
void accumulate_scaling(benchmark::State& state, window_kind kind, bool all) {
  const oneside::team& w = oneside::world();
  const auto block = static_cast<std::size_t>(bench::rma_acc_elements) * sizeof(double);
  bench_window bw(kind, block * static_cast<std::size_t>(w.size()));
  const std::vector<double> src(static_cast<std::size_t>(bench::rma_acc_elements), 1.0);
  const rank_t solo = w.size() > 1 ? 1 : 0;
  const bool active = all || w.rank() == solo;
  const disp_t d = bw.disp(0, block * static_cast<std::size_t>(w.rank()));
  const std::int64_t n = bench::rma_acc_elements;
  std::int64_t issued = 0;
  run(
      state, bench::rma_scaling_batch,
      [&](std::int64_t k) {
        if (!active) return;
        for (std::int64_t i = 0; i < k; ++i) {
          bw.win().accumulate(src.data(), n, double_type(), 0, d, n, double_type(),
                              oneside::op::sum);
          bw.win().flush(0);
        }
        issued += k;
      },
      true);
  // Rank 0 checks every block against the count of its origin.
  const std::vector<std::int64_t> counts = oneside::allgather(w, issued);
  bool ok = true;
  if (w.rank() == 0) {
    bw.win().sync();
    for (rank_t r = 0; r < w.size(); ++r) {
      const auto expect = static_cast<double>(counts[static_cast<std::size_t>(r)]);
      const auto* v =
          reinterpret_cast<const double*>(bw.local() + block * static_cast<std::size_t>(r));
      for (std::int64_t i = 0; i < n; ++i) ok = ok && v[i] == expect;
    }
  }
  report_wrong(state, ok, "accumulate scaling: a block has a wrong sum");
  state.counters["origins"] = all ? static_cast<double>(w.size()) : 1.0;
  state.counters["aggregate_ops_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * (all ? static_cast<double>(w.size()) : 1.0),
      benchmark::Counter::kIsRate);
}

// The machine's own ceiling for accumulate_scaling: the same additions (1024 ones into a
// page-aligned private block, the loop the compiler makes of it) with no window and no
// communication, by rank 1 alone and by every rank at once, timed the same way. Ranks that
// share a core, or cores that share execution units or memory bandwidth, show up here as
// well as in the accumulates; a lock that serializes origins shows up only there.
void add_scaling(benchmark::State& state, bool all) {
  const oneside::team& w = oneside::world();
  const auto n = static_cast<std::size_t>(bench::rma_acc_elements);
  bench::page_buffer block(n * sizeof(double));
  std::memset(block.data(), 0, block.size());
  const std::vector<double> src(n, 1.0);
  const rank_t solo = w.size() > 1 ? 1 : 0;
  const bool active = all || w.rank() == solo;
  run(
      state, bench::rma_scaling_batch,
      [&](std::int64_t k) {
        if (!active) return;
        for (std::int64_t i = 0; i < k; ++i) {
          auto* b = reinterpret_cast<double*>(block.data());
          benchmark::DoNotOptimize(b);
          for (std::size_t j = 0; j < n; ++j) b[j] += src[j];
          benchmark::ClobberMemory();
        }
      },
      true);
  state.counters["origins"] = all ? static_cast<double>(w.size()) : 1.0;
}

// ---- registration -------------------------------------------------------------------------

template <class Fn>
benchmark::internal::Benchmark* add(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->UseManualTime();
}

bool register_all() {
  add("rma_memcpy_bandwidth", [](benchmark::State& s) {
    memcpy_bandwidth(s);
  })->Apply(bench::rma_sizes);
  add("rma_memcpy_bandwidth_shifted", [](benchmark::State& s) {
    memcpy_bandwidth(s, bench::rma_shift);
  })->Apply(bench::rma_shifted_sizes);
  add("rma_put_bandwidth_shifted/allocate", [](benchmark::State& s) {
    bandwidth<direction::put>(s, window_kind::allocate, bench::rma_shift);
  })->Apply(bench::rma_shifted_sizes);
  add("rma_get_bandwidth_shifted/allocate", [](benchmark::State& s) {
    bandwidth<direction::get>(s, window_kind::allocate, bench::rma_shift);
  })->Apply(bench::rma_shifted_sizes);
  // rma_attached_fetch_and_op/<target>/<memory>: the next rank, or every rank on rank 0's
  // element at once; allocate (the baseline), page (4 KiB of a std::vector attached to a
  // dynamic window), small (64 bytes of one). (Not /allocate/ in the middle: the rma_allocate
  // family of bench/run.py would take the baseline too.)
  for (const fetch_target to : {fetch_target::next, fetch_target::rank0}) {
    const std::string name =
        std::string("rma_attached_fetch_and_op/") + (to == fetch_target::next ? "next" : "rank0");
    add(name + "/allocate", [to](benchmark::State& s) {
      attached_fetch_and_op(s, window_kind::allocate, small_window_bytes, to);
    });
    add(name + "/page", [to](benchmark::State& s) {
      attached_fetch_and_op(s, window_kind::dynamic_user, small_window_bytes, to);
    });
    add(name + "/small",
        [to](benchmark::State& s) { attached_fetch_and_op(s, window_kind::dynamic_user, 64, to); });
  }
  add("rma_add_scaling/one", [](benchmark::State& s) { add_scaling(s, false); });
  add("rma_add_scaling/all", [](benchmark::State& s) { add_scaling(s, true); });
  for (const window_kind k : window_kinds) {
    const std::string kind(kind_name(k));
    const auto with = [k](auto fn) { return [k, fn](benchmark::State& s) { fn(s, k); }; };
    add("rma_put_latency/" + kind, with(latency<direction::put>))->Arg(bench::latency_bytes);
    add("rma_get_latency/" + kind, with(latency<direction::get>))->Arg(bench::latency_bytes);
    add("rma_put_rate/" + kind, with(put_rate))->Arg(bench::latency_bytes);
    add("rma_fetch_and_op/" + kind, with(fetch_and_op));
    add("rma_compare_and_swap/" + kind, with(compare_and_swap));
    add("rma_accumulate_latency/" + kind, with(accumulate_latency))
        ->Arg(1)
        ->Arg(bench::rma_acc_elements);
    add("rma_get_accumulate/" + kind, with(get_accumulate));
    add("rma_accumulate_scaling/" + kind + "/one",
        [k](benchmark::State& s) { accumulate_scaling(s, k, false); });
    add("rma_accumulate_scaling/" + kind + "/all",
        [k](benchmark::State& s) { accumulate_scaling(s, k, true); });
    add("rma_put_bandwidth/" + kind, [k](benchmark::State& s) {
      bandwidth<direction::put>(s, k);
    })->Apply(bench::rma_sizes);
    add("rma_get_bandwidth/" + kind, [k](benchmark::State& s) {
      bandwidth<direction::get>(s, k);
    })->Apply(bench::rma_sizes);
  }
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
