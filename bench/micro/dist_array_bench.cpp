// dist_array (pgas/dist_array.hpp) next to its baselines, in one run (STYLE.md R12):
//
//   dist_array_triad/view/N     a(i, j) = b(i, j) + s * c(i, j) over three 2-D dist_arrays'
//                               local views (N elements per rank, rows of 1024), every rank
//   dist_array_triad/raw/N      the same loop on raw pointers to the same memory (flat)
//   dist_array_region/get/1048576      rank 0 gets a 1 MiB region that rank 1 owns (1-D,
//                                      block, contiguous in rank 1's block), blocking
//   dist_array_region/put/1048576      rank 0 puts it, blocking
//   dist_array_region/get_columns/1048576
//                               rank 0 gets a column block of a 2-D (none, block) array:
//                               1024 rows of 1 KiB, 4 KiB apart in rank 1's block
//   dist_array_region/memcpy/1048576   memcpy between private page-aligned buffers
//   dist_array_halo/exchange/4000      halo_exchange() of a (ranks x 256) x 4000 array of
//                               doubles, rows in blocks, halo 2 (not periodic): 2 rows of
//                               4000 to each neighbour (put-with-signal, the library's)
//   dist_array_halo/pscw/4000   the same rows moved with a PSCW epoch of an rma::window of
//                               the same layout: post, start, a put per row, complete, wait
//
// Triad times are per element-update (a batch is 16 sweeps) as the slowest rank's; region
// times per transfer (16 per batch), rank 0 working while the others wait in the batch's
// closing reduction. On the shm transport rank 1 is a node peer, so a region get is a copy out
// of its mapped block: the ratio to memcpy is the price of the pattern, the datatypes and the
// transfer path. Results are checked after the measurement; a wrong one reports an error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;
using oneside::dist_array;
using idx1 = std::array<std::size_t, 1>;
using idx2 = std::array<std::size_t, 2>;

constexpr std::int64_t mib = std::int64_t{1} << 20;
constexpr std::size_t row = 1024;  // elements per row of the triad's arrays
constexpr std::int64_t sweeps = 16;
constexpr double scalar = 3.0;

bool everywhere(bool ok) {
  return oneside::allreduce(oneside::world(), ok ? 1 : 0, oneside::op::min) == 1;
}

// ---- triad --------------------------------------------------------------------------------

// Three arrays of rows x 1024 doubles per rank, b = 1 and c = 2 everywhere.
struct triad_arrays {
  explicit triad_arrays(std::size_t per_rank)
      : rows(std::max<std::size_t>(per_rank / row, 1) *
             static_cast<std::size_t>(oneside::world().size())),
        a(oneside::world(), {rows, row}, {oneside::dist::block, oneside::dist::none}, "a"),
        b(oneside::world(), {rows, row}, {oneside::dist::block, oneside::dist::none}, "b"),
        c(oneside::world(), {rows, row}, {oneside::dist::block, oneside::dist::none}, "c") {
    a.for_each_local([](double& x) { x = 0.0; });
    b.for_each_local([](double& x) { x = 1.0; });
    c.for_each_local([](double& x) { x = 2.0; });
  }
  bool correct() {
    const auto v = a.local();
    return std::all_of(v.begin(), v.end(), [](double x) { return x == 1.0 + scalar * 2.0; });
  }
  std::size_t rows;
  dist_array<double, 2> a;
  dist_array<double, 2> b;
  dist_array<double, 2> c;
};

void triad_view(benchmark::State& state) {
  triad_arrays t(static_cast<std::size_t>(state.range(0)));
  const oneside::local_view<double, 2> a = t.a.local();
  const oneside::local_view<double, 2> b = t.b.local();
  const oneside::local_view<double, 2> c = t.c.local();
  const std::size_t rows = a.extent(0);
  const std::size_t cols = a.extent(1);
  const auto elements = static_cast<std::int64_t>(a.size());
  bench::measure(state, sweeps * elements, [&](std::int64_t k) {
    for (std::int64_t s = 0; s < k / elements; ++s) {
      for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < cols; ++j) a(i, j) = b(i, j) + scalar * c(i, j);
      }
      benchmark::ClobberMemory();
    }
  });
  if (!everywhere(t.correct())) state.SkipWithError("triad over views: wrong values");
}

void triad_raw(benchmark::State& state) {
  triad_arrays t(static_cast<std::size_t>(state.range(0)));
  double* a = t.a.local().data();
  const double* b = t.b.local().data();
  const double* c = t.c.local().data();
  const std::size_t n = t.a.local().size();
  const auto elements = static_cast<std::int64_t>(n);
  bench::measure(state, sweeps * elements, [&](std::int64_t k) {
    for (std::int64_t s = 0; s < k / elements; ++s) {
      for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
      benchmark::ClobberMemory();
    }
  });
  if (!everywhere(t.correct())) state.SkipWithError("triad over raw pointers: wrong values");
}

// ---- halo exchange ------------------------------------------------------------------------

constexpr std::size_t halo_rows = 256;  // per rank
constexpr std::size_t halo_width = 2;

// The value of global cell (i, j).
double cell(std::size_t i, std::size_t j, std::size_t cols) {
  return static_cast<double>(i * cols + j);
}

// Whether the halo rows of this rank's padded block (row stride cols + 2w) hold the
// neighbours' cells.
bool halo_rows_right(const double* block, std::size_t first_row, std::size_t rows, std::size_t cols,
                     std::size_t total_rows) {
  const std::size_t stride = cols + 2 * halo_width;
  bool ok = true;
  for (std::size_t r = 0; r < rows + 2 * halo_width; ++r) {
    const std::size_t g = first_row + r;  // + w - w
    if (g < halo_width || g - halo_width >= total_rows) continue;
    for (std::size_t j = 0; j < cols; ++j) {
      ok = ok && block[r * stride + halo_width + j] == cell(g - halo_width, j, cols);
    }
  }
  return ok;
}

void halo_exchange(benchmark::State& state) {
  const auto cols = static_cast<std::size_t>(state.range(0));
  const auto ranks = static_cast<std::size_t>(oneside::world().size());
  dist_array<double, 2> a(oneside::world(), {halo_rows * ranks, cols},
                          {oneside::dist::block, oneside::dist::none},
                          oneside::halo<2>({halo_width, halo_width}), "halo");
  a.transform_local([&](const idx2& g, double) { return cell(g[0], g[1], cols); });
  a.halo_exchange();
  bench::measure(state, 64, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) a.halo_exchange();
  });
  const bool ok = halo_rows_right(a.local_with_halo().data(), a.global_index({0, 0})[0],
                                  a.local_extents()[0], cols, halo_rows * ranks);
  if (!everywhere(ok)) state.SkipWithError("halo exchange: wrong values");
}

void halo_pscw(benchmark::State& state) {
  const auto cols = static_cast<std::size_t>(state.range(0));
  const oneside::team& world = oneside::world();
  const auto ranks = static_cast<std::size_t>(world.size());
  const auto me = static_cast<std::size_t>(world.rank());
  const std::size_t stride = cols + 2 * halo_width;
  const std::size_t padded_rows = halo_rows + 2 * halo_width;
  oneside::rma::window w =
      oneside::rma::window::allocate(world, padded_rows * stride * sizeof(double), sizeof(double));
  auto* block = static_cast<double*>(w.base());
  std::fill(block, block + padded_rows * stride, -1.0);
  for (std::size_t r = 0; r < halo_rows; ++r) {
    for (std::size_t j = 0; j < cols; ++j) {
      block[(r + halo_width) * stride + halo_width + j] = cell(me * halo_rows + r, j, cols);
    }
  }
  std::vector<oneside::rank_t> nb;
  if (me > 0) nb.push_back(static_cast<oneside::rank_t>(me - 1));
  if (me + 1 < ranks) nb.push_back(static_cast<oneside::rank_t>(me + 1));
  const oneside::group neighbours(nb);
  const auto exchange = [&] {
    w.post(neighbours);
    w.start(neighbours);
    for (std::size_t r = 0; r < halo_width; ++r) {
      const std::span<const double> top(block + (halo_width + r) * stride + halo_width, cols);
      const std::span<const double> bottom(block + (halo_rows + r) * stride + halo_width, cols);
      if (me > 0) {  // my first rows: the upper neighbour's lower halo
        w.put(top, static_cast<oneside::rank_t>(me - 1),
              static_cast<std::ptrdiff_t>((halo_rows + halo_width + r) * stride + halo_width));
      }
      if (me + 1 < ranks) {  // my last rows: the lower neighbour's upper halo
        w.put(bottom, static_cast<oneside::rank_t>(me + 1),
              static_cast<std::ptrdiff_t>(r * stride + halo_width));
      }
    }
    w.complete();
    w.wait();
  };
  exchange();
  bench::measure(state, 64, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) exchange();
  });
  const bool ok = halo_rows_right(block, me * halo_rows, halo_rows, cols, halo_rows * ranks);
  w.free();
  if (!everywhere(ok)) state.SkipWithError("pscw halo exchange: wrong values");
}

// ---- regions ------------------------------------------------------------------------------

bool has_peer(benchmark::State& state) {
  if (oneside::world().size() >= 2) return true;
  state.SkipWithError("needs at least 2 ranks (rank 0 to rank 1)");
  return false;
}

// Rank 0 runs `batch`, the others wait; a few transfers first.
template <class Batch>
void run(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  const bool origin = oneside::world().rank() == 0;
  if (origin) batch(4);
  oneside::barrier(oneside::world());
  bench::measure(state, ops_per_batch, [&](std::int64_t k) {
    if (origin) batch(k);
  });
}

// A 1-D block array of `bytes` per rank; the region is rank 1's whole block, [n, 2n).
void region_contiguous(benchmark::State& state, bool put) {
  if (!has_peer(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0)) / sizeof(double);
  const auto ranks = static_cast<std::size_t>(oneside::world().size());
  dist_array<double, 1> a(oneside::world(), {n * ranks}, {oneside::dist::block}, "region");
  a.transform_local([](const idx1& g, double) { return static_cast<double>(g[0]); });
  oneside::barrier(oneside::world());
  bench::page_buffer buffer(n * sizeof(double));
  const std::span<double> buf(reinterpret_cast<double*>(buffer.data()), n);
  const oneside::region<1> mine{{n}, {n}};  // rank 1's block
  if (put)
    std::transform(buf.begin(), buf.end(), buf.begin(),
                   [n, i = 0.0](double) mutable { return static_cast<double>(n) + i++; });
  run(state, bench::transfer_batch(state.range(0)), [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) {
      if (put) {
        a.put(mine, buf);
      } else {
        a.get(mine, buf);
      }
    }
  });
  oneside::barrier(oneside::world());
  bool ok = true;
  if (oneside::world().rank() == 0) {
    for (std::size_t i = 0; i < n; ++i) ok = ok && buf[i] == static_cast<double>(n + i);
  }
  if (oneside::world().rank() == 1) {
    std::size_t i = 0;
    for (const double x : a.local()) ok = ok && x == static_cast<double>(n + i++);
  }
  if (!everywhere(ok)) state.SkipWithError("region transfer: wrong values");
  bench::count_bytes(state, state.range(0));
}

// A (1024 rows) x (ranks x 512 columns) array distributed by columns; the region is 128 of
// rank 1's 512 columns over every row: 1024 runs of 1 KiB.
void region_columns(benchmark::State& state) {
  if (!has_peer(state)) return;
  const std::size_t rows = 1024;
  const std::size_t cols = static_cast<std::size_t>(state.range(0)) / sizeof(double) / rows;
  const std::size_t per_rank = 4 * cols;
  const auto ranks = static_cast<std::size_t>(oneside::world().size());
  dist_array<double, 2> a(oneside::world(), {rows, per_rank * ranks},
                          {oneside::dist::none, oneside::dist::block}, "columns");
  a.transform_local(
      [&](const idx2& g, double) { return static_cast<double>(g[0] * per_rank * ranks + g[1]); });
  oneside::barrier(oneside::world());
  bench::page_buffer buffer(rows * cols * sizeof(double));
  const std::span<double> buf(reinterpret_cast<double*>(buffer.data()), rows * cols);
  const oneside::region<2> box{{0, per_rank}, {rows, cols}};
  run(state, bench::transfer_batch(state.range(0)), [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i) a.get(box, buf);
  });
  bool ok = true;
  if (oneside::world().rank() == 0) {
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        ok = ok && buf[i * cols + j] == static_cast<double>(i * per_rank * ranks + per_rank + j);
      }
    }
  }
  if (!everywhere(ok)) state.SkipWithError("column region get: wrong values");
  bench::count_bytes(state, state.range(0));
}

void region_memcpy(benchmark::State& state) {
  const bench::copy_baseline copy(static_cast<std::size_t>(state.range(0)));
  run(state, bench::transfer_batch(state.range(0)), [&](std::int64_t k) { copy(k); });
  bench::count_bytes(state, state.range(0));
}

template <class Fn>
benchmark::internal::Benchmark* add(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->UseManualTime();
}

bool register_all() {
  const std::int64_t triad_elements = std::int64_t{1} << 20;  // 8 MiB per array and rank
  add("dist_array_triad/view", triad_view)->Arg(triad_elements);
  add("dist_array_triad/raw", triad_raw)->Arg(triad_elements);
  add("dist_array_region/get", [](benchmark::State& s) { region_contiguous(s, false); })->Arg(mib);
  add("dist_array_region/put", [](benchmark::State& s) { region_contiguous(s, true); })->Arg(mib);
  add("dist_array_region/get_columns", region_columns)->Arg(mib);
  add("dist_array_region/memcpy", region_memcpy)->Arg(mib);
  add("dist_array_halo/exchange", halo_exchange)->Arg(4000);
  add("dist_array_halo/pscw", halo_pscw)->Arg(4000);
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
