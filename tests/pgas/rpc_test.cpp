// rpc and rpc_ff (rpc.hpp) with serialization (serialization.hpp): every argument kind and
// result, functions in the executable and in a shared library (named by object and offset,
// not address), exceptions across ranks, bad ranks, rpc inside rpc and to self, many calls in
// flight, arguments and results far beyond one active message (rendezvous, heap given back),
// dist_object's fetch and dist_object arguments, the wire pair aggregators use, the one
// ordering rule documented (an rpc issued after another's future is ready runs after it), and
// quiet() returning once this rank's rpc_ff ran (those their bodies issue: one quiet() later).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <oneside/oneside.hpp>
#include <oneside/pgas/dist_object.hpp>
#include <oneside/pgas/rpc.hpp>
#include <oneside/pgas/serialization.hpp>

#include "expect_error.hpp"
#include "rank_test.hpp"
#include "rpc/rpc_wire.hpp"
#include "rpc_lib/rpc_lib.hpp"

namespace oneside::test {
namespace {

class Rpc : public RankTest {
 protected:
  static rank_t right() { return (rank() + 1) % size(); }
  static rank_t left() { return (rank() + size() - 1) % size(); }
};

// Per process: what rpc_ff bodies and void rpcs left here.
std::atomic<std::int64_t> g_received{0};
std::atomic<std::int64_t> g_sum{0};

void add_to_sum(std::int64_t v) {
  g_sum.fetch_add(v);
  g_received.fetch_add(1);
  wake(world().rank());
}

// Waits until this rank received `n` in total.
void wait_received(std::int64_t n) {
  wait_until([n] { return g_received.load() >= n; });
}

struct point {  // trivially copyable
  std::int32_t x;
  double y;
  bool operator==(const point&) const = default;
};

// A user type with the serialize/deserialize pair, holding nested containers.
struct record {
  std::string name;
  std::vector<std::vector<int>> rows;
  point where{};

  void serialize(serial_writer& w) const {
    w.write(name);
    w.write(rows);
    w.write(where);
  }
  static record deserialize(serial_reader& r) {
    record out;
    out.name = r.read<std::string>();
    out.rows = r.read<std::vector<std::vector<int>>>();
    out.where = r.read<point>();
    return out;
  }
  bool operator==(const record&) const = default;
};
static_assert(serializable<record> && serializable<std::vector<record>>);
static_assert(serializable<global_ptr<int>> && !serializable<int*>);
static_assert(!serializable<std::vector<bool>> && !serializable<std::span<const int>>);

record sample_record(int seed) {
  return record{
      "rec" + std::to_string(seed), {{seed}, {}, {seed, seed + 1, seed + 2}}, {seed, 0.5}};
}

// A function of the executable (not a lambda): found by object and offset.
std::int64_t times_rank_plus(std::int64_t a, std::int64_t b) {
  return a * world().rank() + b;
}

TEST_F(Rpc, RunsLambdasAndFunctionsOnTheTargetAndReturnsTheirResults) {
  for (rank_t r = 0; r < size(); ++r) {
    EXPECT_EQ(rpc(r, [] { return world().rank(); }).wait(), r);
    EXPECT_EQ(rpc(
                  r, [](int x, long y) { return x + y + world().rank(); }, 40, 2L)
                  .wait(),
              42 + r);
    EXPECT_EQ(rpc(r, &times_rank_plus, 10, 7).wait(), 10 * r + 7) << "int converts to int64";
    EXPECT_EQ(rpc(r, times_rank_plus, std::int64_t{3}, std::int64_t{1}).wait(), 3 * r + 1);
  }
}

TEST_F(Rpc, VoidFunctionsGiveAFutureThatIsReadyOnceTheyRan) {
  const std::int64_t before = rpc(right(), [] { return g_sum.load(); }).wait();
  barrier(world());  // everybody read before anybody adds
  future<> f = rpc(
      right(), [](std::int64_t v) { g_sum.fetch_add(v); }, std::int64_t{5});
  f.wait();
  barrier(world());  // every add done
  EXPECT_EQ(rpc(right(), [] { return g_sum.load(); }).wait(), before + 5);
  barrier(world());
}

TEST_F(Rpc, CallsFunctionsOfASharedLibrary) {
  const std::vector<std::int64_t> v{1, 2, 3, 4};
  for (rank_t r = 0; r < size(); ++r) {
    const std::int64_t got = rpc(r, &rpc_lib::weighted_sum, v, std::int64_t{3}).wait();
    EXPECT_EQ(got, 30 + (static_cast<std::int64_t>(r) << 48));
    EXPECT_EQ(rpc(r, &rpc_lib::repeat, std::string("ab"), 3).wait(), "ababab@" + std::to_string(r));
  }
  // Where the library lies differs from rank to rank under ASLR; the calls above work anyway.
  const std::uintptr_t there = rpc(right(), &rpc_lib::weighted_sum_address).wait();
  EXPECT_NE(there, 0U);
}

TEST_F(Rpc, CarriesEveryArgumentKind) {
  const point p{7, 2.5};
  EXPECT_EQ(rpc(
                right(), [](point q) { return q; }, p)
                .wait(),
            p);
  EXPECT_EQ(rpc(
                right(), [](const std::string& s) { return s + "!"; }, std::string("hi"))
                .wait(),
            "hi!");
  EXPECT_EQ(rpc(
                right(), [](std::string s) { return s.size(); }, "a C string")
                .wait(),
            10U);
  EXPECT_EQ(rpc(
                right(), [](std::string s) { return s; }, std::string())
                .wait(),
            "");
  const std::vector<int> ints{1, 2, 3, 4, 5};
  EXPECT_EQ(
      rpc(
          right(), [](std::vector<int> v) { return std::accumulate(v.begin(), v.end(), 0); }, ints)
          .wait(),
      15);
  // A span parameter: a view into the message, aligned for its elements.
  const std::vector<double> doubles{0.5, 1.5, 2.5};
  const auto span_check = [](std::span<const double> s) {
    const bool aligned = reinterpret_cast<std::uintptr_t>(s.data()) % alignof(double) == 0;
    return aligned ? std::accumulate(s.begin(), s.end(), 0.0) : -1.0;
  };
  EXPECT_EQ(rpc(right(), span_check, doubles).wait(), 4.5);
  EXPECT_EQ(rpc(right(), span_check, std::span<const double>(doubles).subspan(1)).wait(), 4.0);
  EXPECT_EQ(rpc(right(), span_check, std::vector<double>{}).wait(), 0.0);
  // A span argument for a vector parameter (same bytes).
  EXPECT_EQ(rpc(
                right(), [](std::vector<int> v) { return v; }, std::span<const int>(ints))
                .wait(),
            ints);
  // Nested containers and user types, as arguments and results.
  const std::vector<std::string> words{"one", "", "three"};
  EXPECT_EQ(rpc(
                right(), [](std::vector<std::string> w) { return w; }, words)
                .wait(),
            words);
  const std::vector<std::vector<int>> nested{{1}, {}, {2, 3}};
  EXPECT_EQ(rpc(
                right(), [](const std::vector<std::vector<int>>& n) { return n; }, nested)
                .wait(),
            nested);
  const record rec = sample_record(rank());
  EXPECT_EQ(rpc(
                right(), [](record r) { return r; }, rec)
                .wait(),
            rec);
  const std::vector<record> recs{sample_record(1), sample_record(2)};
  EXPECT_EQ(rpc(
                right(), [](std::vector<record> r) { return r; }, recs)
                .wait(),
            recs);
  // A non-const reference parameter gets the target's copy to change.
  EXPECT_EQ(rpc(
                right(),
                [](std::vector<int>& v) {
                  v.push_back(9);
                  return v.size();
                },
                ints)
                .wait(),
            6U);
  // A global_ptr reaches the caller's memory from the target.
  global_ptr<std::int64_t> mine = allocate<std::int64_t>(1);
  *mine.local() = 1000 + rank();
  EXPECT_EQ(rpc(
                right(), [](global_ptr<std::int64_t> q) { return rget(q).wait(); }, mine)
                .wait(),
            1000 + rank());
  rpc(
      right(), [](global_ptr<std::int64_t> q) { rput(std::int64_t{-1}, q).wait(); }, mine)
      .wait();
  EXPECT_EQ(*mine.local(), -1);
  deallocate(mine);
  // Several arguments of different kinds, read in order.
  EXPECT_EQ(
      rpc(
          right(),
          [](int a, std::string b, std::span<const int> c, point d, std::vector<std::string> e) {
            return std::to_string(a) + b + std::to_string(c.size()) + std::to_string(d.x) +
                   e.back();
          },
          1, std::string("x"), ints, p, words)
          .wait(),
      "1x57three");
}

TEST_F(Rpc, ToSelfRunsOnThisRank) {
  EXPECT_EQ(rpc(rank(), [] { return world().rank(); }).wait(), rank());
  EXPECT_EQ(rpc(
                rank(), [](std::string s) { return s + s; }, std::string("me"))
                .wait(),
            "meme");
}

TEST_F(Rpc, AThrowingFunctionFailsTheFutureWithItsMessage) {
  future<int> f = rpc(
      right(), [](int x) -> int { throw std::runtime_error("boom " + std::to_string(x)); }, 17);
  try {
    f.wait();
    ADD_FAILURE() << "the rpc's exception did not reach the caller";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), error_class::remote) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("rpc"), std::string::npos) << what;
    EXPECT_NE(what.find("target " + std::to_string(right())), std::string::npos) << what;
    EXPECT_NE(what.find("boom 17"), std::string::npos) << what;
  }
  // void functions and oneside's own errors at the target too.
  expect_error(error_class::remote, "rpc",
               [&] { rpc(right(), [] { throw std::logic_error("void boom"); }).wait(); });
  expect_error(error_class::remote, "rpc", [&] {
    rpc(right(), [] { rpc(-5, [] {}).wait(); }).wait();  // error(rank) there
  });
  // The target goes on serving.
  EXPECT_EQ(rpc(right(), [] { return 3; }).wait(), 3);
}

TEST_F(Rpc, BadRanksAreRejectedAtTheCallAndNothingIsSent) {
  const heap_stats_t before = heap_stats();
  const std::vector<char> big(10 << 20, 'x');  // would be parked in the heap if it were sent
  expect_error(error_class::rank, "rpc", [&] {
    rpc(
        size(), [](std::vector<char>) {}, big);
  });
  expect_error(error_class::rank, "rpc", [&] { rpc(-1, [] { return 1; }); });
  expect_error(error_class::rank, "rpc_ff", [&] {
    rpc_ff(
        size(), [](std::vector<char>) {}, big);
  });
  const heap_stats_t after = heap_stats();
  EXPECT_EQ(after.used, before.used);
  barrier(world());
}

// Each hop calls the next rank and waits for it from inside its own body.
std::int64_t hop(int left_hops, std::int64_t acc) {
  const rank_t me = world().rank();
  if (left_hops == 0) return acc;
  const rank_t next = (me + 1) % world().size();
  return rpc(next, &hop, left_hops - 1, acc * 10 + me).wait();
}

TEST_F(Rpc, AnRpcBodyMayWaitForOtherRpcsIncludingOnesBackToTheCaller) {
  // Around the ring twice: every rank's body waits for the next, and the chain passes through
  // the caller itself while its main thread waits.
  const int hops = 2 * size();
  std::int64_t expected = 0;
  for (int i = 0; i < hops; ++i) expected = expected * 10 + (rank() + 1 + i) % size();
  EXPECT_EQ(rpc(right(), &hop, hops, std::int64_t{0}).wait(), expected);
  // Nested to self, deeper than the arena has threads.
  EXPECT_EQ(rpc(rank(),
                [] {
                  return rpc(world().rank(),
                             [] { return rpc(world().rank(), [] { return 7; }).wait() + 1; })
                             .wait() +
                         1;
                })
                .wait(),
            9);
  barrier(world());
}

TEST_F(Rpc, TenThousandCallsInFlight) {
  constexpr int calls = 10000;
  std::vector<future<std::int64_t>> futures;
  futures.reserve(calls);
  for (int i = 0; i < calls; ++i) {
    futures.push_back(rpc(
        static_cast<rank_t>(i % size()), [](std::int64_t x) { return x * 2 + world().rank(); },
        std::int64_t{i}));
  }
  std::int64_t sum = 0;
  std::int64_t expected = 0;
  for (int i = 0; i < calls; ++i) {
    sum += futures[static_cast<std::size_t>(i)].wait();
    expected += 2 * i + i % size();
  }
  EXPECT_EQ(sum, expected);
  barrier(world());
}

TEST_F(Rpc, FireAndForgetCallsAllArrive) {
  constexpr int calls = 10000;
  barrier(world());
  const std::int64_t received = g_received.load();
  const std::int64_t summed = g_sum.load();
  barrier(world());
  for (int i = 0; i < calls; ++i) rpc_ff(right(), &add_to_sum, std::int64_t{rank() + 1});
  wait_received(received + calls);  // from the left neighbour
  EXPECT_EQ(g_received.load(), received + calls);
  EXPECT_EQ(g_sum.load(), summed + std::int64_t{calls} * (left() + 1));
  barrier(world());
}

// quiet()'s rpc_ff coverage: calls by level (1: issued by the test, 2: issued by a level-1
// body) and source, counted where they ran.
constexpr int max_ranks = 16;
std::atomic<std::int64_t> g_ran[3][max_ranks];

// The first call of each source (k == 0) takes a while, so calls are still queued when a quiet()
// that did not wait for them would return.
void slow_start(int k) {
  if (k == 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));
}

void level2(std::int32_t from, std::int32_t k) {
  slow_start(k);
  g_ran[2][from].fetch_add(1);
}

void level1(std::int32_t from, std::int32_t k) {
  slow_start(k);
  g_ran[1][from].fetch_add(1);
  // Issued by this rank: its own quiet() covers it, not the caller's.
  rpc_ff((world().rank() + 1) % world().size(), &level2, world().rank(), k);
}

TEST_F(Rpc, QuietReturnsOnceEveryFireAndForgetCallThisRankIssuedRan) {
  ASSERT_LE(size(), max_ranks);
  constexpr int calls = 200;
  for (auto& level : g_ran) {
    for (auto& n : level) n.store(0);
  }
  barrier(world());
  for (int k = 0; k < calls; ++k) {
    for (rank_t d = 0; d < size(); ++d) rpc_ff(d, &level1, rank(), k);
  }
  quiet();
  barrier(world());
  // Every call every rank issued ran (no waiting here).
  for (rank_t src = 0; src < size(); ++src) {
    EXPECT_EQ(g_ran[1][src].load(), calls) << "calls from rank " << src << " after quiet()";
  }
  // The calls the bodies issued are their ranks' own: one more quiet() and barrier covers them
  // (every level-1 body ran, so each was issued before that quiet()).
  quiet();
  barrier(world());
  const rank_t left_rank = (rank() + size() - 1) % size();
  EXPECT_EQ(g_ran[2][left_rank].load(), std::int64_t{calls} * size())
      << "calls issued by the bodies that ran on rank " << left_rank;
  // Nothing outstanding: quiet() returns at once, and again.
  quiet();
  quiet();
  barrier(world());
}

TEST_F(Rpc, ArgumentsAndResultsOfTenMegabytesTravelByRendezvous) {
  barrier(world());
  const heap_stats_t before = heap_stats();
  std::vector<std::uint8_t> big(10 << 20);
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<std::uint8_t>(i * 7 + static_cast<std::size_t>(rank()));
  // Argument and result both large: the target checks and sends back a transformed copy.
  const std::vector<std::uint8_t> back =
      rpc(
          right(),
          [](std::vector<std::uint8_t> v, int from) {
            for (std::size_t i = 0; i < v.size(); ++i) {
              if (v[i] != static_cast<std::uint8_t>(i * 7 + static_cast<std::size_t>(from))) {
                throw std::runtime_error("corrupt");
              }
              v[i] = static_cast<std::uint8_t>(v[i] + 1);
            }
            return v;
          },
          big, static_cast<int>(rank()))
          .wait();
  ASSERT_EQ(back.size(), big.size());
  bool same = true;
  for (std::size_t i = 0; i < big.size(); ++i) {
    same = same && back[i] == static_cast<std::uint8_t>(big[i] + 1);
  }
  EXPECT_TRUE(same);
  // A large span argument and a large string result, and a large rpc_ff.
  EXPECT_EQ(rpc(
                right(), [](std::span<const std::uint8_t> s) { return s.size(); }, big)
                .wait(),
            big.size());
  EXPECT_EQ(rpc(right(), [] { return std::string(10 << 20, 'z'); }).wait(),
            std::string(10 << 20, 'z'));
  const std::int64_t received = g_received.load();
  barrier(world());
  rpc_ff(
      right(),
      [](const std::vector<std::uint8_t>& v) { add_to_sum(static_cast<std::int64_t>(v.size())); },
      big);
  wait_received(received + 1);
  // Every parked byte is given back (the receivers free them; wait for their frees).
  barrier(world());
  rpc(right(), [] {}).wait();
  barrier(world());
  EXPECT_EQ(heap_stats().used, before.used);
}

TEST_F(Rpc, AnRpcIssuedAfterAnotherIsReadyRunsAfterIt) {
  dist_object<std::vector<int>> log(std::vector<int>{});
  for (int i = 0; i < 50; ++i) {
    rpc(
        right(), [](dist_object<std::vector<int>>& d, int v) { d->push_back(v); }, log, i)
        .wait();
  }
  barrier(world());
  std::vector<int> expected(50);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(*log, expected);
  barrier(world());
}

TEST_F(Rpc, DistObjectFetchesSerializableValuesAndIsPassedAsTheTargetsInstance) {
  dist_object<std::string> name("rank" + std::to_string(rank()));
  dist_object<std::vector<int>> values(std::vector<int>(static_cast<std::size_t>(rank()), rank()));
  for (rank_t r = 0; r < size(); ++r) {
    EXPECT_EQ(name.fetch(r).wait(), "rank" + std::to_string(r));
    EXPECT_EQ(values.fetch(r).wait(), std::vector<int>(static_cast<std::size_t>(r), r));
  }
  expect_error(error_class::rank, "dist_object::fetch", [&] { name.fetch(size()); });
  barrier(world());
  // The body gets the target's own instance.
  rpc(
      right(), [](dist_object<std::vector<int>>& d, int x) { d->push_back(x); }, values,
      100 + rank())
      .wait();
  barrier(world());
  EXPECT_EQ(values->back(), 100 + left());
  EXPECT_EQ(values->size(), static_cast<std::size_t>(rank()) + 1);
  // Trivially copyable values still travel by rget.
  dist_object<point> pt(point{rank(), 0.25});
  EXPECT_EQ(pt.fetch(right()).wait(), (point{right(), 0.25}));
  EXPECT_EQ(rpc(
                right(), [](dist_object<point>& d) { return d->x; }, pt)
                .wait(),
            right());
}

TEST_F(Rpc, EncodedFireAndForgetMessagesRunWhenExecutedDirectly) {
  // What an aggregator does: append several messages to one buffer, then run each one.
  const std::int64_t received = g_received.load();
  const std::int64_t summed = g_sum.load();
  std::vector<std::byte> batch;
  pgas::detail::encode_rpc_ff(batch, &add_to_sum, std::int64_t{5});
  const std::size_t first = batch.size();
  pgas::detail::encode_rpc_ff(
      batch, [](std::string s) { add_to_sum(static_cast<std::int64_t>(s.size())); },
      std::string("four"));
  const std::size_t second = batch.size() - first;
  EXPECT_GE(first, pgas::detail::rpc_header_bytes);
  pgas::detail::execute_rpc_ff_message(rank(), std::span<const std::byte>(batch).first(first));
  pgas::detail::execute_rpc_ff_message(rank(),
                                       std::span<const std::byte>(batch).subspan(first, second));
  wait_received(received + 2);
  EXPECT_EQ(g_sum.load(), summed + 9);
  // Bytes that are no rpc_ff message are refused before anything runs.
  expect_error(error_class::arg, "execute_rpc_ff_message", [&] {
    pgas::detail::execute_rpc_ff_message(rank(), std::span<const std::byte>(batch).first(10));
  });
  expect_error(error_class::arg, "execute_rpc_ff_message", [&] {
    pgas::detail::execute_rpc_ff_message(rank(), std::span<const std::byte>(batch));  // two
  });
  std::vector<std::byte> call;
  pgas::detail::encode_rpc(call, pgas::detail::rpc_kind::call, 0, [] {});
  expect_error(error_class::arg, "execute_rpc_ff_message",
               [&] { pgas::detail::execute_rpc_ff_message(rank(), call); });
  // A large one parks its arguments; executing it fetches and frees them.
  const heap_stats_t before = heap_stats();
  std::vector<std::byte> large;
  pgas::detail::encode_rpc_ff(
      large, [](std::vector<char> v) { add_to_sum(static_cast<std::int64_t>(v.size())); },
      std::vector<char>(1 << 20, 'q'));
  EXPECT_LT(large.size(), std::size_t{1024}) << "the arguments were parked";
  pgas::detail::execute_rpc_ff_message(rank(), large);
  wait_received(received + 3);
  EXPECT_EQ(g_sum.load(), summed + 9 + (1 << 20));
  EXPECT_EQ(heap_stats().used, before.used) << "the parked arguments were freed";
  barrier(world());
}

// Run only by pgas.rpc.np2.ff_throws (tests/pgas/CMakeLists.txt), which expects the target's
// message in the job's output: the target aborts, which ends the job.
TEST_F(Rpc, DISABLED_AFireAndForgetBodyThatThrowsAbortsTheTarget) {
  if (size() < 2) return;
  if (rank() == 0)
    rpc_ff(
        1, [](int x) { throw std::runtime_error("ff boom " + std::to_string(x)); }, 23);
  barrier(world());                      // rank 1 dies in it (its arena runs the body meanwhile)
  wait_received(g_received.load() + 1);  // never: the job ends first
}

}  // namespace
}  // namespace oneside::test
