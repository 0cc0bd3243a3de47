// rput/rget through global pointers (communication.hpp): single values, spans, both
// completions of a put, strided and datatype layouts, blocking forms, many puts in flight
// completed by quiet(), fence() ordering a flag after data, value puts and atomics waking the
// rank that waits for them, and bad input rejected with the target unchanged. Every rank talks to
// its neighbours, so at 1 rank the paths are this rank's own memory, on shm node peers' memory by
// load/store, and in the .mpi variant the window's network path.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <span>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "pgas_test.hpp"

namespace oneside::test {
namespace {

class Communication : public PgasTest {};

TEST_F(Communication, ValuesGoToEveryRankAndComeBack) {
  const auto n = static_cast<std::size_t>(size());
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(n);
  std::fill_n(mine.local(), n, -1);
  const auto all = everyones(mine);
  barrier(world());
  // Slot `rank()` of every rank gets rank() * 1000 + target.
  std::vector<future<>> puts;
  for (rank_t r = 0; r < size(); ++r) {
    puts.push_back(
        rput<std::int64_t>(rank() * 1000 + r, all[static_cast<std::size_t>(r)] + rank()));
  }
  for (auto& f : puts) f.wait();
  barrier(world());
  for (rank_t r = 0; r < size(); ++r) EXPECT_EQ(mine.local()[r], r * 1000 + rank()) << "from " << r;
  // Read them back from every rank: slot r of rank t holds r * 1000 + t.
  for (rank_t t = 0; t < size(); ++t) {
    future<std::int64_t> f = rget(all[static_cast<std::size_t>(t)] + rank());
    EXPECT_EQ(f.wait(), rank() * 1000 + t);
    EXPECT_EQ(get(global_ptr<const std::int64_t>(all[static_cast<std::size_t>(t)] + left())),
              left() * 1000 + t);
  }
  barrier(world());
  deallocate(mine);
}

TEST_F(Communication, SpansWithSourceAndRemoteCompletion) {
  constexpr std::size_t n = (1U << 20) / sizeof(double);  // 1 MiB
  global_ptr<double> mine = allocate<double>(n);
  std::fill_n(mine.local(), n, 0.0);
  const auto all = everyones(mine);
  barrier(world());
  std::vector<double> src(n);
  std::iota(src.begin(), src.end(), rank() * 1e7);
  put_futures f =
      rput(std::span<const double>(src), all[static_cast<std::size_t>(right())], source_and_remote);
  f.source.wait();
  // The source may change now: what arrives is what was there at the put.
  std::fill(src.begin(), src.end(), -5.0);
  f.remote.wait();
  EXPECT_TRUE(f.source.is_ready());
  barrier(world());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    wrong += mine.local()[i] == left() * 1e7 + static_cast<double>(i) ? 0U : 1U;
  }
  EXPECT_EQ(wrong, 0U);
  // A span get of the right neighbour's block, which this rank wrote: its original values.
  std::vector<double> back(n, -1.0);
  rget(global_ptr<const double>(all[static_cast<std::size_t>(right())]), std::span<double>(back))
      .wait();
  wrong = 0;
  for (std::size_t i = 0; i < n; ++i)
    wrong += back[i] == rank() * 1e7 + static_cast<double>(i) ? 0U : 1U;
  EXPECT_EQ(wrong, 0U);
  // Empty spans are fine and move nothing.
  rput(std::span<const double>(), all[static_cast<std::size_t>(right())]).wait();
  barrier(world());
  deallocate(mine);
}

TEST_F(Communication, StridedAndDatatypeLayouts) {
  // A 16 x 16 row-major matrix per rank; column 3 of this rank's source goes to column 5 of the
  // right neighbour's matrix, then comes back into a packed vector by rget_strided.
  constexpr int dim = 16;
  global_ptr<int> mat = allocate<int>(dim * dim);
  std::fill_n(mat.local(), dim * dim, 0);
  const auto all = everyones(mat);
  barrier(world());
  std::vector<int> src(std::size_t{dim} * dim);
  for (int i = 0; i < dim * dim; ++i) src[static_cast<std::size_t>(i)] = rank() * 10000 + i;
  rput_strided(src.data() + 3, dim, all[static_cast<std::size_t>(right())] + 5, dim, 1, dim).wait();
  barrier(world());
  for (int row = 0; row < dim; ++row) {
    for (int col = 0; col < dim; ++col) {
      const int expect = col == 5 ? left() * 10000 + row * dim + 3 : 0;
      EXPECT_EQ(mat.local()[row * dim + col], expect) << row << "," << col;
    }
  }
  std::vector<int> column(dim, -1);
  rget_strided(global_ptr<const int>(all[static_cast<std::size_t>(right())] + 5), dim,
               column.data(), 1, 1, dim)
      .wait();
  for (int row = 0; row < dim; ++row)
    EXPECT_EQ(column[static_cast<std::size_t>(row)], rank() * 10000 + row * dim + 3);
  barrier(world());
  // The datatype form: a 4 x 4 block (subarray) of the source into rows 8..11, cols 8..11.
  const std::vector<count_t> sizes{dim, dim}, sub{4, 4}, at_src{0, 0}, at_dst{8, 8};
  const datatype s =
      datatype::subarray(sizes, sub, at_src, datatype::array_order::c, datatype::of<int>());
  const datatype d =
      datatype::subarray(sizes, sub, at_dst, datatype::array_order::c, datatype::of<int>());
  rput(src.data(), 1, s, all[static_cast<std::size_t>(right())], 1, d).wait();
  barrier(world());
  for (int row = 8; row < 12; ++row) {
    for (int col = 8; col < 12; ++col) {
      EXPECT_EQ(mat.local()[row * dim + col], left() * 10000 + (row - 8) * dim + (col - 8));
    }
  }
  std::vector<int> block(16, -1);
  rget(global_ptr<const int>(all[static_cast<std::size_t>(right())]), 1, d, block.data(), 16,
       datatype::of<int>())
      .wait();
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(block[static_cast<std::size_t>(i)], rank() * 10000 + (i / 4) * dim + i % 4);
  barrier(world());
  deallocate(mat);
}

TEST_F(Communication, QuietCompletesPutsWhoseFuturesWereDropped) {
  constexpr int n = 200;
  global_ptr<int> mine = allocate<int>(n);
  std::fill_n(mine.local(), n, 0);
  const auto all = everyones(mine);
  barrier(world());
  for (int i = 0; i < n; ++i)
    (void)rput(rank() * n + i, all[static_cast<std::size_t>(right())] + i);
  quiet();
  barrier(world());
  for (int i = 0; i < n; ++i) EXPECT_EQ(mine.local()[i], left() * n + i);
  barrier(world());
  deallocate(mine);
}

TEST_F(Communication, FenceOrdersDataBeforeTheFlag) {
  constexpr int n = 512;
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(n + 1);
  std::fill_n(mine.local(), n + 1, 0);
  const auto all = everyones(mine);
  barrier(world());
  std::vector<std::int64_t> data(n);
  for (int round = 1; round <= 5; ++round) {
    std::fill(data.begin(), data.end(), round * 100 + rank());
    const global_ptr<std::int64_t> dst = all[static_cast<std::size_t>(right())];
    (void)rput(std::span<const std::int64_t>(data), dst);
    fence();
    put<std::int64_t>(round, dst + n);  // the flag, after the data
    wait_until(mine.local() + n, cmp::ge, std::int64_t{round});
    EXPECT_TRUE(std::all_of(mine.local(), mine.local() + n,
                            [&](std::int64_t v) { return v == round * 100 + left(); }))
        << "round " << round;
    quiet();
    barrier(world());  // the source is reused next round
  }
  deallocate(mine);
}

// Value puts (blocking, and with the future dropped) and atomics to a node peer wake that
// peer's threads asleep in wait_until: a token passes round the ring of ranks.
TEST_F(Communication, AValuePutWakesTheRankWaitingForIt) {
  constexpr std::int64_t rounds = 200;
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(1);
  mine.local()[0] = 0;
  const auto all = everyones(mine);
  barrier(world());
  const global_ptr<std::int64_t> theirs = all[static_cast<std::size_t>(right())];
  for (std::int64_t i = 1; i <= rounds; ++i) {
    // Rank 0 starts each round, every other rank passes on what it got.
    if (rank() != 0) wait_until(mine.local(), cmp::ge, i);
    if (i % 3 == 0) {
      put(i, theirs);
    } else if (i % 3 == 1) {
      (void)rput(i, theirs);
    } else {
      (void)exchange(theirs, i).wait();
    }
    if (rank() == 0) wait_until(mine.local(), cmp::ge, i);
  }
  EXPECT_EQ(mine.local()[0], rounds);
  barrier(world());
  deallocate(mine);
}

// The same with the waiter deep asleep: its sleeps have grown to about a second (the job
// runs with ONESIDE_WAIT_SLEEP_MAX_US of a minute: pgas.communication.np3.sleepy, and
// .sleepy_fenced with ONESIDE_WAIT_MEMBARRIER=0), so a
// wake-up the put failed to ring would show as a wait ending long after the put. The put
// carries its own time (CLOCK_MONOTONIC, one clock for every process of the machine).
TEST_F(Communication, ADeepSleeperIsWokenByThePutNotByItsTimeout) {
  const char* sleep_max = std::getenv("ONESIDE_WAIT_SLEEP_MAX_US");
  if (sleep_max == nullptr || std::atol(sleep_max) < 10'000'000 || size() < 2) {
    GTEST_SKIP() << "runs in pgas.communication.np3.sleepy (sleeps of up to a minute)";
  }
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  constexpr int kinds = 3;  // put, rput with the future dropped, exchange
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(kinds);
  std::fill_n(mine.local(), kinds, 0);
  const auto all = everyones(mine);
  barrier(world());
  const global_ptr<std::int64_t> words = all[1];
  for (int kind = 0; kind < kinds; ++kind) {
    barrier(world());
    if (rank() == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(2));  // rank 1 sleeps deeper and deeper
      const std::int64_t stamp = now_ns();
      if (kind == 0) {
        put(stamp, words + kind);
      } else if (kind == 1) {
        (void)rput(stamp, words + kind);
      } else {
        (void)exchange(words + kind, stamp).wait();
      }
    } else if (rank() == 1) {
      wait_until(mine.local() + kind, cmp::ne, std::int64_t{0});
      const std::int64_t late_ms = (now_ns() - mine.local()[kind]) / 1'000'000;
      EXPECT_LT(late_ms, 400) << "kind " << kind
                              << ": the waiter woke long after the put (its own timeout?)";
    }
  }
  barrier(world());
  deallocate(mine);
}

TEST_F(Communication, ContinuationsRunWhenDataArrives) {
  global_ptr<int> mine = allocate<int>(2);  // [0] is read by the neighbours, [1] written
  mine.local()[0] = rank() + 7;
  const auto all = everyones(mine);
  barrier(world());
  future<int> doubled =
      rget(global_ptr<const int>(all[static_cast<std::size_t>(right())])).then([](int v) {
        return 2 * v;
      });
  future<> both = when_all(rget(global_ptr<const int>(all[static_cast<std::size_t>(left())])),
                           rput(1, all[static_cast<std::size_t>(right())] + 1))
                      .then([](int) {});
  EXPECT_EQ(doubled.wait(), 2 * (right() + 7));
  both.wait();
  barrier(world());
  deallocate(mine);
}

TEST_F(Communication, BadPointersAreRejectedAndChangeNothing) {
  global_ptr<int> mine = allocate<int>(4);
  std::fill_n(mine.local(), 4, 11);
  const auto all = everyones(mine);
  barrier(world());
  const global_ptr<int> target = all[static_cast<std::size_t>(right())];
  expect_error(error_class::arg, "rput", [&] { (void)rput(5, global_ptr<int>()); });
  expect_error(error_class::arg, "rget", [&] { (void)rget(global_ptr<int>()); });
  expect_error(error_class::rank, "rput",
               [&] { (void)rput(5, global_ptr<int>(size() + 3, target.address())); });
  std::vector<int> big(3);
  expect_error(error_class::rank, "rget", [&] {
    (void)rget(global_ptr<const int>(global_ptr<int>(-2, target.address())), std::span<int>(big));
  });
  // Memory of another rank that is not in its heap (in the .mpi variant and between nodes:
  // the window refuses it; node peers' non-heap memory is not reachable either).
  if (size() > 1) {
    const global_ptr<int> outside(right(), 4096);
    expect_error(error_class::rma_range, "rput", [&] { (void)rput(5, outside); });
    expect_error(error_class::rma_range, "rget", [&] { (void)rget(outside); });
  }
  // The same on this rank itself: an unmapped address (this used to write through it and
  // crash) and memory that is mapped but not exposed (a local variable) are refused alike,
  // and nothing is written.
  int on_stack = 21;
  const global_ptr<int> unmapped(rank(), 4096);
  const global_ptr<int> not_exposed(rank(), reinterpret_cast<std::uintptr_t>(&on_stack));
  expect_error(error_class::rma_range, "rput", [&] { (void)rput(5, unmapped); });
  expect_error(error_class::rma_range, "rput", [&] { (void)rput(5, not_exposed); });
  expect_error(error_class::rma_range, "put", [&] { put(5, not_exposed); });
  expect_error(error_class::rma_range, "rget", [&] { (void)rget(unmapped); });
  std::vector<int> three(3, 9);
  expect_error(error_class::rma_range, "rput",
               [&] { (void)rput(std::span<const int>(three), not_exposed); });
  EXPECT_EQ(on_stack, 21) << "a refused put wrote this rank's memory";
  barrier(world());
  EXPECT_TRUE(std::all_of(mine.local(), mine.local() + 4, [](int v) { return v == 11; }));
  barrier(world());
  deallocate(mine);
}

}  // namespace
}  // namespace oneside::test
