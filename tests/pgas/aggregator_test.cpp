// Aggregators (aggregator.hpp): every atomic on every integer type against a model, with and
// without combining, direct and node routing, shipped by flush(), quiet() and the destructor;
// aggregated atomics mixed with ordinary ones on the same words (no lost update); rputs and
// messages applied in the documented order; plain (non-atomic) application against the model
// where each word has one writer; every rank flooding every other with far more than
// its buffers hold (bounded memory, no deadlock); bad input refused at the call with nothing
// buffered.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <oneside/oneside.hpp>

#include "expect_error.hpp"
#include "pgas_test.hpp"
#include "reference_ops.hpp"
#include "resident.hpp"
#include "runtime/transport.hpp"

namespace oneside::test {
namespace {

// The operations an aggregator offers, as the reference model (reference_ops.hpp) names them.
constexpr std::array<op, 6> word_ops{op::sum, op::min, op::max, op::band, op::bor, op::bxor};
enum class flush_by : int { flush, quiet, destructor };

constexpr int words_per_rank = 64;

// Word i of every rank takes one operation (i mod 6), so the updates of all ranks on it
// commute and the final value is the model's whatever the order of arrival.
op op_of_word(int i) {
  return word_ops[static_cast<std::size_t>(i) % word_ops.size()];
}

template <class T>
T initial(rank_t r, int i) {
  std::mt19937_64 g(static_cast<std::uint64_t>(r) * 1000003U + static_cast<std::uint64_t>(i));
  return static_cast<T>(g());
}

// One update of source `s`'s stream: (destination, word, operand).
template <class T>
struct update_stream {
  update_stream(rank_t s, int salt)
      : g(static_cast<std::uint64_t>(s) * 7919U + 17U * static_cast<std::uint64_t>(salt)) {}
  std::tuple<rank_t, int, T> next(int ranks) {
    const auto d = static_cast<rank_t>(g() % static_cast<std::uint64_t>(ranks));
    const auto i = static_cast<int>(g() % words_per_rank);
    // Few distinct operands for and/or (else every word soon saturates), full range otherwise.
    std::uint64_t v = g();
    if (op_of_word(i) == op::band) v |= ~(std::uint64_t{1} << (g() % 64));
    if (op_of_word(i) == op::bor) v = std::uint64_t{1} << (g() % 64);
    return {d, i, static_cast<T>(v)};
  }
  std::mt19937_64 g;
};

template <class T>
void issue(aggregator& agg, global_ptr<T> p, op o, T v) {
  switch (o) {
    case op::sum:
      agg.atomic_add(p, v);
      break;
    case op::min:
      agg.atomic_min(p, v);
      break;
    case op::max:
      agg.atomic_max(p, v);
      break;
    case op::band:
      agg.atomic_and(p, v);
      break;
    case op::bor:
      agg.atomic_or(p, v);
      break;
    case op::bxor:
      agg.atomic_xor(p, v);
      break;
    default:
      ADD_FAILURE() << "no aggregated form of this op";
  }
}

int updates_per_rank() {
  return transport::current("test").name() == "shm" ? 20000 : 5000;
}

// Every rank sends its stream of updates to every rank's words (its own included), ships them
// as `how` says, and checks its words against the model of all ranks' streams.
template <class T>
void check_against_model(const aggregator_options& options, flush_by how, int salt) {
  const global_ptr<T> mine = allocate<T>(words_per_rank);
  for (int i = 0; i < words_per_rank; ++i) mine.local()[i] = initial<T>(world().rank(), i);
  const std::vector<global_ptr<T>> all = everyones(mine);
  barrier(world());
  const int n = updates_per_rank();
  {
    aggregator agg(options);
    update_stream<T> s(world().rank(), salt);
    for (int k = 0; k < n; ++k) {
      const auto [d, i, v] = s.next(world().size());
      issue(agg, all[static_cast<std::size_t>(d)] + i, op_of_word(i), v);
    }
    if (how == flush_by::flush) agg.flush();
    if (how == flush_by::quiet) quiet();
  }  // flush_by::destructor: here
  barrier(world());
  std::vector<T> model(words_per_rank);
  for (int i = 0; i < words_per_rank; ++i)
    model[static_cast<std::size_t>(i)] = initial<T>(world().rank(), i);
  for (rank_t src = 0; src < world().size(); ++src) {
    update_stream<T> s(src, salt);
    for (int k = 0; k < n; ++k) {
      const auto [d, i, v] = s.next(world().size());
      if (d != world().rank()) continue;
      T& m = model[static_cast<std::size_t>(i)];
      m = reference_apply(op_of_word(i), m, v);
    }
  }
  int wrong = 0;
  for (int i = 0; i < words_per_rank; ++i) {
    if (mine.local()[i] != model[static_cast<std::size_t>(i)] && ++wrong <= 3) {
      ADD_FAILURE() << "word " << i << " (op " << static_cast<int>(op_of_word(i)) << ", "
                    << sizeof(T) << " bytes): " << +mine.local()[i] << ", model "
                    << +model[static_cast<std::size_t>(i)];
    }
  }
  EXPECT_EQ(wrong, 0);
  barrier(world());
  deallocate(mine);
}

// How updates reach node peers and other nodes: direct routing with the origin applying what
// it loads and stores, direct routing with every buffer a message, node routing.
enum class path : int { origin_applies, messages, node_routed };

aggregator_options options_of(bool combine, path p) {
  return {.combine = combine,
          .routing = p == path::node_routed ? aggregator_routing::node : aggregator_routing::direct,
          .apply_at_origin = p != path::messages};
}

using model_param = std::tuple<bool, flush_by, path>;

class AggregatorModel : public PgasTest, public ::testing::WithParamInterface<model_param> {};

TEST_P(AggregatorModel, EveryOperationAndTypeMatchesTheModel) {
  const auto [combine, how, p] = GetParam();
  const aggregator_options o = options_of(combine, p);
  check_against_model<std::int32_t>(o, how, 1);
  check_against_model<std::uint32_t>(o, how, 2);
  check_against_model<std::int64_t>(o, how, 3);
  check_against_model<std::uint64_t>(o, how, 4);
  check_against_model<long long>(o, how, 5);
  check_against_model<unsigned long long>(o, how, 6);
}

std::string model_name(const ::testing::TestParamInfo<model_param>& info) {
  const std::array<const char*, 3> flushes{"Flush", "Quiet", "Destructor"};
  const std::array<const char*, 3> paths{"OriginApplies", "Messages", "NodeRouted"};
  return std::string(std::get<0>(info.param) ? "Combining" : "Plain") +
         flushes[static_cast<std::size_t>(std::get<1>(info.param))] +
         paths[static_cast<std::size_t>(std::get<2>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(
    Options, AggregatorModel,
    ::testing::Combine(::testing::Bool(),
                       ::testing::Values(flush_by::flush, flush_by::quiet, flush_by::destructor),
                       ::testing::Values(path::origin_applies, path::messages, path::node_routed)),
    model_name);

class Aggregator : public PgasTest {};

// n zeroed words of this rank's heap (deallocate() frees them).
global_ptr<std::int64_t> zeroed(int n) {
  const global_ptr<std::int64_t> p = allocate<std::int64_t>(static_cast<std::size_t>(n));
  std::fill_n(p.local(), n, std::int64_t{0});
  return p;
}

// atomic_apply = false: plain loads and stores where the buffers are applied. Each word has one
// writer (no lost update then): words [0, 64) of every rank are updated only by its left
// neighbour (through messages its progress applies), words [64, 128) only by itself (buffered
// too, applied when the buffer ships). Every operation, 32- and 64-bit words, small buffers.
template <class T>
void check_plain_against_model(const aggregator_options& options, int salt) {
  const int n = updates_per_rank();
  const global_ptr<T> mine = allocate<T>(2 * words_per_rank);
  for (int i = 0; i < 2 * words_per_rank; ++i) mine.local()[i] = initial<T>(world().rank(), i);
  const std::vector<global_ptr<T>> all = everyones(mine);
  const rank_t right = (world().rank() + 1) % world().size();
  const rank_t left = (world().rank() + world().size() - 1) % world().size();
  barrier(world());
  {
    aggregator agg(options);
    update_stream<T> s(world().rank(), salt);
    for (int k = 0; k < n; ++k) {
      const auto [d, i, v] = s.next(2);  // d: 0 the right neighbour's words, 1 my own
      const bool own = d == 1 || world().size() == 1;
      issue(agg, own ? mine + words_per_rank + i : all[static_cast<std::size_t>(right)] + i,
            op_of_word(i), v);
    }
    quiet();
  }
  barrier(world());
  std::vector<T> model(2 * words_per_rank);
  for (int i = 0; i < 2 * words_per_rank; ++i)
    model[static_cast<std::size_t>(i)] = initial<T>(world().rank(), i);
  for (const rank_t src : {left, world().rank()}) {
    update_stream<T> s(src, salt);
    for (int k = 0; k < n; ++k) {
      const auto [d, i, v] = s.next(2);
      const bool own = d == 1 || world().size() == 1;
      if (own != (src == world().rank())) continue;
      T& m = model[static_cast<std::size_t>(own ? words_per_rank + i : i)];
      m = reference_apply(op_of_word(i), m, v);
    }
    if (left == world().rank()) break;  // one rank: only its own updates
  }
  int wrong = 0;
  for (int i = 0; i < 2 * words_per_rank; ++i) {
    if (mine.local()[i] != model[static_cast<std::size_t>(i)] && ++wrong <= 3) {
      ADD_FAILURE() << "word " << i << " (" << sizeof(T) << " bytes): " << +mine.local()[i]
                    << ", model " << +model[static_cast<std::size_t>(i)];
    }
  }
  EXPECT_EQ(wrong, 0);
  barrier(world());
  deallocate(mine);
}

TEST_F(Aggregator, PlainApplyMatchesTheModelWhenEachWordHasOneWriter) {
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{256}}) {
    const aggregator_options o{
        .buffer_bytes = bytes, .routing = aggregator_routing::direct, .atomic_apply = false};
    check_plain_against_model<std::int32_t>(o, 11);
    check_plain_against_model<std::uint32_t>(o, 12);
    check_plain_against_model<std::int64_t>(o, 13);
    check_plain_against_model<std::uint64_t>(o, 14);
  }
}

TEST_F(Aggregator, PlainApplyBuffersThisRanksOwnWordsAndKeepsTheirOrderWithRputs) {
  const global_ptr<std::int64_t> mine = zeroed(2);
  {
    aggregator agg({.atomic_apply = false});
    agg.atomic_add(mine, std::int64_t{5});
    agg.rput(std::int64_t{7}, mine + 1);
    EXPECT_EQ(mine.local()[0], 0) << "a plain update of this rank's word applied at the call";
    EXPECT_EQ(mine.local()[1], 0) << "an rput after a buffered update overtook it";
    agg.rput(std::int64_t{40}, mine);
    agg.atomic_add(mine, std::int64_t{2});
    agg.atomic_xor(mine + 1, std::int64_t{1});
    agg.flush();
    EXPECT_EQ(mine.local()[0], 42) << "add, rput, add applied out of order";
    EXPECT_EQ(mine.local()[1], 6);
  }
  barrier(world());
  deallocate(mine);
}

// Small buffers (many shipped while filling) give the same results.
TEST_F(Aggregator, SmallBuffersMatchTheModel) {
  for (bool combine : {false, true}) {
    for (path p : {path::origin_applies, path::messages, path::node_routed}) {
      aggregator_options o = options_of(combine, p);
      o.buffer_bytes = 128;
      o.buffers = 2;
      check_against_model<std::int64_t>(o, flush_by::flush, 7);
    }
  }
}

// Aggregated adds and ordinary atomic_adds of every rank on the same words: none is lost.
TEST_F(Aggregator, AtomicWithOrdinaryAtomicsOnTheSameWords) {
  const global_ptr<std::int64_t> mine = zeroed(8);
  const std::vector<global_ptr<std::int64_t>> all = everyones(mine);
  barrier(world());
  const int n = updates_per_rank();
  {
    aggregator agg({.combine = true});
    for (int k = 0; k < n; ++k) {
      const global_ptr<std::int64_t> p =
          all[static_cast<std::size_t>(k % world().size())] + (k % 8);
      if (k % 2 == 0) {
        agg.atomic_add(p, std::int64_t{1});
      } else {
        (void)atomic_add(p, std::int64_t{1});
      }
    }
    quiet();
  }
  barrier(world());
  std::int64_t total = 0;
  for (int i = 0; i < 8; ++i) total += mine.local()[i];
  const long long everyone = allreduce(world(), static_cast<long long>(total), op::sum);
  EXPECT_EQ(everyone, static_cast<long long>(n) * world().size());
  barrier(world());
  deallocate(mine);
}

// Rputs of one aggregator to one destination apply in order: the last value to a slot wins.
TEST_F(Aggregator, RputsApplyInIssueOrder) {
  constexpr int slots = 16;
  const global_ptr<std::int64_t> mine = zeroed(slots * 64);
  const std::vector<global_ptr<std::int64_t>> all = everyones(mine);
  barrier(world());
  const int rounds = 200;
  for (bool here : {false, true}) {  // both paths to node peers; the same final state
    aggregator agg({.buffer_bytes = 256, .buffers = 2, .apply_at_origin = here});
    for (int round = 0; round < rounds; ++round) {
      for (rank_t d = 0; d < world().size(); ++d) {
        // This rank's slots at d, one value each and a span of three.
        const global_ptr<std::int64_t> base =
            all[static_cast<std::size_t>(d)] + world().rank() * slots;
        agg.rput(std::int64_t{round * 1000 + d}, base + round % slots);
        const std::array<std::int64_t, 3> three{round, round + 1, round + 2};
        agg.rput(std::span<const std::int64_t>(three), base + slots - 3);
      }
    }
    agg.flush();
  }
  barrier(world());
  for (rank_t src = 0; src < world().size(); ++src) {
    const std::int64_t* got = mine.local() + src * slots;
    for (int s = 0; s < slots - 3; ++s) {
      int last = -1;
      for (int round = 0; round < rounds; ++round) {
        if (round % slots == s) last = round;
      }
      EXPECT_EQ(got[s], last * 1000 + world().rank()) << "slot " << s << " from rank " << src;
    }
    EXPECT_EQ(got[slots - 3], rounds - 1);
    EXPECT_EQ(got[slots - 2], rounds);
    EXPECT_EQ(got[slots - 1], rounds + 1);
  }
  barrier(world());
  deallocate(mine);
}

// quiet() on any thread flushes every live aggregator of the rank.
TEST_F(Aggregator, QuietOnAnotherThreadFlushes) {
  const global_ptr<std::int64_t> mine = zeroed(4);
  const std::vector<global_ptr<std::int64_t>> all = everyones(mine);
  barrier(world());
  aggregator agg;
  for (rank_t d = 0; d < world().size(); ++d) {
    for (int i = 0; i < 4; ++i)
      agg.atomic_or(all[static_cast<std::size_t>(d)] + i, std::int64_t{1} << rank());
  }
  std::thread([] { quiet(); }).join();
  barrier(world());
  const std::int64_t everyone = (std::int64_t{1} << world().size()) - 1;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(mine.local()[i], everyone) << "word " << i;
  barrier(world());
  deallocate(mine);
}

// ---- messages ---------------------------------------------------------------------------

struct received {
  std::mutex mutex;
  std::vector<std::vector<std::uint32_t>> by_source;  // sequence numbers, in arrival order
  std::vector<std::size_t> bytes;                     // total bytes by source
};
received& inbox() {
  static received r;
  return r;
}

void take_message(rank_t source, std::span<const std::byte> bytes) {
  std::uint32_t seq = 0;
  std::memcpy(&seq, bytes.data(), sizeof seq);
  // The rest of the message repeats its first byte.
  for (std::size_t i = sizeof seq; i < bytes.size(); ++i) {
    if (bytes[i] != static_cast<std::byte>(seq & 0xFF)) std::abort();
  }
  received& r = inbox();
  const std::lock_guard lock(r.mutex);
  r.by_source[static_cast<std::size_t>(source)].push_back(seq);
  r.bytes[static_cast<std::size_t>(source)] += bytes.size();
}

const aggregated_handler_id g_take_message =
    register_aggregated_handler("oneside.test.take_message", &take_message);

TEST_F(Aggregator, MessagesRunAtTheirTargetInOrder) {
  {
    received& r = inbox();
    const std::lock_guard lock(r.mutex);
    r.by_source.assign(static_cast<std::size_t>(world().size()), {});
    r.bytes.assign(static_cast<std::size_t>(world().size()), 0);
  }
  EXPECT_EQ(register_aggregated_handler("oneside.test.take_message", &take_message),
            g_take_message);
  barrier(world());
  const int n = 3000;
  std::vector<std::size_t> sent(static_cast<std::size_t>(world().size()), 0);
  {
    aggregator agg({.buffer_bytes = 1024, .buffers = 2, .combine = true});
    std::mt19937 g(static_cast<unsigned>(world().rank()));
    std::vector<std::byte> msg;
    for (int k = 0; k < n; ++k) {
      for (rank_t d = 0; d < world().size(); ++d) {
        const std::size_t len = k == 0 ? agg.max_message_bytes() : 4 + g() % 60;
        msg.assign(len, static_cast<std::byte>(k & 0xFF));
        const auto seq = static_cast<std::uint32_t>(k);
        std::memcpy(msg.data(), &seq, sizeof seq);
        agg.send(d, g_take_message, msg);
        sent[static_cast<std::size_t>(d)] += len;
      }
    }
    agg.flush();
  }
  barrier(world());
  const std::vector<unsigned long long> sent_to_me = [&] {
    std::vector<unsigned long long> mine(sent.begin(), sent.end());
    std::vector<unsigned long long> out(static_cast<std::size_t>(world().size() * world().size()));
    allgather(world(), mine, out);
    return out;
  }();
  received& r = inbox();
  const std::lock_guard lock(r.mutex);
  for (rank_t src = 0; src < world().size(); ++src) {
    const std::vector<std::uint32_t>& got = r.by_source[static_cast<std::size_t>(src)];
    ASSERT_EQ(got.size(), static_cast<std::size_t>(n)) << "from rank " << src;
    for (int k = 0; k < n; ++k) {
      EXPECT_EQ(got[static_cast<std::size_t>(k)], static_cast<std::uint32_t>(k))
          << "message " << k << " from rank " << src << " out of order";
      if (got[static_cast<std::size_t>(k)] != static_cast<std::uint32_t>(k)) break;
    }
    EXPECT_EQ(r.bytes[static_cast<std::size_t>(src)],
              sent_to_me[static_cast<std::size_t>(src * world().size() + world().rank())]);
  }
}

// ---- bounded memory ----------------------------------------------------------------------

// Every rank floods every other rank at once with far more updates than its buffers hold
// (two buffers of 256 bytes per destination: ten records each): each sender must make
// progress while its buffers are in flight, and nothing grows.
TEST_F(Aggregator, FloodOfEveryRankToEveryRankNeitherGrowsNorDeadlocks) {
  const global_ptr<std::int64_t> mine = zeroed(64);
  const std::vector<global_ptr<std::int64_t>> all = everyones(mine);
  barrier(world());
  const int n = 10 * updates_per_rank();
  // Every buffer a message (apply_at_origin off): the flood goes through the targets' progress.
  aggregator agg({.buffer_bytes = 256, .buffers = 2, .apply_at_origin = false});
  EXPECT_EQ(agg.buffers(), 2);
  EXPECT_EQ(agg.buffer_bytes(), 256U);
  for (int k = 0; k < 2000; ++k) {  // the paths' first-use allocations before measuring
    agg.atomic_add(all[static_cast<std::size_t>(k % world().size())] + k % 64, std::int64_t{1});
  }
  agg.flush();
  const long before = resident_kib();
  for (int k = 0; k < n; ++k) {
    agg.atomic_add(
        all[static_cast<std::size_t>((world().rank() + 1 + k) % world().size())] + k % 64,
        std::int64_t{1});
  }
  const long growth = resident_kib() - before;
  agg.flush();
  RecordProperty("resident_growth_kib", static_cast<int>(growth));
  EXPECT_LT(growth, 8 * 1024) << n << " aggregated updates held " << growth << " KiB";
  barrier(world());
  std::int64_t total = 0;
  for (int i = 0; i < 64; ++i) total += mine.local()[i];
  const long long everyone = allreduce(world(), static_cast<long long>(total), op::sum);
  EXPECT_EQ(everyone, static_cast<long long>(n + 2000) * world().size());
  barrier(world());
  deallocate(mine);
}

// ---- settings and routing ----------------------------------------------------------------

TEST_F(Aggregator, OptionsOverrideSettingsAndNodeRoutingFollowsTheLayout) {
  const aggregator plain;
  EXPECT_GE(plain.buffers(), 2);
  EXPECT_LE(plain.buffer_bytes(), transport::current("test").caps().max_am_payload);
  EXPECT_EQ(plain.max_rput_bytes(), std::min<std::size_t>(1024, plain.max_message_bytes()));
  EXPECT_FALSE(plain.is_combining());
  const aggregator direct({.routing = aggregator_routing::direct});
  EXPECT_FALSE(direct.is_node_routed());
  const aggregator node({.routing = aggregator_routing::node});
  EXPECT_TRUE(node.is_node_routed());
  // automatic: node routing only when another node holds more than one rank.
  const aggregator automatic({.routing = aggregator_routing::automatic});
  const int local = local_team().size();
  const std::vector<int> node_sizes = allgather(world(), local);
  bool other_node_of_several = false;
  for (rank_t r = 0; r < world().size(); ++r) {
    if (local_team().from_world(r) == no_rank && node_sizes[static_cast<std::size_t>(r)] > 1) {
      other_node_of_several = true;
    }
  }
  EXPECT_EQ(automatic.is_node_routed(), other_node_of_several);
  expect_error(error_class::arg, "aggregator", [] { aggregator bad({.buffers = 1}); });
  expect_error(error_class::arg, "aggregator", [] { aggregator bad({.buffer_bytes = 16}); });
}

// ---- bad input -----------------------------------------------------------------------------

TEST_F(Aggregator, BadInputIsRefusedAtTheCallAndNothingIsBuffered) {
  const global_ptr<std::int64_t> mine = new_<std::int64_t>(5);
  const std::vector<global_ptr<std::int64_t>> all = everyones(mine);
  std::int64_t on_stack = 33;
  const auto stacks = allgather(world(), reinterpret_cast<std::uint64_t>(&on_stack));
  barrier(world());
  const rank_t right_rank = right();
  const global_ptr<std::int64_t> target = all[static_cast<std::size_t>(right_rank)];
  {
    aggregator agg;
    expect_error(error_class::arg, "aggregator::atomic_add",
                 [&] { agg.atomic_add(global_ptr<std::int64_t>(), std::int64_t{1}); });
    expect_error(error_class::rank, "aggregator::atomic_min", [&] {
      agg.atomic_min(global_ptr<std::int64_t>(world().size(), target.address()), std::int64_t{1});
    });
    const global_ptr<std::int32_t> odd(right_rank, target.address() + 2);
    expect_error(error_class::arg, "aggregator::atomic_or", [&] { agg.atomic_or(odd, 1); });
    const global_ptr<std::int64_t> off_heap(right_rank,
                                            stacks[static_cast<std::size_t>(right_rank)]);
    expect_error(error_class::rma_range, "aggregator::atomic_xor",
                 [&] { agg.atomic_xor(off_heap, std::int64_t{1}); });
    expect_error(error_class::rma_range, "aggregator::rput",
                 [&] { agg.rput(std::int64_t{1}, off_heap); });
    const std::vector<std::int64_t> big(agg.max_rput_bytes() / sizeof(std::int64_t) + 1, 9);
    expect_error(error_class::arg, "aggregator::rput",
                 [&] { agg.rput(std::span<const std::int64_t>(big), target); });
    expect_error(error_class::arg, "aggregator::rput",
                 [&] { agg.rput(std::int64_t{1}, global_ptr<std::int64_t>()); });
    const std::vector<std::byte> msg(8);
    expect_error(error_class::arg, "aggregator::send",
                 [&] { agg.send(right_rank, 0x12345678U, msg); });
    const std::vector<std::byte> huge(agg.max_message_bytes() + 1);
    expect_error(error_class::arg, "aggregator::send",
                 [&] { agg.send(right_rank, g_take_message, huge); });
    expect_error(error_class::rank, "aggregator::send", [&] { agg.send(-1, g_take_message, msg); });
    agg.flush();
  }
  barrier(world());
  EXPECT_EQ(*mine.local(), 5) << "a refused call changed the target";
  EXPECT_EQ(on_stack, 33);
  barrier(world());
  delete_(mine);
}

}  // namespace
}  // namespace oneside::test
