// dist_array::save / load (the checkpoint of a distributed array, issue 24) beside raw
// pwrite / pread of the same bytes, interleaved in one run (STYLE.md R12):
//
//   dist_array_file_checkpoint/MiB:<MiB> (256: 10 iterations, 1024 and 2048: 3)   each iteration:
//   a.save(file) of a 2-D dist_array of
//       doubles (rows of 4096 in blocks over the ranks, <MiB> MiB in all), then the same bytes
//       written raw — rank 0 creates and truncates the file and writes a 4096-byte header, each
//       rank opens it and pwrites its block at its offset, closes, barrier — then a.load(file),
//       then the raw reads (each rank preads its block). Each step is timed as the slowest
//       rank's, from a barrier to the end of the step.
//
// Counters: save_GiBps, pwrite_GiBps, load_GiBps, pread_GiBps (array bytes per second) and the
// time ratios save_ratio = T_save / T_pwrite, load_ratio = T_load / T_pread (summed over the
// iterations; 1.0 is the raw file system's bound, the issue asks ≤ 1.2 for a checkpoint), and
// save_ratio_min, load_ratio_min: the same of the fastest iterations (robust to a loaded
// machine's stalls). Nothing
// is synced to the device (both sides stop at the page cache). Files go to TMPDIR, else /tmp
// (TMPDIR=/dev/shm for the memory file system), and are removed afterwards.
#include <algorithm>
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

constexpr std::size_t row = 4096;  // doubles per row
constexpr std::int64_t header = 4096;

std::string bench_path(const char* name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Writes or reads all of [p, p + len) at `at`; false on an error.
bool full_io(int fd, bool write, char* p, std::size_t len, std::int64_t at) {
  while (len > 0) {
    const ssize_t n = write ? ::pwrite(fd, p, len, at) : ::pread(fd, p, len, at);
    if (n <= 0) return false;
    p += n;
    len -= static_cast<std::size_t>(n);
    at += n;
  }
  return true;
}

void dist_array_file_checkpoint(benchmark::State& state) {
  const oneside::team& w = oneside::world();
  const auto ranks = static_cast<std::size_t>(w.size());
  const std::size_t total = static_cast<std::size_t>(state.range(0)) << 20;
  const std::size_t rows = (total / (row * sizeof(double)) + ranks - 1) / ranks * ranks;
  oneside::dist_array<double, 2> a(w, {rows, row}, {oneside::dist::block, oneside::dist::none},
                                   "checkpoint");
  a.for_each_local([](const std::array<std::size_t, 2>& g, double& x) {
    x = static_cast<double>(g[0] * row + g[1]);
  });
  const oneside::local_view<double, 2> mine = a.local();
  const std::size_t bytes = mine.size() * sizeof(double);
  const std::int64_t at =
      header + static_cast<std::int64_t>(a.global_index({0, 0})[0] * row * sizeof(double));
  const double array_bytes = static_cast<double>(rows * row * sizeof(double));
  const std::string saved = bench_path("oneside-array-bench.bin");
  const std::string raw = bench_path("oneside-array-bench.raw");
  auto* data = reinterpret_cast<char*>(mine.data());
  bool ok = true;
  auto raw_write = [&] {
    int fd = -1;
    if (w.rank() == 0) {
      fd = ::open(raw.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
      std::vector<char> head(header, 0);
      ok = ok && fd >= 0 && full_io(fd, true, head.data(), head.size(), 0);
    }
    oneside::barrier(w);
    if (w.rank() != 0) fd = ::open(raw.c_str(), O_WRONLY | O_CLOEXEC);
    ok = ok && fd >= 0 && full_io(fd, true, data, bytes, at);
    if (fd >= 0) ::close(fd);
    oneside::barrier(w);
  };
  auto raw_read = [&] {
    const int fd = ::open(raw.c_str(), O_RDONLY | O_CLOEXEC);
    ok = ok && fd >= 0 && full_io(fd, false, data, bytes, at);
    if (fd >= 0) ::close(fd);
    oneside::barrier(w);
  };
  // Once untimed: both files exist and the pages are touched.
  a.save(saved);
  raw_write();
  double sums[4] = {0, 0, 0, 0};  // save, pwrite, load, pread
  double mins[4] = {1e300, 1e300, 1e300, 1e300};
  for (auto _ : state) {
    double step[4];
    oneside::barrier(w);
    double t = now();
    a.save(saved);
    step[0] = bench::slowest_rank(now() - t);
    oneside::barrier(w);
    t = now();
    raw_write();
    step[1] = bench::slowest_rank(now() - t);
    oneside::barrier(w);
    t = now();
    a.load(saved);
    step[2] = bench::slowest_rank(now() - t);
    oneside::barrier(w);
    t = now();
    raw_read();
    step[3] = bench::slowest_rank(now() - t);
    for (int i = 0; i < 4; ++i) {
      sums[i] += step[i];
      mins[i] = std::min(mins[i], step[i]);
    }
    state.SetIterationTime(step[0]);
  }
  // The array still holds what it was filled with (load and the raw read put it back).
  std::size_t wrong = 0;
  a.for_each_local([&wrong](const std::array<std::size_t, 2>& g, double& x) {
    if (x != static_cast<double>(g[0] * row + g[1])) ++wrong;
  });
  ok = oneside::allreduce(w, ok && wrong == 0 ? 1 : 0, oneside::op::min) == 1;
  if (!ok) state.SkipWithError("a raw access failed or the loaded array is wrong");
  const auto n = static_cast<double>(state.iterations());
  const double gib = array_bytes / double(1 << 30);
  state.counters["save_GiBps"] = gib * n / sums[0];
  state.counters["pwrite_GiBps"] = gib * n / sums[1];
  state.counters["load_GiBps"] = gib * n / sums[2];
  state.counters["pread_GiBps"] = gib * n / sums[3];
  state.counters["save_ratio"] = sums[0] / sums[1];
  state.counters["load_ratio"] = sums[2] / sums[3];
  state.counters["save_ratio_min"] = mins[0] / mins[1];
  state.counters["load_ratio_min"] = mins[2] / mins[3];
  oneside::barrier(w);
  if (w.rank() == 0) {
    ::unlink(saved.c_str());
    ::unlink(raw.c_str());
  }
  oneside::barrier(w);
}
BENCHMARK(dist_array_file_checkpoint)
    ->ArgName("MiB")
    ->Arg(256)
    ->Iterations(10)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
// The checkpoint size class (a 1 GiB array; 3 GiB of memory and files in all), fewer
// iterations.
BENCHMARK(dist_array_file_checkpoint)
    ->ArgName("MiB")
    ->Arg(1024)
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
// Issue 24's stencil grid: a 2 GiB array (6 GiB of memory and files in all, 7 with the page
// cache's copy of a /tmp file being read); run it alone (--benchmark_filter=.../MiB:2048).
BENCHMARK(dist_array_file_checkpoint)
    ->ArgName("MiB")
    ->Arg(2048)
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
