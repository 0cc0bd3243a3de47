// Put-with-signal and waiting on local words (signal.hpp): the data is in place when the
// signal is seen, signal adds from every rank sum exactly, the any/all/some forms and their
// test_ twins report the right words, and bad words are rejected before anything happens.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "pgas_test.hpp"

namespace oneside::test {
namespace {

class Signal : public PgasTest {};

// A rank's landing zone: data words and one signal word after them.
struct zone {
  static constexpr std::size_t words = 4096;  // 32 KiB of data
  global_ptr<std::int64_t> data;
  global_ptr<std::uint64_t> signal;
};

zone make_zone() {
  zone z;
  z.data = allocate<std::int64_t>(zone::words);
  z.signal = allocate<std::uint64_t>(1);
  std::fill_n(z.data.local(), zone::words, 0);
  *z.signal.local() = 0;
  return z;
}

TEST_F(Signal, DataIsInPlaceWhenTheSignalIsSeen) {
  zone z = make_zone();
  const auto data = everyones(z.data);
  const auto signal = everyones(z.signal);
  barrier(world());
  std::vector<std::int64_t> src(zone::words);
  for (std::uint64_t round = 1; round <= 20; ++round) {
    std::fill(src.begin(), src.end(), static_cast<std::int64_t>(round) * 1000 + rank());
    future<> f = rput(std::span<const std::int64_t>(src), data[static_cast<std::size_t>(right())],
                      signal[static_cast<std::size_t>(right())], round);
    const std::uint64_t seen = signal_wait_until(z.signal.local(), cmp::eq, round);
    EXPECT_EQ(seen, round);
    const auto expect = static_cast<std::int64_t>(round) * 1000 + left();
    EXPECT_TRUE(std::all_of(z.data.local(), z.data.local() + zone::words,
                            [&](std::int64_t v) { return v == expect; }))
        << "round " << round;
    f.wait();
    barrier(world());  // nobody overwrites a zone before its owner has checked it
  }
  deallocate(z.data);
  deallocate(z.signal);
}

TEST_F(Signal, SignalAddsFromEveryRankSumExactly) {
  // Every rank puts its slot of rank 0's array and adds 1 to rank 0's signal, many times.
  constexpr int rounds = 50;
  zone z = make_zone();
  const auto data = everyones(z.data);
  const auto signal = everyones(z.signal);
  barrier(world());
  for (int i = 0; i < rounds; ++i) {
    const std::int64_t v = rank() * 100000 + i;
    rput(v, data[0] + rank(), signal[0], 1, signal_op::add).wait();
  }
  if (rank() == 0) {
    const auto all = static_cast<std::uint64_t>(rounds * size());
    wait_until(z.signal.local(), cmp::ge, all);
    EXPECT_EQ(signal_fetch(z.signal.local()), all);
    for (rank_t r = 0; r < size(); ++r) {
      EXPECT_EQ(z.data.local()[r], r * 100000 + rounds - 1) << "the last put of rank " << r;
    }
  }
  barrier(world());
  deallocate(z.data);
  deallocate(z.signal);
}

TEST_F(Signal, AnyAllAndSomeForms) {
  // Rank 0 owns one word per rank; every rank sets its own word with a single-value put.
  const auto n = static_cast<std::size_t>(size());
  global_ptr<std::uint64_t> words = allocate<std::uint64_t>(n);
  std::fill_n(words.local(), n, 0);
  const auto all = everyones(words);
  barrier(world());
  if (rank() == 0) {
    const std::span<const std::uint64_t> w(words.local(), n);
    EXPECT_EQ(test_until_any(w, cmp::ne, std::uint64_t{0}), n) << "nothing set yet";
    std::vector<std::size_t> idx(n);
    EXPECT_EQ(test_until_some(w, std::span<std::size_t>(idx), cmp::ne, std::uint64_t{0}), 0U);
    EXPECT_FALSE(test_until_all(w, cmp::ne, std::uint64_t{0}));
    barrier(world());  // the others may set their words now
    put<std::uint64_t>(1, all[0]);
    const std::size_t first = wait_until_any(w, cmp::ne, std::uint64_t{0});
    EXPECT_LT(first, n);
    EXPECT_NE(w[first], 0U);
    const std::size_t some =
        wait_until_some(w, std::span<std::size_t>(idx), cmp::ne, std::uint64_t{0});
    EXPECT_GE(some, 1U);
    for (std::size_t i = 0; i < some; ++i) EXPECT_EQ(w[idx[i]], idx[i] + 1);
    wait_until_all(w, cmp::eq, std::uint64_t{0}, std::vector<int>(n, 1));  // all excluded: at once
    for (std::size_t i = 0; i < n; ++i) {
      // Exclude every word but i: wait for it alone.
      std::vector<int> status(n, 1);
      status[i] = 0;
      EXPECT_EQ(wait_until_any(w, cmp::gt, std::uint64_t{0}, status), i);
    }
    wait_until_all(w, cmp::gt, std::uint64_t{0});
    EXPECT_TRUE(test_until_all(w, cmp::ge, std::uint64_t{1}));
    EXPECT_EQ(test_until_some(w, std::span<std::size_t>(idx), cmp::gt, std::uint64_t{0}), n);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(w[i], i + 1);
    EXPECT_TRUE(test_until(&w[0], cmp::eq, std::uint64_t{1}));
    EXPECT_FALSE(test_until(&w[0], cmp::lt, std::uint64_t{1}));
  } else {
    barrier(world());
    put(static_cast<std::uint64_t>(rank() + 1), all[0] + rank());
  }
  barrier(world());
  deallocate(words);
}

TEST_F(Signal, WaitUntilThroughAGlobalPointer) {
  global_ptr<std::int32_t> flag = allocate<std::int32_t>(1);
  *flag.local() = 0;
  const auto all = everyones(flag);
  barrier(world());
  put(std::int32_t{rank() + 1}, all[static_cast<std::size_t>(right())]);
  wait_until(flag, cmp::eq, std::int32_t{left() + 1});
  EXPECT_EQ(*flag.local(), left() + 1);
  barrier(world());
  deallocate(flag);
}

TEST_F(Signal, BadWordsAreRejected) {
  zone z = make_zone();
  const auto signal = everyones(z.signal);
  const auto data = everyones(z.data);
  barrier(world());
  std::vector<std::int64_t> src(4, 9);
  const auto misaligned =
      global_ptr<std::uint64_t>(signal[static_cast<std::size_t>(right())].where(),
                                signal[static_cast<std::size_t>(right())].address() + 1);
  expect_error(error_class::arg, "rput", [&] {
    (void)rput(std::span<const std::int64_t>(src), data[static_cast<std::size_t>(right())],
               misaligned, 1);
  });
  expect_error(error_class::arg, "rput", [&] {
    (void)rput(std::span<const std::int64_t>(src), data[static_cast<std::size_t>(right())],
               global_ptr<std::uint64_t>(), 1);
  });
  expect_error(error_class::rank, "rput", [&] {
    (void)rput(std::span<const std::int64_t>(src), data[static_cast<std::size_t>(right())],
               global_ptr<std::uint64_t>(size(), z.signal.address()), 1);
  });
  const std::uint64_t* null_word = nullptr;
  expect_error(error_class::arg, "wait_until",
               [&] { wait_until(null_word, cmp::eq, std::uint64_t{0}); });
  expect_error(error_class::arg, "signal_fetch", [&] { (void)signal_fetch(null_word); });
  const auto* odd = reinterpret_cast<const std::uint64_t*>(
      reinterpret_cast<const std::byte*>(z.data.local()) + 4);
  expect_error(error_class::arg, "test_until",
               [&] { (void)test_until(odd, cmp::eq, std::uint64_t{0}); });
  const std::span<const std::uint64_t> one(z.signal.local(), 1);
  expect_error(error_class::arg, "wait_until_any", [&] {
    (void)wait_until_any(one, cmp::eq, std::uint64_t{0}, std::vector<int>(2, 0));
  });
  std::vector<std::size_t> no_room;
  expect_error(error_class::arg, "test_until_some", [&] {
    (void)test_until_some(one, std::span<std::size_t>(no_room), cmp::eq, std::uint64_t{0});
  });
  barrier(world());
  // Nothing landed anywhere.
  EXPECT_EQ(*z.signal.local(), 0U);
  EXPECT_TRUE(std::all_of(z.data.local(), z.data.local() + zone::words,
                          [](std::int64_t v) { return v == 0; }));
  barrier(world());
  deallocate(z.data);
  deallocate(z.signal);
}

}  // namespace
}  // namespace oneside::test
