// The PGAS layer's one-sided operations through global pointers, next to the same operations
// over a raw rma::window and to memcpy, in one run: "rput 8 B: N× the window's put + flush" is
// then a ratio of two figures one process measured seconds apart. Rank 0 is the origin and
// rank 1 the target (a node peer on the shm transport); further ranks idle. The target does
// nothing during a batch: it waits in the reduction that closes it (bench_support.hpp), which
// is all the shm transport (the origin's CPU does every access) and the MPI transport (its
// progress thread serves atomics) need. The OpenSHMEM peer of the pgas figures is
// peers/oshmem_bench.cpp: same batches, same method, a separate launch (bench/run.py pairs
// them per repetition).
//
//   pgas_put_latency/rput/8            rput of an int64, then wait (remote completion)
//   pgas_put_latency/put_quiet/8       rput of an int64 with the future dropped, then quiet():
//                                      SHMEM's put + quiet
//   pgas_put_latency/window/8          window put of 8 B, then flush(1)
//   pgas_get_latency/rget/8            rget of an int64, then wait
//   pgas_get_latency/get/8             blocking get of an int64
//   pgas_get_latency/window/8          window get of 8 B, then flush(1)
//   pgas_put_bandwidth/rput/1048576    rput of a 1 MiB span, then wait (bytes/s)
//   pgas_put_bandwidth/window/1048576  window put of 1 MiB, then flush(1)
//   pgas_get_bandwidth/rget/1048576    rget into a 1 MiB span, then wait
//   pgas_get_bandwidth/window/1048576  window get of 1 MiB, then flush(1)
//   pgas_fetch_add/fetch_add/int64     fetch_add(p, 1).wait() on a global_ptr<std::int64_t>
//   pgas_fetch_add/window/int64        window fetch_and_op int64 sum, then flush(1)
//   pgas_put_rate/rput_quiet/8         64 rputs of an int64 (futures dropped), then quiet()
//   pgas_put_rate/window/8             64 window puts of 8 B, then flush(1)
//   pgas_memcpy_latency/8, pgas_memcpy_bandwidth/1048576
//                                      memcpy between private page-aligned buffers
//
// Times are per operation (the put rates: per put). Batches are those of the OpenSHMEM peer:
// 1024 small operations, 16 of 1 MiB. The window is an rma::window::allocate window under
// lock_all (every rank, for the bench's life); the pgas operations target a block of rank 1's
// global heap. Each bench issues 16 operations before its first batch, and both kinds of
// memory are written and read once in full by the origin before that. Dropped rput futures
// stay registered until progress() polls them, so the put + quiet benches call progress()
// once per batch, inside the timing, as a program that drops its futures must now and then.
// Every bench checks its result afterwards (the target's word or bytes, the fetched values)
// and reports an error instead of a figure when it is wrong.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>
#include <oneside/pgas/atomic.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;
namespace rma = oneside::rma;
using oneside::global_ptr;
using oneside::rank_t;

constexpr rank_t origin_rank = 0;
constexpr rank_t target_rank = 1;
constexpr std::int64_t warm_up_ops = 16;
constexpr std::int64_t mib = std::int64_t{1} << 20;
constexpr std::size_t page_bytes = 4096;
// What the target's memory holds before the get benches read it.
constexpr std::int64_t target_word = 0x0123456789abcdef;
constexpr std::byte target_fill{0x3c};

const oneside::datatype& byte_type() {
  return oneside::datatype::of<std::byte>();
}
const oneside::datatype& int64_type() {
  return oneside::datatype::of<std::int64_t>();
}

bool is_origin() {
  return oneside::world().rank() == origin_rank;
}
bool is_target() {
  return oneside::world().rank() == target_rank;
}

using bench::everywhere;

void report_wrong(benchmark::State& state, bool ok, const char* what) {
  if (!everywhere(ok)) state.SkipWithError(what);
}

// The value of the origin's `x` on every rank (collective).
std::int64_t from_origin(std::int64_t x) {
  return oneside::broadcast(oneside::world(), x, origin_rank);
}

// Rank 0 to rank 1: skipped with fewer ranks.
bool has_target(benchmark::State& state) {
  return bench::has_ranks(state, target_rank + 1);
}

// A few operations first (first-touch work of an operation kind stays out of the figures),
// then the lockstep measurement; only the origin works, the others wait in its reduction.
template <class Batch>
void run(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  if (is_origin()) batch(std::min(warm_up_ops, ops_per_batch));
  oneside::barrier(oneside::world());
  bench::measure(state, ops_per_batch, [&](std::int64_t k) {
    if (is_origin()) batch(k);
  });
}

std::size_t page_rounded(std::size_t bytes) {
  return std::max(page_bytes, (bytes + page_bytes - 1) / page_bytes * page_bytes);
}

bool all_bytes_are(const std::byte* p, std::size_t n, std::byte value) {
  return std::all_of(p, p + n, [value](std::byte b) { return b == value; });
}

// Whether [p, p + n) holds what the target's memory holds: target_word, then target_fill.
bool is_target_contents(const std::byte* p, std::size_t n) {
  return n >= sizeof target_word && std::memcmp(p, &target_word, sizeof target_word) == 0 &&
         all_bytes_are(p + sizeof target_word, n - sizeof target_word, target_fill);
}

// ---- memory -------------------------------------------------------------------------------

// A page-aligned block of every rank's global heap, rank 1's named by a global pointer
// (addresses exchanged by allgather). Each rank zeroes its block; the origin reads and writes
// rank 1's once in full (mapping, page faults); then each rank fills its own with target_fill
// and the first word with target_word. Collective both ways.
class heap_block {
 public:
  explicit heap_block(std::size_t bytes)
      : bytes_(page_rounded(bytes)), mine_(oneside::allocate<std::byte>(bytes_, page_bytes)) {
    const oneside::team& w = oneside::world();
    std::memset(mine_.local(), 0, bytes_);
    const std::vector<std::uint64_t> addresses =
        oneside::allgather(w, static_cast<std::uint64_t>(mine_.address()));
    target_ = global_ptr<std::byte>(
        target_rank, static_cast<std::uintptr_t>(addresses[static_cast<std::size_t>(target_rank)]));
    oneside::barrier(w);
    if (is_origin()) {
      bench::page_buffer scratch(bytes_);
      oneside::rget(target_, std::span<std::byte>(scratch.data(), bytes_)).wait();
      oneside::rput(std::span<const std::byte>(scratch.data(), bytes_), target_).wait();
    }
    oneside::barrier(w);
    std::memset(mine_.local(), static_cast<int>(target_fill), bytes_);
    std::memcpy(mine_.local(), &target_word, sizeof target_word);
    oneside::barrier(w);
  }
  heap_block(const heap_block&) = delete;
  heap_block& operator=(const heap_block&) = delete;
  ~heap_block() {
    oneside::barrier(oneside::world());  // nobody reads or writes it any more
    oneside::deallocate(mine_);
  }

  global_ptr<std::byte> target() const noexcept { return target_; }
  global_ptr<std::int64_t> target_int64() const noexcept {
    return oneside::reinterpret_pointer_cast<std::int64_t>(target_);
  }
  // This rank's block.
  std::byte* local() const { return mine_.local(); }
  std::int64_t first_word() const {
    std::int64_t v = 0;
    std::memcpy(&v, mine_.local(), sizeof v);
    return v;
  }

 private:
  std::size_t bytes_;
  global_ptr<std::byte> mine_;
  global_ptr<std::byte> target_;
};

// An rma::window::allocate window of `bytes` (disp_unit 1) on every rank with lock_all held
// from construction to destruction (collective both ways). Prepared as heap_block is: zeroed,
// read and written once in full by the origin, then filled with target_fill and target_word.
class raw_window {
 public:
  // (Built in the initializer list: rma::window's default constructor does not compile
  // outside the rma library.)
  explicit raw_window(std::size_t bytes)
      : bytes_(page_rounded(bytes)), win_(rma::window::allocate(oneside::world(), bytes_, 1)) {
    const oneside::team& w = oneside::world();
    local_ = static_cast<std::byte*>(win_.base());
    std::memset(local_, 0, bytes_);
    oneside::barrier(w);
    win_.lock_all();
    if (is_origin()) {
      bench::page_buffer scratch(bytes_);
      const auto n = static_cast<oneside::count_t>(bytes_);
      win_.get(scratch.data(), n, byte_type(), target_rank, 0, n, byte_type());
      win_.flush(target_rank);
      win_.put(scratch.data(), n, byte_type(), target_rank, 0, n, byte_type());
      win_.flush(target_rank);
    }
    oneside::barrier(w);
    std::memset(local_, static_cast<int>(target_fill), bytes_);
    std::memcpy(local_, &target_word, sizeof target_word);
    win_.sync();
    oneside::barrier(w);
  }
  raw_window(const raw_window&) = delete;
  raw_window& operator=(const raw_window&) = delete;
  ~raw_window() {
    win_.unlock_all();
    win_.free();
  }

  rma::window& win() noexcept { return win_; }
  std::byte* local() const noexcept { return local_; }
  // This rank's first word, after the origin's last operation (sync: the window's memory is
  // read by load here).
  std::int64_t first_word() {
    win_.sync();
    std::int64_t v = 0;
    std::memcpy(&v, local_, sizeof v);
    return v;
  }

 private:
  std::size_t bytes_;
  rma::window win_;
  std::byte* local_ = nullptr;
};

// ---- put, 8 bytes -------------------------------------------------------------------------

// How the origin's 8-byte put completes.
enum class put_kind { rput_wait, put_quiet };

// The origin writes 0, 1, 2, … into rank 1's first word; afterwards rank 1 checks that the
// word holds the last of them.
void pgas_put_latency(benchmark::State& state, put_kind kind) {
  if (!has_target(state)) return;
  heap_block block(sizeof(std::int64_t));
  const global_ptr<std::int64_t> dst = block.target_int64();
  std::int64_t next = 0;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    if (kind == put_kind::rput_wait) {
      for (std::int64_t i = 0; i < k; ++i) oneside::rput(next++, dst).wait();
    } else {
      for (std::int64_t i = 0; i < k; ++i) {
        (void)oneside::rput(next++, dst);
        oneside::quiet();
      }
      oneside::progress();  // retires the dropped futures (none on the direct path)
    }
  });
  const std::int64_t last = from_origin(next - 1);
  oneside::barrier(oneside::world());
  report_wrong(state, !is_target() || block.first_word() == last,
               "put: the target's word is not the last value written");
  bench::count_bytes(state, sizeof(std::int64_t));
}

void window_put_latency(benchmark::State& state) {
  if (!has_target(state)) return;
  raw_window rw(sizeof(std::int64_t));
  std::int64_t next = 0;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      const std::int64_t v = next++;
      rw.win().put(&v, 8, byte_type(), target_rank, 0, 8, byte_type());
      rw.win().flush(target_rank);
    }
  });
  const std::int64_t last = from_origin(next - 1);
  oneside::barrier(oneside::world());
  report_wrong(state, !is_target() || rw.first_word() == last,
               "window put: the target's word is not the last value written");
  bench::count_bytes(state, sizeof(std::int64_t));
}

// 64 puts in flight, then one completion for all; an operation is one put.
void pgas_put_rate(benchmark::State& state) {
  if (!has_target(state)) return;
  heap_block block(sizeof(std::int64_t));
  const global_ptr<std::int64_t> dst = block.target_int64();
  std::int64_t next = 0;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t done = 0; done < k; done += bench::rma_in_flight) {
      for (std::int64_t i = 0; i < bench::rma_in_flight; ++i) (void)oneside::rput(next++, dst);
      oneside::quiet();
    }
    oneside::progress();
  });
  const std::int64_t last = from_origin(next - 1);
  oneside::barrier(oneside::world());
  // Puts in flight to one place are not ordered (fence() would order them; the window's path
  // may reorder them): any value of the last round.
  const std::int64_t found = is_target() ? block.first_word() : last;
  report_wrong(state, found <= last && found > last - bench::rma_in_flight,
               "put rate: the target's word is not from the last round");
  bench::count_bytes(state, sizeof(std::int64_t));
}

void window_put_rate(benchmark::State& state) {
  if (!has_target(state)) return;
  raw_window rw(sizeof(std::int64_t));
  // Each put's source stays in place until the flush, as the window requires.
  std::vector<std::int64_t> values(static_cast<std::size_t>(bench::rma_in_flight));
  std::int64_t next = 0;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t done = 0; done < k; done += bench::rma_in_flight) {
      for (std::int64_t& v : values) {
        v = next++;
        rw.win().put(&v, 8, byte_type(), target_rank, 0, 8, byte_type());
      }
      rw.win().flush(target_rank);
    }
  });
  const std::int64_t last = from_origin(next - 1);
  oneside::barrier(oneside::world());
  // Puts to one place are not ordered (the spec's rule): any value of the last round.
  const std::int64_t found = is_target() ? rw.first_word() : last;
  report_wrong(state, found <= last && found > last - bench::rma_in_flight,
               "window put rate: the target's word is not from the last round");
  bench::count_bytes(state, sizeof(std::int64_t));
}

// ---- get, 8 bytes -------------------------------------------------------------------------

enum class get_kind { rget_wait, blocking };

void pgas_get_latency(benchmark::State& state, get_kind kind) {
  if (!has_target(state)) return;
  heap_block block(sizeof(std::int64_t));
  const global_ptr<const std::int64_t> src = block.target_int64();
  bool ok = true;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    std::int64_t v = 0;
    for (std::int64_t i = 0; i < k; ++i) {
      v = kind == get_kind::rget_wait ? oneside::rget(src).wait() : oneside::get(src);
      benchmark::DoNotOptimize(v);
    }
    ok = ok && v == target_word;
  });
  report_wrong(state, ok, "get: read a wrong value");
  bench::count_bytes(state, sizeof(std::int64_t));
}

void window_get_latency(benchmark::State& state) {
  if (!has_target(state)) return;
  raw_window rw(sizeof(std::int64_t));
  bool ok = true;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    std::int64_t v = 0;
    for (std::int64_t i = 0; i < k; ++i) {
      rw.win().get(&v, 8, byte_type(), target_rank, 0, 8, byte_type());
      rw.win().flush(target_rank);
      benchmark::DoNotOptimize(v);
    }
    ok = ok && v == target_word;
  });
  report_wrong(state, ok, "window get: read a wrong value");
  bench::count_bytes(state, sizeof(std::int64_t));
}

// ---- 1 MiB --------------------------------------------------------------------------------

// Puts carry the origin's page_buffer bytes (0x5a) over the target's target_fill; gets bring
// target_fill into the origin's buffer. Checked in full afterwards.
constexpr std::byte origin_fill{0x5a};  // what bench::page_buffer is filled with

void pgas_put_bandwidth(benchmark::State& state) {
  if (!has_target(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  heap_block block(bytes);
  const bench::page_buffer source(bytes);
  const std::span<const std::byte> src(source.data(), bytes);
  const global_ptr<std::byte> dst = block.target();
  run(state, bench::transfer_batch(state.range(0)), [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) oneside::rput(src, dst).wait();
  });
  oneside::barrier(oneside::world());
  report_wrong(state, !is_target() || all_bytes_are(block.local(), bytes, origin_fill),
               "rput 1 MiB: the target's bytes are wrong");
  bench::count_bytes(state, state.range(0));
}

void pgas_get_bandwidth(benchmark::State& state) {
  if (!has_target(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  heap_block block(bytes);
  bench::page_buffer destination(bytes);
  const std::span<std::byte> dst(destination.data(), bytes);
  const global_ptr<const std::byte> src = block.target();
  run(state, bench::transfer_batch(state.range(0)), [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) oneside::rget(src, dst).wait();
  });
  // The first word of the target's block is target_word, the rest target_fill.
  const bool ok = !is_origin() || is_target_contents(destination.data(), bytes);
  report_wrong(state, ok, "rget 1 MiB: read wrong bytes");
  bench::count_bytes(state, state.range(0));
}

void window_put_bandwidth(benchmark::State& state) {
  if (!has_target(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  raw_window rw(bytes);
  const bench::page_buffer source(bytes);
  const auto n = static_cast<oneside::count_t>(bytes);
  run(state, bench::transfer_batch(state.range(0)), [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      rw.win().put(source.data(), n, byte_type(), target_rank, 0, n, byte_type());
      rw.win().flush(target_rank);
    }
  });
  oneside::barrier(oneside::world());
  if (is_target()) rw.win().sync();
  report_wrong(state, !is_target() || all_bytes_are(rw.local(), bytes, origin_fill),
               "window put 1 MiB: the target's bytes are wrong");
  bench::count_bytes(state, state.range(0));
}

void window_get_bandwidth(benchmark::State& state) {
  if (!has_target(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  raw_window rw(bytes);
  bench::page_buffer destination(bytes);
  const auto n = static_cast<oneside::count_t>(bytes);
  run(state, bench::transfer_batch(state.range(0)), [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      rw.win().get(destination.data(), n, byte_type(), target_rank, 0, n, byte_type());
      rw.win().flush(target_rank);
    }
  });
  const bool ok = !is_origin() || is_target_contents(destination.data(), bytes);
  report_wrong(state, ok, "window get 1 MiB: read wrong bytes");
  bench::count_bytes(state, state.range(0));
}

// ---- atomics ------------------------------------------------------------------------------

// fetch_add of 1 on rank 1's first word (zero at the start), waiting for the old value: every
// fetched value is the count of earlier adds, and the word ends at the count of all of them.
void pgas_fetch_add(benchmark::State& state) {
  if (!has_target(state)) return;
  heap_block block(sizeof(std::int64_t));
  if (is_target()) {
    const std::int64_t zero = 0;
    std::memcpy(block.local(), &zero, sizeof zero);
  }
  oneside::barrier(oneside::world());
  const global_ptr<std::int64_t> dst = block.target_int64();
  std::int64_t old = -1;
  std::int64_t issued = 0;
  bool ok = true;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) old = oneside::fetch_add(dst, 1).wait();
    issued += k;
    ok = ok && old == issued - 1;
  });
  const std::int64_t total = from_origin(issued);
  oneside::barrier(oneside::world());
  ok = ok && (!is_target() || block.first_word() == total);
  report_wrong(state, ok, "fetch_add: wrong values");
  bench::count_bytes(state, sizeof(std::int64_t));
}

// The same over the window: fetch_and_op int64 sum of 1, then flush.
void window_fetch_and_op(benchmark::State& state) {
  if (!has_target(state)) return;
  raw_window rw(sizeof(std::int64_t));
  if (is_target()) {
    const std::int64_t zero = 0;
    std::memcpy(rw.local(), &zero, sizeof zero);
    rw.win().sync();
  }
  oneside::barrier(oneside::world());
  const std::int64_t one = 1;
  std::int64_t old = -1;
  std::int64_t issued = 0;
  bool ok = true;
  run(state, bench::rma_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      rw.win().fetch_and_op(&one, &old, int64_type(), target_rank, 0, oneside::op::sum);
      rw.win().flush(target_rank);
    }
    issued += k;
    ok = ok && old == issued - 1;
  });
  const std::int64_t total = from_origin(issued);
  oneside::barrier(oneside::world());
  ok = ok && (!is_target() || rw.first_word() == total);
  report_wrong(state, ok, "window fetch_and_op: wrong values");
  bench::count_bytes(state, sizeof(std::int64_t));
}

// ---- baseline -----------------------------------------------------------------------------

// memcpy between two private page-aligned buffers on the origin, the sizes and batches of the
// put and get benches.
void memcpy_between_buffers(benchmark::State& state, std::int64_t ops_per_batch) {
  const bench::copy_baseline copy(static_cast<std::size_t>(state.range(0)));
  run(state, ops_per_batch, [&](std::int64_t k) { copy(k); });
  bench::count_bytes(state, state.range(0));
}

// ---- registration -------------------------------------------------------------------------

template <class Fn>
benchmark::internal::Benchmark* add(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->UseManualTime();
}

// Each pgas bench right before its window counterpart, so the two of a ratio run seconds
// apart.
bool register_all() {
  const std::int64_t small = bench::latency_bytes;
  add("pgas_put_latency/rput", [](benchmark::State& s) {
    pgas_put_latency(s, put_kind::rput_wait);
  })->Arg(small);
  add("pgas_put_latency/put_quiet", [](benchmark::State& s) {
    pgas_put_latency(s, put_kind::put_quiet);
  })->Arg(small);
  add("pgas_put_latency/window", window_put_latency)->Arg(small);
  add("pgas_get_latency/rget", [](benchmark::State& s) {
    pgas_get_latency(s, get_kind::rget_wait);
  })->Arg(small);
  add("pgas_get_latency/get", [](benchmark::State& s) {
    pgas_get_latency(s, get_kind::blocking);
  })->Arg(small);
  add("pgas_get_latency/window", window_get_latency)->Arg(small);
  add("pgas_put_rate/rput_quiet", pgas_put_rate)->Arg(small);
  add("pgas_put_rate/window", window_put_rate)->Arg(small);
  add("pgas_fetch_add/fetch_add/int64", pgas_fetch_add);
  add("pgas_fetch_add/window/int64", window_fetch_and_op);
  add("pgas_put_bandwidth/rput", pgas_put_bandwidth)->Arg(mib);
  add("pgas_put_bandwidth/window", window_put_bandwidth)->Arg(mib);
  add("pgas_get_bandwidth/rget", pgas_get_bandwidth)->Arg(mib);
  add("pgas_get_bandwidth/window", window_get_bandwidth)->Arg(mib);
  add("pgas_memcpy_latency", [](benchmark::State& s) {
    memcpy_between_buffers(s, bench::rma_batch);
  })->Arg(small);
  add("pgas_memcpy_bandwidth", [](benchmark::State& s) {
    memcpy_between_buffers(s, bench::transfer_batch(s.range(0)));
  })->Arg(mib);
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
