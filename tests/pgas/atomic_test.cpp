// Remote atomics (atomic.hpp): every call on every element type with exact results, on a
// neighbour's word and on this rank's own; concurrent updates of one word from every rank and
// several threads with exact totals (no lost update on any path); a rank sleeping on its word
// is woken by others' atomics; bad pointers rejected with the target unchanged; bitwise calls
// on floating point and writes through const pointers do not compile.
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/pgas/atomic.hpp>

#include "expect_error.hpp"
#include "pgas_test.hpp"

namespace oneside::test {
namespace {

// ---- what must not compile ---------------------------------------------------------------

template <class T>
concept has_fetch_and = requires(global_ptr<T> p, T v) {
  fetch_and(p, v);
};
template <class T>
concept has_atomic_xor = requires(global_ptr<T> p, T v) {
  atomic_xor(p, v);
};
template <class T>
concept has_fetch_add = requires(global_ptr<T> p, T v) {
  fetch_add(p, v);
};
template <class T>
concept has_load = requires(global_ptr<T> p) {
  load(p);
};

static_assert(has_fetch_and<std::int32_t> && has_fetch_and<unsigned long long>);
static_assert(!has_fetch_and<float> && !has_fetch_and<double>, "bitwise atomics are integer-only");
static_assert(!has_atomic_xor<double>);
static_assert(has_fetch_add<float> && has_fetch_add<double> && has_fetch_add<long long>);
static_assert(!has_fetch_add<std::int16_t> && !has_fetch_add<char>, "only 4- and 8-byte words");
static_assert(!has_fetch_add<const std::int64_t>, "no update through a const pointer");
static_assert(has_load<const std::int64_t> && has_load<double>);

// ---- helpers -----------------------------------------------------------------------------

class Atomic : public PgasTest {};

template <class T>
global_ptr<T> broadcast_ptr(global_ptr<T> p, rank_t root) {
  const auto addr = broadcast(world(), static_cast<std::uint64_t>(p.address()), root);
  return global_ptr<T>(root, static_cast<std::uintptr_t>(addr));
}

template <class T>
T v(long long x) {
  return static_cast<T>(x);
}

// ---- every call, every type --------------------------------------------------------------

template <class T>
class AtomicTyped : public Atomic {};
using AtomicTypes = ::testing::Types<std::int32_t, std::uint32_t, std::int64_t, std::uint64_t,
                                     long long, unsigned long long, float, double>;
TYPED_TEST_SUITE(AtomicTyped, AtomicTypes);

// The whole sequence on one word that only this rank updates. Returns the final value.
template <class T>
T run_sequence(global_ptr<T> p) {
  store(p, v<T>(10)).wait();
  EXPECT_EQ(load(p).wait(), v<T>(10));
  EXPECT_EQ(load(global_ptr<const T>(p)).wait(), v<T>(10));
  EXPECT_EQ(fetch_add(p, v<T>(5)).wait(), v<T>(10));
  EXPECT_EQ(fetch_sub(p, v<T>(3)).wait(), v<T>(15));
  EXPECT_EQ(fetch_min(p, v<T>(7)).wait(), v<T>(12));
  EXPECT_EQ(fetch_min(p, v<T>(20)).wait(), v<T>(7));
  EXPECT_EQ(fetch_max(p, v<T>(30)).wait(), v<T>(7));
  EXPECT_EQ(fetch_max(p, v<T>(1)).wait(), v<T>(30));
  EXPECT_EQ(exchange(p, v<T>(4)).wait(), v<T>(30));
  EXPECT_EQ(compare_exchange(p, v<T>(4), v<T>(9)).wait(), v<T>(4)) << "matches: swapped";
  EXPECT_EQ(compare_exchange(p, v<T>(4), v<T>(100)).wait(), v<T>(9)) << "no match: kept";
  EXPECT_EQ(load(p).wait(), v<T>(9));
  atomic_add(p, v<T>(2)).wait();
  EXPECT_EQ(load(p).wait(), v<T>(11));
  atomic_sub(p, v<T>(1)).wait();
  EXPECT_EQ(load(p).wait(), v<T>(10));
  atomic_min(p, v<T>(3)).wait();
  atomic_min(p, v<T>(5)).wait();
  EXPECT_EQ(load(p).wait(), v<T>(3));
  atomic_max(p, v<T>(8)).wait();
  atomic_max(p, v<T>(6)).wait();
  EXPECT_EQ(load(p).wait(), v<T>(8));
  // Several non-fetching updates in flight at once, completed together.
  std::vector<future<>> inflight;
  for (int i = 0; i < 16; ++i) inflight.push_back(atomic_add(p, v<T>(1)));
  when_all(inflight).wait();
  EXPECT_EQ(load(p).wait(), v<T>(24));

  if constexpr (std::is_integral_v<T>) {
    store(p, v<T>(0b1100)).wait();
    EXPECT_EQ(fetch_and(p, v<T>(0b1010)).wait(), v<T>(0b1100));
    EXPECT_EQ(fetch_or(p, v<T>(0b0101)).wait(), v<T>(0b1000));
    EXPECT_EQ(fetch_xor(p, v<T>(0b0110)).wait(), v<T>(0b1101));
    EXPECT_EQ(load(p).wait(), v<T>(0b1011));
    atomic_and(p, v<T>(0b0011)).wait();
    atomic_or(p, v<T>(0b1000)).wait();
    atomic_xor(p, v<T>(0b0001)).wait();
    EXPECT_EQ(load(p).wait(), v<T>(0b1010));
    // Wrap-around at both ends.
    const T max = std::numeric_limits<T>::max();
    const T min = std::numeric_limits<T>::min();
    store(p, max).wait();
    EXPECT_EQ(fetch_add(p, v<T>(1)).wait(), max);
    EXPECT_EQ(load(p).wait(), min);
    EXPECT_EQ(fetch_sub(p, v<T>(1)).wait(), min);
    EXPECT_EQ(load(p).wait(), max);
    if constexpr (std::is_signed_v<T>) {
      store(p, v<T>(-5)).wait();
      EXPECT_EQ(fetch_add(p, v<T>(-7)).wait(), v<T>(-5));
      EXPECT_EQ(fetch_min(p, v<T>(-20)).wait(), v<T>(-12));
      EXPECT_EQ(fetch_max(p, v<T>(-1)).wait(), v<T>(-20));
      EXPECT_EQ(load(p).wait(), v<T>(-1));
      store(p, v<T>(0)).wait();
      EXPECT_EQ(fetch_sub(p, min).wait(), v<T>(0));
      EXPECT_EQ(load(p).wait(), min) << "0 - min wraps to min";
    } else {
      // Unsigned order: max is larger than everything.
      store(p, v<T>(5)).wait();
      EXPECT_EQ(fetch_max(p, max).wait(), v<T>(5));
      EXPECT_EQ(fetch_min(p, v<T>(0)).wait(), max);
      EXPECT_EQ(load(p).wait(), v<T>(0));
    }
  } else {
    // Fractions add exactly; sub adds -v.
    store(p, v<T>(1) / 2).wait();
    EXPECT_EQ(fetch_add(p, v<T>(1) / 4).wait(), v<T>(1) / 2);
    EXPECT_EQ(fetch_sub(p, v<T>(1) / 8).wait(), v<T>(3) / 4);
    EXPECT_EQ(load(p).wait(), v<T>(5) / 8);
    // compare_exchange is bitwise: -0.0 == +0.0 as numbers, yet does not match.
    store(p, -v<T>(0)).wait();
    const T old = compare_exchange(p, v<T>(0), v<T>(1)).wait();
    EXPECT_TRUE(old == v<T>(0) && std::signbit(old));
    const T kept = load(p).wait();
    EXPECT_TRUE(kept == v<T>(0) && std::signbit(kept)) << "-0.0 was not replaced";
    EXPECT_TRUE(std::signbit(compare_exchange(p, -v<T>(0), v<T>(1)).wait()));
    EXPECT_EQ(load(p).wait(), v<T>(1));
    // A NaN matches its own bits; a NaN operand never replaces in min/max.
    const T nan = std::numeric_limits<T>::quiet_NaN();
    store(p, nan).wait();
    EXPECT_TRUE(std::isnan(compare_exchange(p, nan, v<T>(2)).wait()));
    EXPECT_EQ(load(p).wait(), v<T>(2));
    EXPECT_EQ(fetch_min(p, nan).wait(), v<T>(2));
    EXPECT_EQ(fetch_max(p, nan).wait(), v<T>(2));
    EXPECT_EQ(load(p).wait(), v<T>(2));
    EXPECT_EQ(exchange(p, v<T>(3)).wait(), v<T>(2));
    EXPECT_EQ(load(p).wait(), v<T>(3));
  }
  store(p, v<T>(42)).wait();
  return v<T>(42);
}

TYPED_TEST(AtomicTyped, EveryCallGivesExactResultsOnANeighbourAndOnItself) {
  using T = TypeParam;
  // Slot 0 is updated by the left neighbour, slot 1 by this rank itself.
  global_ptr<T> mine = allocate<T>(2);
  mine.local()[0] = v<T>(0);
  mine.local()[1] = v<T>(0);
  const auto all = everyones(mine);
  barrier(world());
  const T on_right = run_sequence(all[static_cast<std::size_t>(this->right())]);
  const T on_self = run_sequence(mine + 1);
  barrier(world());
  // The owner sees the final values in its own memory.
  EXPECT_EQ(load(mine).wait(), on_right);
  EXPECT_EQ(mine.local()[0], on_right);
  EXPECT_EQ(mine.local()[1], on_self);
  barrier(world());
  deallocate(mine);
}

// ---- concurrency: one word, every rank, several threads ----------------------------------

struct counters {
  std::int64_t fetched;
  std::uint64_t added;
  std::int64_t swapped;
  std::int32_t subtracted;
  float fsum;
  double dsum;
  std::uint64_t bits;
  std::uint64_t toggled;
  std::int64_t most;
  std::int64_t least;
};

template <class F>
global_ptr<F> member(global_ptr<counters> c, std::size_t offset) {
  return global_ptr<F>(c.where(), c.address() + offset);
}

TEST_F(Atomic, ConcurrentUpdatesFromEveryRankAndThreadLoseNothing) {
  constexpr int threads = 2;
  constexpr int rounds = 300;
  const rank_t owner = size() - 1;
  global_ptr<counters> mine;
  if (rank() == owner) {
    mine = allocate<counters>(1);
    *mine.local() = counters{0, 0, 0, 0, 0.0F, 0.0, 0, 0, 0, 0};
  }
  const global_ptr<counters> c = broadcast_ptr(mine, owner);
  const auto fetched = member<std::int64_t>(c, offsetof(counters, fetched));
  const auto added = member<std::uint64_t>(c, offsetof(counters, added));
  const auto swapped = member<std::int64_t>(c, offsetof(counters, swapped));
  const auto subtracted = member<std::int32_t>(c, offsetof(counters, subtracted));
  const auto fsum = member<float>(c, offsetof(counters, fsum));
  const auto dsum = member<double>(c, offsetof(counters, dsum));
  const auto bits = member<std::uint64_t>(c, offsetof(counters, bits));
  const auto toggled = member<std::uint64_t>(c, offsetof(counters, toggled));
  const auto most = member<std::int64_t>(c, offsetof(counters, most));
  const auto least = member<std::int64_t>(c, offsetof(counters, least));
  barrier(world());

  std::atomic<long long> sum_of_old{0};
  std::atomic<int> out_of_order{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const int me = rank() * threads + t;
      std::vector<future<>> pending;
      std::int64_t last = -1;
      long long sum = 0;
      for (int i = 0; i < rounds; ++i) {
        const std::int64_t old = fetch_add(fetched, 1).wait();
        if (old <= last) out_of_order.fetch_add(1);
        last = old;
        sum += old;
        pending.push_back(atomic_add(added, 3));
        // An increment made of load + compare_exchange, retried until it lands.
        std::int64_t seen = load(swapped).wait();
        for (;;) {
          const std::int64_t was = compare_exchange(swapped, seen, seen + 1).wait();
          if (was == seen) break;
          seen = was;
        }
        pending.push_back(atomic_sub(subtracted, 2));
        pending.push_back(atomic_add(fsum, 0.5F));
        (void)fetch_add(dsum, 0.25).wait();
        (void)fetch_xor(toggled, std::uint64_t{1} << (me % 64)).wait();
        pending.push_back(atomic_max(most, std::int64_t{me} * 1000 + i));
        pending.push_back(atomic_min(least, -(std::int64_t{me} * 1000 + i)));
      }
      pending.push_back(atomic_or(bits, std::uint64_t{1} << (me % 64)));
      for (future<>& f : pending) f.wait();
      sum_of_old.fetch_add(sum);
    });
  }
  for (std::thread& th : pool) th.join();
  quiet();
  barrier(world());

  const long long n = static_cast<long long>(size()) * threads * rounds;
  const int writers = size() * threads;
  EXPECT_EQ(allreduce(world(), sum_of_old.load(), op::sum), n * (n - 1) / 2)
      << "fetch_add handed out every old value exactly once";
  EXPECT_EQ(out_of_order.load(), 0) << "one thread's fetch_adds see increasing values";
  EXPECT_EQ(load(fetched).wait(), n);
  EXPECT_EQ(load(added).wait(), static_cast<std::uint64_t>(3 * n));
  EXPECT_EQ(load(swapped).wait(), n);
  EXPECT_EQ(load(subtracted).wait(), static_cast<std::int32_t>(-2 * n));
  EXPECT_EQ(load(fsum).wait(), static_cast<float>(n) * 0.5F) << "every partial sum is exact";
  EXPECT_EQ(load(dsum).wait(), static_cast<double>(n) * 0.25);
  const std::uint64_t all_bits =
      writers >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << writers) - 1;
  EXPECT_EQ(load(bits).wait(), all_bits);
  // Each writer toggled its bit `rounds` times (even: every bit is back to 0) — unless two
  // writers share a bit, which they do not below 64 writers.
  EXPECT_EQ(load(toggled).wait(), std::uint64_t{0});
  EXPECT_EQ(load(most).wait(), std::int64_t{writers - 1} * 1000 + rounds - 1);
  EXPECT_EQ(load(least).wait(), -(std::int64_t{writers - 1} * 1000 + rounds - 1));
  barrier(world());
  if (rank() == owner) {
    EXPECT_EQ(mine.local()->fetched, n) << "the owner's own memory agrees";
    deallocate(mine);
  }
}

TEST_F(Atomic, OwnerAndOthersUpdateTheOwnersWordTogether) {
  // The owner's own atomics (the path it takes to its memory) and every other rank's must
  // not lose updates against each other: everybody adds to everybody's word at once, with
  // many updates in flight.
  constexpr int rounds = 2000;
  global_ptr<std::uint64_t> mine = allocate<std::uint64_t>(1);
  *mine.local() = 0;
  const auto all = everyones(mine);
  barrier(world());
  std::vector<future<>> pending;
  std::uint64_t fetches = 0;
  for (int i = 0; i < rounds; ++i) {
    for (const global_ptr<std::uint64_t>& p : all) pending.push_back(atomic_add(p, 1));
    if (pending.size() >= 64) {
      for (future<>& f : pending) f.wait();
      pending.clear();
      (void)fetch_add(mine, 1).wait();  // and a fetching one on my own word
      ++fetches;
    }
  }
  for (future<>& f : pending) f.wait();
  barrier(world());
  EXPECT_EQ(load(mine).wait(), static_cast<std::uint64_t>(rounds) * all.size() + fetches);
  barrier(world());
  deallocate(mine);
}

// ---- waking ------------------------------------------------------------------------------

TEST_F(Atomic, ASleepingOwnerIsWokenByOthersAtomics) {
  constexpr std::uint64_t rounds = 50;
  global_ptr<std::uint64_t> mine = allocate<std::uint64_t>(2);
  mine.local()[0] = 0;
  mine.local()[1] = 0;
  const auto all = everyones(mine);
  barrier(world());
  const global_ptr<std::uint64_t> theirs = all[static_cast<std::size_t>(right())];
  for (std::uint64_t i = 1; i <= rounds; ++i) {
    // Round i: every rank updates its right neighbour's words and sleeps until its left
    // neighbour has updated its own.
    atomic_add(theirs, 1).wait();
    wait_until(mine.local(), cmp::ge, i);
    (void)exchange(theirs + 1, i).wait();
    wait_until(mine.local() + 1, cmp::ge, i);
  }
  EXPECT_EQ(mine.local()[0], rounds);
  EXPECT_EQ(mine.local()[1], rounds);
  barrier(world());
  deallocate(mine);
}

// ---- bad input ---------------------------------------------------------------------------

TEST_F(Atomic, BadPointersAreRejectedAndChangeNothing) {
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(2);
  mine.local()[0] = 11;
  mine.local()[1] = 22;
  const auto all = everyones(mine);
  barrier(world());
  const global_ptr<std::int64_t> target = all[static_cast<std::size_t>(right())];
  const global_ptr<std::int64_t> null;
  // Four bytes into element 0: overlaps elements 0 and 1.
  const auto misaligned =
      reinterpret_pointer_cast<std::int64_t>(reinterpret_pointer_cast<std::byte>(target) + 4);
  const auto misaligned_d =
      reinterpret_pointer_cast<double>(reinterpret_pointer_cast<std::byte>(target) + 2);
  const auto misaligned_u32 =
      reinterpret_pointer_cast<std::uint32_t>(reinterpret_pointer_cast<std::byte>(target) + 1);
  const global_ptr<std::int64_t> no_rank(size(), target.address());
  const global_ptr<std::int64_t> negative_rank(-1, target.address());

  for (const global_ptr<std::int64_t>& p : {null, misaligned}) {
    expect_error(error_class::arg, "fetch_add", [&] { (void)fetch_add(p, 1); });
    expect_error(error_class::arg, "fetch_sub", [&] { (void)fetch_sub(p, 1); });
    expect_error(error_class::arg, "fetch_xor", [&] { (void)fetch_xor(p, 1); });
    expect_error(error_class::arg, "fetch_min", [&] { (void)fetch_min(p, 1); });
    expect_error(error_class::arg, "exchange", [&] { (void)exchange(p, 1); });
    expect_error(error_class::arg, "compare_exchange", [&] { (void)compare_exchange(p, 11, 1); });
    expect_error(error_class::arg, "load", [&] { (void)load(p); });
    expect_error(error_class::arg, "store", [&] { (void)store(p, 1); });
    expect_error(error_class::arg, "atomic_add", [&] { (void)atomic_add(p, 1); });
    expect_error(error_class::arg, "atomic_or", [&] { (void)atomic_or(p, 1); });
    expect_error(error_class::arg, "atomic_max", [&] { (void)atomic_max(p, 1); });
  }
  expect_error(error_class::arg, "fetch_add", [&] { (void)fetch_add(misaligned_d, 1.0); });
  expect_error(error_class::arg, "atomic_sub", [&] { (void)atomic_sub(misaligned_d, 1.0); });
  expect_error(error_class::arg, "fetch_and", [&] { (void)fetch_and(misaligned_u32, 0U); });
  expect_error(error_class::rank, "fetch_add", [&] { (void)fetch_add(no_rank, 1); });
  expect_error(error_class::rank, "store", [&] { (void)store(negative_rank, 1); });
  // Memory outside every heap of this rank itself: refused alike, nothing changed.
  std::int64_t mine_on_stack = 44;
  const global_ptr<std::int64_t> own_off_heap(rank(),
                                              reinterpret_cast<std::uintptr_t>(&mine_on_stack));
  expect_error(error_class::rma_range, "fetch_add", [&] { (void)fetch_add(own_off_heap, 1); });
  expect_error(error_class::rma_range, "atomic_add", [&] { (void)atomic_add(own_off_heap, 1); });
  EXPECT_EQ(mine_on_stack, 44) << "a refused atomic changed this rank's memory";
  // Memory outside the neighbour's heaps (its stack): the range error, naming the call.
  std::int64_t on_stack = 33;
  const auto stacks = allgather(world(), reinterpret_cast<std::uint64_t>(&on_stack));
  if (size() > 1) {
    const global_ptr<std::int64_t> off_heap(right(), stacks[static_cast<std::size_t>(right())]);
    expect_error(error_class::rma_range, "fetch_add", [&] { (void)fetch_add(off_heap, 1); });
    expect_error(error_class::rma_range, "atomic_add", [&] { (void)atomic_add(off_heap, 1); });
    expect_error(error_class::rma_range, "compare_exchange",
                 [&] { (void)compare_exchange(off_heap, 33, 1); });
  }
  quiet();
  barrier(world());
  EXPECT_EQ(mine.local()[0], 11) << "nothing changed";
  EXPECT_EQ(mine.local()[1], 22) << "nothing changed";
  EXPECT_EQ(on_stack, 33) << "nothing changed";
  barrier(world());
  deallocate(mine);
}

}  // namespace
}  // namespace oneside::test
