// oneside::file: write_at_all of 16 MiB per rank with a contiguous view and with 4 KiB blocks
// round-robin over the ranks, direct and with collective buffering, beside a single-stream
// pwrite of the same total by rank 0 (the file system's "dd" rate) in the same run; and the
// overlap of a split collective write with computation, E = (T_io + T_compute) / T_total.
// Files go to the temporary directory (TMPDIR, else /tmp) and are removed afterwards.
#include <chrono>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;
using oneside::datatype;
using oneside::file;
using oneside::file_mode;

constexpr std::int64_t per_rank = std::int64_t{16} << 20;
constexpr std::int64_t block = 4096;

std::string bench_file() {
  return (std::filesystem::temp_directory_path() / "oneside-file-bench.bin").string();
}

// Each rank's 16 MiB: contiguous (rank r at r × 16 MiB) or interleaved (4 KiB blocks,
// round-robin over the ranks).
void set_pattern(file& f, bool interleaved) {
  const oneside::team& w = oneside::world();
  const datatype& b = datatype::of<std::byte>();
  if (!interleaved) {
    f.set_view(w.rank() * per_rank, b, b);
  } else {
    const datatype ft = datatype::resized(datatype::contiguous(block, b), 0, block * w.size());
    f.set_view(w.rank() * block, b, ft);
  }
}

void file_write_at_all(benchmark::State& state) {
  const bool interleaved = state.range(0) != 0;
  const bool buffered = state.range(1) != 0;
  const oneside::team& w = oneside::world();
  oneside::info hints;
  hints.set("collective_buffering", buffered ? "true" : "false");
  file f = file::open(w, bench_file(), file_mode::create | file_mode::rdwr, hints);
  set_pattern(f, interleaved);
  std::vector<std::byte> data(static_cast<std::size_t>(per_rank), std::byte{1});
  // Once untimed: the file's blocks exist before the measurement (as for the baseline).
  (void)f.write_at_all(0, data.data(), per_rank, datatype::of<std::byte>());
  bench::measure(state, 1, [&](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      (void)f.write_at_all(0, data.data(), per_rank, datatype::of<std::byte>());
    }
  });
  state.SetBytesProcessed(state.iterations() * per_rank * w.size());
  f.close();
  if (w.rank() == 0) file::remove(bench_file());
  oneside::barrier(w);
}
BENCHMARK(file_write_at_all)
    ->ArgNames({"interleaved", "cb"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The baseline: rank 0 alone writes the same total with pwrite in 1 MiB pieces.
void file_pwrite_single_stream(benchmark::State& state) {
  const oneside::team& w = oneside::world();
  const std::int64_t total = per_rank * w.size();
  std::vector<std::byte> data(std::size_t{1} << 20, std::byte{1});
  int fd = -1;
  if (w.rank() == 0) {
    fd = ::open(bench_file().c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    for (std::int64_t at = 0; fd >= 0 && at < total; at += std::int64_t{1} << 20) {
      benchmark::DoNotOptimize(::pwrite(fd, data.data(), data.size(), at));  // untimed
    }
  }
  bench::measure(state, 1, [&](std::int64_t n) {
    if (fd < 0) return;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t at = 0; at < total; at += std::int64_t{1} << 20) {
        benchmark::DoNotOptimize(::pwrite(fd, data.data(), data.size(), at));
      }
    }
  });
  state.SetBytesProcessed(state.iterations() * total);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(bench_file().c_str());
  }
  oneside::barrier(w);
}
BENCHMARK(file_pwrite_single_stream)->UseManualTime()->Unit(benchmark::kMillisecond);

// Busy work for about `seconds`.
double compute_for(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  double x = 1.0;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  }
  return x;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Overlap: T_io (begin then end), T_compute (as long as T_io), T_total (begin, compute, end);
// each the slowest rank's. The counter E = (T_io + T_compute) / T_total is 2 for perfect
// overlap and 1 for none.
void file_write_all_overlap(benchmark::State& state) {
  const oneside::team& w = oneside::world();
  file f = file::open(w, bench_file(), file_mode::create | file_mode::rdwr);
  set_pattern(f, false);
  std::vector<std::byte> data(static_cast<std::size_t>(per_rank), std::byte{2});
  const datatype& b = datatype::of<std::byte>();
  (void)f.write_all(data.data(), per_rank, b);  // untimed: the file's blocks exist
  double sum_e = 0;
  for (auto _ : state) {
    oneside::barrier(w);
    f.seek(0);
    double t = now();
    f.write_all_begin(data.data(), per_rank, b);
    (void)f.write_all_end(data.data());
    const double t_io = bench::slowest_rank(now() - t);
    oneside::barrier(w);
    t = now();
    benchmark::DoNotOptimize(compute_for(t_io));
    const double t_compute = bench::slowest_rank(now() - t);
    oneside::barrier(w);
    f.seek(0);
    t = now();
    f.write_all_begin(data.data(), per_rank, b);
    benchmark::DoNotOptimize(compute_for(t_io));
    (void)f.write_all_end(data.data());
    const double t_total = bench::slowest_rank(now() - t);
    state.SetIterationTime(t_total);
    sum_e += (t_io + t_compute) / t_total;
  }
  state.counters["E"] = sum_e / static_cast<double>(state.iterations());
  f.close();
  if (w.rank() == 0) file::remove(bench_file());
  oneside::barrier(w);
}
BENCHMARK(file_write_all_overlap)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
