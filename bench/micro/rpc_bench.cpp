// rpc and rpc_ff next to the transport's raw active messages, in one run: "rpc round trip: N×
// the active-message round trip" is a ratio of two figures one process measured seconds
// apart (issue 21's target: at most 2× between node peers). Rank 0 is the origin, rank 1 the
// target; further ranks idle.
//
//   rpc_round_trip/rpc_empty      rpc(1, [] {}).wait()
//   rpc_round_trip/rpc_int        rpc(1, [](int x) { return x + 1; }, i).wait()
//   rpc_round_trip/am             am_send of 8 bytes to rank 1, whose handler am_sends 8 bytes
//                                 back; the origin's handler flags it, the origin waits for
//                                 the flag (the transport's own ping-pong)
//   rpc_ff_rate/rpc_ff            rpc_ff(1, fn, i) whose body counts; the batch ends when rank
//                                 1 counted them all (messages/s of one rank pair)
//   rpc_ff_rate/aggregated        the same calls through an aggregator (agg.rpc_ff, flush() at
//                                 the batch's end): a buffer of calls is one message and one
//                                 task of the target's arena
//   rpc_ff_rate/am                am_send of 8 bytes whose handler counts, the same batch
//
// Each bench checks what the target saw (values returned, counts) and reports an error
// instead of a figure when it is wrong.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>
#include <oneside/pgas/rpc.hpp>
#include <oneside/runtime/wait.hpp>

#include "bench_support.hpp"
#include "runtime/transport.hpp"

namespace {

namespace bench = oneside::bench;
namespace transport = oneside::transport;
using oneside::rank_t;

constexpr rank_t origin_rank = 0;
constexpr rank_t target_rank = 1;
constexpr std::int64_t round_trip_batch = 1000;
constexpr std::int64_t rate_batch = 10000;

// What the handlers and bodies leave in this process.
std::atomic<std::int64_t> g_pongs{0};
std::atomic<std::int64_t> g_counted{0};

void take_ping(transport::backend& t, rank_t source, std::span<const std::byte> payload);
void take_pong(transport::backend& t, rank_t source, std::span<const std::byte> payload);
void take_count(transport::backend& t, rank_t source, std::span<const std::byte> payload);

const transport::am_handler_id ping_handler =
    transport::register_am_handler("oneside.bench.rpc.ping", &take_ping);
const transport::am_handler_id pong_handler =
    transport::register_am_handler("oneside.bench.rpc.pong", &take_pong);
const transport::am_handler_id count_handler =
    transport::register_am_handler("oneside.bench.rpc.count", &take_count);

void take_ping(transport::backend& t, rank_t source, std::span<const std::byte> payload) {
  t.am_send(source, pong_handler, payload);
}
void take_pong(transport::backend& t, rank_t, std::span<const std::byte>) {
  g_pongs.fetch_add(1, std::memory_order_release);
  oneside::detail::notify(t.local_doorbell());
}
void take_count(transport::backend& t, rank_t, std::span<const std::byte>) {
  g_counted.fetch_add(1, std::memory_order_release);
  oneside::detail::notify(t.local_doorbell());
}

// The count at which the target's wait ends (it wakes itself then, not at every call).
std::atomic<std::int64_t> g_goal{0};

void count_one(std::int64_t) {
  if (g_counted.fetch_add(1, std::memory_order_acq_rel) + 1 == g_goal.load()) {
    oneside::wake(oneside::world().rank());
  }
}

bool is_origin() {
  return oneside::world().rank() == origin_rank;
}
bool is_target() {
  return oneside::world().rank() == target_rank;
}
using bench::everywhere;

// Rank 0 to rank 1: skipped with fewer ranks.
bool has_target(benchmark::State& state) {
  return bench::has_ranks(state, target_rank + 1);
}

// A few operations first, then the lockstep measurement (every rank runs `batch(k)`).
template <class Batch>
void run(benchmark::State& state, std::int64_t ops_per_batch, Batch&& batch) {
  batch(std::min<std::int64_t>(16, ops_per_batch));
  oneside::barrier(oneside::world());
  bench::measure(state, ops_per_batch, batch);
}

// ---- round trips ----------------------------------------------------------------------------

void rpc_empty(benchmark::State& state) {
  if (!has_target(state)) return;
  run(state, round_trip_batch, [](std::int64_t k) {
    if (!is_origin()) return;
    for (std::int64_t i = 0; i < k; ++i) oneside::rpc(target_rank, [] {}).wait();
  });
}

void rpc_int(benchmark::State& state) {
  if (!has_target(state)) return;
  bool ok = true;
  run(state, round_trip_batch, [&](std::int64_t k) {
    if (!is_origin()) return;
    for (std::int64_t i = 0; i < k; ++i) {
      const int x = static_cast<int>(i);
      ok = ok && oneside::rpc(
                     target_rank, [](int v) { return v + 1; }, x)
                         .wait() == x + 1;
    }
  });
  if (!everywhere(ok)) state.SkipWithError("an rpc returned a wrong value");
}

void am_round_trip(benchmark::State& state) {
  if (!has_target(state)) return;
  transport::backend& t = transport::current("bench");
  run(state, round_trip_batch, [&](std::int64_t k) {
    if (!is_origin()) return;
    for (std::int64_t i = 0; i < k; ++i) {
      const std::int64_t expected = g_pongs.load(std::memory_order_relaxed) + 1;
      t.am_send(target_rank, ping_handler, std::as_bytes(std::span(&i, 1)));
      oneside::detail::wait_until(
          t.local_doorbell(), [&] { return g_pongs.load(std::memory_order_acquire) >= expected; });
    }
  });
}

// ---- rates ----------------------------------------------------------------------------------

// The target waits until it counted the batch; the origin sends it with `send`, then calls
// `done`.
template <class Send, class Done = void (*)()>
void rate(
    benchmark::State& state, Send&& send, Done done = [] {}) {
  if (!has_target(state)) return;
  transport::backend& t = transport::current("bench");
  bool ok = true;
  run(state, rate_batch, [&](std::int64_t k) {
    const std::int64_t start = g_counted.load(std::memory_order_acquire);
    g_goal.store(start + k);
    oneside::barrier(oneside::world());  // the target read its count before anything is sent
    if (is_origin()) {
      for (std::int64_t i = 0; i < k; ++i) send(i);
      done();
    } else if (is_target()) {
      oneside::detail::wait_until(t.local_doorbell(), [&] {
        return g_counted.load(std::memory_order_acquire) >= start + k;
      });
      ok = ok && g_counted.load() == start + k;
    }
  });
  if (!everywhere(ok)) state.SkipWithError("the target counted a wrong number of messages");
}

void rpc_ff_rate(benchmark::State& state) {
  rate(state, [](std::int64_t i) { oneside::rpc_ff(target_rank, &count_one, i); });
}

void rpc_ff_aggregated_rate(benchmark::State& state) {
  if (!has_target(state)) return;
  oneside::aggregator agg;
  rate(
      state, [&agg](std::int64_t i) { agg.rpc_ff(target_rank, &count_one, i); },
      [&agg] { agg.flush(); });
}

void am_rate(benchmark::State& state) {
  transport::backend& t = transport::current("bench");
  rate(state, [&t](std::int64_t i) {
    t.am_send(target_rank, count_handler, std::as_bytes(std::span(&i, 1)));
  });
}

// ---- registration -------------------------------------------------------------------------

template <class Fn>
benchmark::internal::Benchmark* add(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->UseManualTime();
}

// Each rpc bench right before its active-message baseline.
bool register_all() {
  add("rpc_round_trip/rpc_empty", rpc_empty);
  add("rpc_round_trip/rpc_int", rpc_int);
  add("rpc_round_trip/am", am_round_trip);
  add("rpc_ff_rate/rpc_ff", rpc_ff_rate);
  add("rpc_ff_rate/aggregated", rpc_ff_aggregated_rate);
  add("rpc_ff_rate/am", am_rate);
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
