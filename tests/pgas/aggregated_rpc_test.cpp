// rpc_ff through an aggregator (aggregator.hpp, rpc.hpp): every call runs exactly once at its
// target with its arguments intact (strings, vectors, from every rank to every rank, through
// small buffers that ship while filling); nothing runs before the buffer ships, and flush(),
// quiet() and the destructor make the calls run; arguments beyond a buffer's message travel by
// rpc's rendezvous (heap given back); quiet() returns once every call of this rank's
// aggregators ran (live or destroyed); bad input is refused at the call with nothing buffered.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "pgas/owned_lock.hpp"
#include "pgas_test.hpp"

namespace oneside::test {
namespace {

class AggregatedRpc : public PgasTest {};

// Per process: what the bodies of the calls left here, by source.
struct inbox {
  std::mutex mutex;
  std::vector<std::int64_t> calls;      // by source
  std::vector<std::int64_t> seq_sum;    // by source: the sum of the sequence numbers
  std::vector<std::int64_t> arg_bytes;  // by source: the bytes of the arguments
  std::int64_t damaged = 0;             // calls whose arguments were not what was sent
  std::atomic<std::int64_t> total{0};
};
inbox& box() {
  static inbox b;
  return b;
}

// Empties the inbox on every rank (collective: no call is in flight around it).
void reset_inbox() {
  barrier(world());
  inbox& b = box();
  {
    const std::lock_guard lock(b.mutex);
    const auto n = static_cast<std::size_t>(world().size());
    b.calls.assign(n, 0);
    b.seq_sum.assign(n, 0);
    b.arg_bytes.assign(n, 0);
    b.damaged = 0;
    b.total.store(0);
  }
  barrier(world());
}

std::string text_of(int from, int k) {
  return std::string(static_cast<std::size_t>(k % 37), static_cast<char>('a' + (from + k) % 26));
}
std::vector<std::uint64_t> values_of(int from, int k) {
  std::vector<std::uint64_t> v(static_cast<std::size_t>(k % 11));
  std::iota(v.begin(), v.end(),
            static_cast<std::uint64_t>(from) * 1000003U + 7U * static_cast<std::uint64_t>(k));
  return v;
}

void note(int from, int k, std::size_t bytes, bool intact) {
  inbox& b = box();
  {
    const std::lock_guard lock(b.mutex);
    b.calls[static_cast<std::size_t>(from)] += 1;
    b.seq_sum[static_cast<std::size_t>(from)] += k;
    b.arg_bytes[static_cast<std::size_t>(from)] += static_cast<std::int64_t>(bytes);
    if (!intact) ++b.damaged;
  }
  b.total.fetch_add(1);
  wake(world().rank());
}

// The body most tests send: checks its arguments against what the sender made of (from, k).
void take(std::int32_t from, std::int32_t k, const std::string& text,
          std::vector<std::uint64_t> values) {
  note(from, k, text.size() + values.size() * sizeof(std::uint64_t),
       text == text_of(from, k) && values == values_of(from, k));
}

void wait_total(std::int64_t n) {
  wait_until([n] { return box().total.load() >= n; });
}

std::int64_t total() {
  return box().total.load();
}

TEST_F(AggregatedRpc, EveryCallRunsOnceWithItsArgumentsFromEveryRankToEveryRank) {
  for (const bool small : {false, true}) {
    reset_inbox();
    const int n = 400;
    {
      // Small buffers ship many times while filling (and wait on back-pressure).
      aggregator agg(small ? aggregator_options{.buffer_bytes = 512, .buffers = 2}
                           : aggregator_options{});
      for (int k = 0; k < n; ++k) {
        for (rank_t d = 0; d < size(); ++d) {
          agg.rpc_ff(d, &take, rank(), k, text_of(rank(), k), values_of(rank(), k));
        }
      }
      agg.flush();
    }
    wait_total(std::int64_t{n} * size());
    barrier(world());
    inbox& b = box();
    const std::lock_guard lock(b.mutex);
    EXPECT_EQ(b.total.load(), std::int64_t{n} * size());
    EXPECT_EQ(b.damaged, 0) << "calls whose arguments arrived changed";
    std::int64_t bytes = 0;
    for (int k = 0; k < n; ++k) bytes += (k % 37) + (k % 11) * 8;
    for (rank_t src = 0; src < size(); ++src) {
      const auto s = static_cast<std::size_t>(src);
      EXPECT_EQ(b.calls[s], n) << "calls from rank " << src << ", small buffers " << small;
      EXPECT_EQ(b.seq_sum[s], std::int64_t{n} * (n - 1) / 2) << "from rank " << src;
      EXPECT_EQ(b.arg_bytes[s], bytes) << "from rank " << src;
    }
  }
  barrier(world());
}

TEST_F(AggregatedRpc, CallsRunOnlyOnceTheirBufferShipsByFlushQuietOrTheDestructor) {
  reset_inbox();
  const int per_round = 3;
  std::int64_t expected = 0;
  enum class how { flush, quiet, destructor };
  for (const how h : {how::flush, how::quiet, how::destructor}) {
    {
      aggregator agg;  // a default buffer holds far more than three calls
      for (int k = 0; k < per_round; ++k) {
        agg.rpc_ff(right(), &take, rank(), k, text_of(rank(), k), values_of(rank(), k));
      }
      // barrier() does not ship: the left neighbour's calls are still in its buffer.
      barrier(world());
      EXPECT_EQ(total(), expected) << "a call ran before its buffer shipped";
      barrier(world());
      if (h == how::flush) agg.flush();
      if (h == how::quiet) quiet();
    }
    expected += per_round;
    wait_total(expected);
    EXPECT_EQ(total(), expected);
  }
  barrier(world());
  const std::lock_guard lock(box().mutex);
  EXPECT_EQ(box().calls[static_cast<std::size_t>(left())], 3 * per_round);
  EXPECT_EQ(box().damaged, 0);
}

// The first call of each round from each source takes a while (so calls are still queued when
// a quiet() that did not wait for them would return).
void take_slowly(std::int32_t from, std::int32_t k) {
  if (k == 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));
  note(from, k, 0, true);
}

TEST_F(AggregatedRpc, QuietReturnsOnceEveryCallOfEveryAggregatorRan) {
  const int n = 300;
  std::int64_t expected = 0;
  for (const bool destroyed : {false, true}) {
    reset_inbox();
    {
      // Small buffers: some ship while filling, the rest at quiet() or the destructor.
      aggregator agg({.buffer_bytes = 1024});
      for (int k = 0; k < n; ++k) {
        for (rank_t d = 0; d < size(); ++d) agg.rpc_ff(d, &take_slowly, rank(), k);
      }
      if (!destroyed) quiet();  // ships the buffers and waits for their calls
    }
    if (destroyed) quiet();  // the destructor shipped them: quiet() waits for their calls
    barrier(world());
    expected = std::int64_t{n} * size();
    EXPECT_EQ(total(), expected) << "calls that had not run after quiet() and a barrier";
    {
      const std::lock_guard lock(box().mutex);
      for (rank_t src = 0; src < size(); ++src) {
        EXPECT_EQ(box().calls[static_cast<std::size_t>(src)], n) << "from rank " << src;
      }
    }
    barrier(world());
  }
}

void take_large(std::int32_t from, const std::vector<std::uint8_t>& v) {
  bool intact = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    intact = intact && v[i] == static_cast<std::uint8_t>(i * 13 + static_cast<std::size_t>(from));
  }
  note(from, 0, v.size(), intact);
}

std::vector<std::uint8_t> large_of(int from, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<std::uint8_t>(i * 13 + static_cast<std::size_t>(from));
  }
  return v;
}

TEST_F(AggregatedRpc, ArgumentsBeyondAMessageTravelByRendezvousAndTheHeapIsGivenBack) {
  reset_inbox();
  const heap_stats_t before = heap_stats();
  // Beyond a 256-byte buffer's message (parked by the aggregator), and beyond one active
  // message (parked by rpc's encoder).
  const std::vector<std::size_t> sizes{1000, std::size_t{1} << 20, 0, 100};
  {
    aggregator agg({.buffer_bytes = 256, .buffers = 2});
    ASSERT_LT(agg.max_message_bytes(), std::size_t{1000});
    for (const std::size_t n : sizes) agg.rpc_ff(right(), &take_large, rank(), large_of(rank(), n));
    agg.flush();
  }
  wait_total(static_cast<std::int64_t>(sizes.size()));
  // The targets free what they fetched; an rpc after their bodies ran orders those frees.
  barrier(world());
  rpc(right(), [] {}).wait();
  barrier(world());
  {
    const std::lock_guard lock(box().mutex);
    EXPECT_EQ(box().damaged, 0);
    EXPECT_EQ(
        box().arg_bytes[static_cast<std::size_t>(left())],
        static_cast<std::int64_t>(std::accumulate(sizes.begin(), sizes.end(), std::size_t{0})));
  }
  EXPECT_EQ(heap_stats().used, before.used) << "parked arguments were not freed";
  barrier(world());
}

// A user type whose serialization fails.
struct unserializable {
  void serialize(serial_writer&) const { throw std::runtime_error("cannot serialize this"); }
  static unserializable deserialize(serial_reader&) { return {}; }
};

TEST_F(AggregatedRpc, BadInputIsRefusedAtTheCallAndNothingIsBuffered) {
  reset_inbox();
  const heap_stats_t before = heap_stats();
  {
    aggregator agg;
    expect_error(error_class::rank, "aggregator::rpc_ff", [&] {
      agg.rpc_ff(size(), &take, rank(), 0, text_of(rank(), 0), values_of(rank(), 0));
    });
    expect_error(error_class::rank, "aggregator::rpc_ff",
                 [&] { agg.rpc_ff(-1, &take, rank(), 0, std::string(), values_of(rank(), 0)); });
    try {
      agg.rpc_ff(
          right(), [](int, unserializable) { note(0, 0, 0, false); }, 1, unserializable{});
      ADD_FAILURE() << "a failing serialize() was not reported";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "cannot serialize this");
    }
    // A buffer too small for an rpc_ff even with its arguments parked.
    aggregator tiny({.buffer_bytes = 64});
    expect_error(error_class::arg, "aggregator::rpc_ff",
                 [&] { tiny.rpc_ff(right(), &take_large, rank(), large_of(rank(), 4096)); });
    agg.flush();
    tiny.flush();
  }
  barrier(world());
  EXPECT_EQ(total(), 0) << "a refused call ran";
  EXPECT_EQ(heap_stats().used, before.used) << "a refused call left parked bytes";
  barrier(world());
}

// ---- runs of calls: one code name per run of calls to one function -------------------------

// Per process: the sequence numbers of the calls run here, by source, in the order they ran.
struct order_log {
  std::mutex mutex;
  std::vector<std::vector<std::int64_t>> seen;
};
order_log& orders() {
  static order_log o;
  return o;
}

void reset_orders() {
  barrier(world());
  {
    const std::lock_guard lock(orders().mutex);
    orders().seen.assign(static_cast<std::size_t>(world().size()), {});
  }
  reset_inbox();
}

void log_call(std::int32_t from, std::int64_t k, bool intact) {
  {
    const std::lock_guard lock(orders().mutex);
    orders().seen[static_cast<std::size_t>(from)].push_back(k);
  }
  note(from, static_cast<int>(k), 0, intact);
}

// Bodies of several kinds: fixed-size arguments (function pointers, a lambda, no argument
// beyond the source, a dist_object), and arguments whose size varies.
void seq_fixed(std::int32_t from, std::int64_t k) {
  log_call(from, k, true);
}
void seq_pair(std::int32_t from, std::int64_t k, double twice) {
  log_call(from, k, twice == 2.0 * static_cast<double>(k));
}
void seq_text(std::int32_t from, std::int64_t k, const std::string& text) {
  log_call(from, k, text == text_of(from, static_cast<int>(k)));
}
struct wide {
  std::array<std::uint8_t, 300> bytes;  // fixed, but beyond what is laid out on the stack
};
wide wide_of(std::int64_t k) {
  wide w{};
  for (std::size_t i = 0; i < w.bytes.size(); ++i) {
    w.bytes[i] = static_cast<std::uint8_t>(static_cast<std::size_t>(k) * 7 + i);
  }
  return w;
}
void seq_wide(std::int32_t from, std::int64_t k, wide w) {
  const wide expected = wide_of(k);
  log_call(from, k, w.bytes == expected.bytes);
}
void seq_object(std::int32_t from, std::int64_t k, dist_object<std::int64_t>& obj) {
  log_call(from, k, *obj == 1000 + world().rank());
}

// Issues call k of an interleaving of every kind (which kind: k's pattern).
void issue_mixed(aggregator& agg, rank_t to, std::int64_t k, dist_object<std::int64_t>& obj) {
  const std::int32_t me = world().rank();
  switch ((k * 7 / 3) % 7) {
    case 0:
    case 1:
      agg.rpc_ff(to, &seq_fixed, me, k);
      break;
    case 2:
      agg.rpc_ff(to, &seq_pair, me, k, 2.0 * static_cast<double>(k));
      break;
    case 3:
      agg.rpc_ff(
          to, [](std::int32_t from, std::int64_t n) { log_call(from, n, true); }, me, k);
      break;
    case 4:
      agg.rpc_ff(to, &seq_text, me, k, text_of(me, static_cast<int>(k)));
      break;
    case 5:
      agg.rpc_ff(to, &seq_object, me, k, obj);
      break;
    default:
      agg.rpc_ff(to, &seq_wide, me, k, wide_of(k));
      break;
  }
}

// The sequence numbers `from` sent here, checked: each of [0, n) once, and when `ordered`, in
// order.
void expect_seen(rank_t from, std::int64_t n, bool ordered) {
  const std::lock_guard lock(orders().mutex);
  std::vector<std::int64_t> seen = orders().seen[static_cast<std::size_t>(from)];
  ASSERT_EQ(static_cast<std::int64_t>(seen.size()), n) << "calls from rank " << from;
  if (ordered) {
    for (std::int64_t k = 0; k < n; ++k) {
      ASSERT_EQ(seen[static_cast<std::size_t>(k)], k) << "call " << k << " from rank " << from;
    }
  }
  std::sort(seen.begin(), seen.end());
  for (std::int64_t k = 0; k < n; ++k) {
    ASSERT_EQ(seen[static_cast<std::size_t>(k)], k) << "from rank " << from;
  }
}

TEST_F(AggregatedRpc, InterleavedRunsOfCallsToSeveralFunctionsRunInIssueOrderInOneBuffer) {
  reset_orders();
  dist_object<std::int64_t> obj(1000 + rank());
  const std::int64_t n = 24;  // all in one buffer: it runs in one task, in issue order
  {
    aggregator agg;
    for (std::int64_t k = 0; k < n; ++k) issue_mixed(agg, right(), k, obj);
    barrier(world());
    EXPECT_EQ(total(), 0) << "a call ran before its buffer shipped";
    barrier(world());
    agg.flush();
  }
  wait_total(n);
  expect_seen(left(), n, true);
  const std::lock_guard lock(box().mutex);
  EXPECT_EQ(box().damaged, 0) << "calls whose arguments arrived changed";
  barrier(world());
}

TEST_F(AggregatedRpc, RunsSpanningManyBuffersRunEveryCallOnceWithItsArguments) {
  for (const std::size_t bytes : {std::size_t{128}, std::size_t{512}, std::size_t{0}}) {
    reset_orders();
    dist_object<std::int64_t> obj(1000 + rank());
    const std::int64_t n = 3000;
    {
      // 128 bytes: a run of 8-byte calls fills a buffer after 9 calls; wide arguments there
      // are parked (rpc's rendezvous) in between.
      aggregator agg(bytes != 0 ? aggregator_options{.buffer_bytes = bytes, .buffers = 2}
                                : aggregator_options{});
      for (std::int64_t k = 0; k < n; ++k) {
        if (k % 500 < 400) {
          agg.rpc_ff(right(), &seq_fixed, rank(), k);  // long runs of one function
        } else {
          issue_mixed(agg, right(), k, obj);
        }
      }
      quiet();
    }
    barrier(world());
    EXPECT_EQ(total(), n) << "calls that had not run after quiet() and a barrier";
    expect_seen(left(), n, false);
    const std::lock_guard lock(box().mutex);
    EXPECT_EQ(box().damaged, 0) << "buffers of " << bytes << " bytes";
  }
  barrier(world());
}

std::atomic<std::int64_t> g_empty_calls{0};
void no_arguments() {
  g_empty_calls.fetch_add(1);
}

TEST_F(AggregatedRpc, CallsWithoutArgumentsAreCountedOneByOne) {
  barrier(world());
  const std::int64_t before = g_empty_calls.load();
  barrier(world());
  const std::int64_t n = 5000;
  {
    aggregator agg({.buffer_bytes = 256});
    for (std::int64_t k = 0; k < n; ++k) agg.rpc_ff(right(), &no_arguments);
    quiet();
  }
  barrier(world());
  EXPECT_EQ(g_empty_calls.load() - before, n);
  barrier(world());
}

TEST_F(AggregatedRpc, AnArgumentBeyondTheBufferKeepsItsPlaceAmongTheCallsOfItsBuffer) {
  reset_orders();
  const heap_stats_t before = heap_stats();
  {
    // 2 KiB buffers: the 1000-byte text fits a run's record, the 3000-byte one is parked.
    aggregator agg({.buffer_bytes = 2048});
    const std::int32_t me = rank();
    agg.rpc_ff(right(), &seq_fixed, me, std::int64_t{0});
    agg.rpc_ff(right(), &seq_fixed, me, std::int64_t{1});
    agg.rpc_ff(
        right(),
        [](std::int32_t from, std::int64_t k, const std::string& t) {
          log_call(from, k, t == std::string(3000, 'x'));
        },
        me, std::int64_t{2}, std::string(3000, 'x'));
    agg.rpc_ff(right(), &seq_fixed, me, std::int64_t{3});
    agg.rpc_ff(
        right(),
        [](std::int32_t from, std::int64_t k, const std::string& t) {
          log_call(from, k, t == std::string(1000, 'y'));
        },
        me, std::int64_t{4}, std::string(1000, 'y'));
    agg.rpc_ff(right(), &seq_fixed, me, std::int64_t{5});
    agg.flush();
  }
  wait_total(6);
  expect_seen(left(), 6, true);
  // The targets free what they fetched; an rpc after their bodies ran orders those frees.
  barrier(world());
  rpc(right(), [] {}).wait();
  barrier(world());
  {
    const std::lock_guard lock(box().mutex);
    EXPECT_EQ(box().damaged, 0);
  }
  EXPECT_EQ(heap_stats().used, before.used) << "parked arguments were not freed";
  barrier(world());
}

TEST_F(AggregatedRpc, ThreadsSharingAnAggregatorWithItsMakerRunEveryCallOnce) {
  reset_orders();
  const int threads = 3;
  const std::int64_t per_thread = 4000;
  {
    aggregator agg({.buffer_bytes = 1024});
    // The maker issues first (its own way), then other threads join: the first of them
    // takes the lock from the maker while it may be inside a call.
    std::atomic<std::int64_t> next{0};
    auto issue = [&] {
      for (std::int64_t i = 0; i < per_thread; ++i) {
        agg.rpc_ff(right(), &seq_fixed, rank(), next.fetch_add(1));
      }
    };
    for (std::int64_t i = 0; i < 100; ++i) {
      agg.rpc_ff(right(), &seq_fixed, rank(), next.fetch_add(1));
    }
    std::vector<std::thread> others;
    for (int t = 0; t < threads; ++t) others.emplace_back(issue);
    issue();
    for (std::thread& t : others) t.join();
    std::thread([] { quiet(); }).join();  // another thread's quiet() flushes it
  }
  quiet();
  barrier(world());
  const std::int64_t n = 100 + (threads + 1) * per_thread;
  EXPECT_EQ(total(), n);
  expect_seen(left(), n, false);
  barrier(world());
}

// The aggregator's lock (pgas/owned_lock.hpp): its maker takes it without atomics until
// another thread takes it; exclusion holds throughout, the maker's way and the shared way.
TEST_F(AggregatedRpc, TheLockBiasedToItsMakerExcludesEveryThreadAfterOthersTookIt) {
  pgas::detail::owned_lock lock;
  std::int64_t count = 0;  // plain: a lost update shows a broken exclusion
  {
    const pgas::detail::owned_lock::guard g(lock);
    ++count;
  }
  const bool biased = lock.is_biased();  // false where the kernel has no membarrier
  const int threads = 3;
  const std::int64_t each = 20000;
  std::atomic<bool> go{false};
  auto add = [&] {
    while (!go.load()) std::this_thread::yield();
    for (std::int64_t i = 0; i < each; ++i) {
      const pgas::detail::owned_lock::guard g(lock);
      ++count;
    }
  };
  std::vector<std::thread> others;
  for (int t = 0; t < threads; ++t) others.emplace_back(add);
  go.store(true);
  add();  // the maker, its own way until the first other thread revokes it
  for (std::thread& t : others) t.join();
  EXPECT_EQ(count, 1 + (threads + 1) * each);
  EXPECT_FALSE(lock.is_biased()) << "other threads took it: the bias is revoked";
  if (!biased) GTEST_LOG_(INFO) << "this kernel has no private expedited membarrier";
}

// A task of the owner's thread suspended inside the lock (an aggregator's wait for buffers)
// may resume on another thread and release it there; meanwhile another task of the owner's
// thread coming in must wait for it, not enter.
TEST_F(AggregatedRpc, TheOwnersThreadWaitsForAHolderThatReleasesFromAnotherThread) {
  pgas::detail::owned_lock lock;
  std::optional<pgas::detail::owned_lock::guard> first;
  first.emplace(lock);  // the owner's way, where the kernel allows it
  std::atomic<bool> released{false};
  std::thread elsewhere([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    released.store(true);
    first.reset();
  });
  {
    const pgas::detail::owned_lock::guard second(lock);
    EXPECT_TRUE(released.load()) << "entered while the first holder was inside";
  }
  elsewhere.join();
  EXPECT_FALSE(lock.is_biased());
}

}  // namespace
}  // namespace oneside::test
