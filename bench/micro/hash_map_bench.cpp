// dist_hash_map (issue 21's two ratios, in one run) and the choice of its local part.
//
//   hash_map_insert/aggregated       every rank inserts 10^7 8-byte keys (insert_or_assign_ff
//                                    through one aggregator, flush at the end); keys owned by
//                                    other ranks only, so every insert crosses ranks
//   hash_map_insert/rpc_async        the same kind of insert, one rpc each
//   (insert_or_assign_async),
//                                    a batch's futures waited at its end (fewer keys: per-insert
//                                    figures compare)
//   hash_map_insert/rpc_blocking     one rpc each, blocking (insert_or_assign)
//   hash_map_find/futures256         find_async with 256 finds outstanding (a ring of futures)
//   hash_map_find/blocking           find, one at a time
//   hash_map_local/sharded_mutex     this rank's own part (a map on a team of one), 2^20 inserts
//                                    from a TBB parallel_for: dist_hash_map's shards of
//                                    std::unordered_map behind mutexes
//   hash_map_local/tbb_concurrent    the same inserts into a oneapi::tbb::concurrent_hash_map
//
// Every rank runs every bench (the lockstep measure: a batch takes the slowest rank's time);
// each checks the map's size afterwards and reports an error instead of a figure when it is
// wrong. Needs 2 ranks for the cross-rank families.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <oneapi/tbb/concurrent_hash_map.h>
#include <oneapi/tbb/parallel_for.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;
using map_t = oneside::dist_hash_map<std::uint64_t, std::uint64_t>;

constexpr std::int64_t aggregated_inserts = 10'000'000;
constexpr std::int64_t async_batch = 4096;
constexpr std::size_t small_key_set = std::size_t{1} << 16;
constexpr std::int64_t blocking_batch = 128;
constexpr std::int64_t find_batch = 4096;
constexpr std::size_t find_window = 256;
constexpr std::int64_t local_inserts = std::int64_t{1} << 20;

// Distinct keys of this rank (a bijective mix of (rank, i)), skipping those it owns itself.
std::vector<std::uint64_t> remote_keys(const map_t& m, std::size_t n, std::uint64_t salt) {
  std::vector<std::uint64_t> keys;
  keys.reserve(n);
  const auto me = static_cast<std::uint64_t>(oneside::world().rank());
  for (std::uint64_t i = 0; keys.size() < n; ++i) {
    const std::uint64_t k = oneside::pgas::detail::mix_hash((me << 48) ^ (salt << 40) ^ i);
    if (m.owner(k) != m.team().rank()) keys.push_back(k);
  }
  return keys;
}

void check_size(benchmark::State& state, const map_t& m, std::uint64_t per_rank) {
  const std::uint64_t want = per_rank * static_cast<std::uint64_t>(oneside::world().size());
  if (m.size() != want) state.SkipWithError("the map holds a wrong number of entries");
}

// ---- inserts ---------------------------------------------------------------------------

// 10^7 insert_or_assign_ff per rank over `distinct` keys (cycled), one aggregator, one flush.
void insert_aggregated(benchmark::State& state, std::size_t distinct) {
  if (!bench::has_ranks(state, 2)) return;
  map_t m;
  const std::vector<std::uint64_t> keys = remote_keys(m, distinct, 1);
  std::size_t next = 0;
  std::uint64_t issued = 0;
  bench::measure(state, aggregated_inserts, [&](std::int64_t k) {
    oneside::aggregator agg;
    for (std::int64_t i = 0; i < k; ++i, next = next + 1 == keys.size() ? 0 : next + 1) {
      m.insert_or_assign_ff(agg, keys[next], keys[next]);
    }
    agg.flush();
    issued += static_cast<std::uint64_t>(k);
  });
  oneside::barrier(oneside::world());
  check_size(state, m, std::min<std::uint64_t>(keys.size(), issued));
}

// One rpc each (insert_or_assign_async), 256 in flight (a ring of futures), over 2^16 keys.
void insert_rpc_window(benchmark::State& state) {
  if (!bench::has_ranks(state, 2)) return;
  map_t m;
  const std::vector<std::uint64_t> keys = remote_keys(m, small_key_set, 2);
  std::size_t next = 0;
  std::uint64_t issued = 0;
  std::deque<oneside::future<bool>> ring;
  bench::measure(state, async_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i, next = (next + 1) % keys.size()) {
      if (ring.size() == find_window) {
        ring.front().wait();
        ring.pop_front();
      }
      ring.push_back(m.insert_or_assign_async(keys[next], keys[next]));
    }
    for (auto& f : ring) f.wait();
    ring.clear();
    issued += static_cast<std::uint64_t>(k);
  });
  oneside::barrier(oneside::world());
  check_size(state, m, std::min<std::uint64_t>(keys.size(), issued));
}

void insert_rpc_blocking(benchmark::State& state) {
  if (!bench::has_ranks(state, 2)) return;
  map_t m;
  const std::vector<std::uint64_t> keys = remote_keys(m, small_key_set, 3);
  std::size_t next = 0;
  std::uint64_t issued = 0;
  bench::measure(state, blocking_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i, next = (next + 1) % keys.size()) {
      m.insert_or_assign(keys[next], keys[next]);
    }
    issued += static_cast<std::uint64_t>(k);
  });
  oneside::barrier(oneside::world());
  check_size(state, m, std::min<std::uint64_t>(keys.size(), issued));
}

// ---- finds -----------------------------------------------------------------------------

// A map of 2^14 remote keys per rank, filled through an aggregator.
struct filled {
  map_t m;
  std::vector<std::uint64_t> keys;
  filled() : keys(remote_keys(m, 1 << 14, 4)) {
    oneside::aggregator agg;
    for (std::uint64_t k : keys) m.insert_ff(agg, k, k + 1);
    agg.flush();
    oneside::barrier(oneside::world());
  }
};

void find_futures(benchmark::State& state) {
  if (!bench::has_ranks(state, 2)) return;
  filled f;
  bool ok = true;
  std::size_t next = 0;
  std::deque<std::pair<std::uint64_t, oneside::future<std::optional<std::uint64_t>>>> ring;
  bench::measure(state, find_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i, next = (next + 1) % f.keys.size()) {
      if (ring.size() == find_window) {
        ok = ok && ring.front().second.wait() == ring.front().first + 1;
        ring.pop_front();
      }
      ring.emplace_back(f.keys[next], f.m.find_async(f.keys[next]));
    }
    for (auto& [key, fut] : ring) ok = ok && fut.wait() == key + 1;
    ring.clear();
  });
  if (!bench::everywhere(ok)) state.SkipWithError("a find returned a wrong value");
}

void find_blocking(benchmark::State& state) {
  if (!bench::has_ranks(state, 2)) return;
  filled f;
  bool ok = true;
  std::size_t next = 0;
  bench::measure(state, blocking_batch, [&](std::int64_t k) {
    for (std::int64_t i = 0; i < k; ++i, next = (next + 1) % f.keys.size()) {
      ok = ok && f.m.find(f.keys[next]) == f.keys[next] + 1;
    }
  });
  if (!bench::everywhere(ok)) state.SkipWithError("a find returned a wrong value");
}

// ---- the local part: shards with mutexes against TBB's concurrent_hash_map ---------------

void local_sharded(benchmark::State& state) {
  const oneside::team self = oneside::world().split(oneside::world().rank(), 0);
  std::int64_t round = 0;
  std::uint64_t entries = 0;
  std::optional<map_t> m;
  m.emplace(self);
  bench::measure(state, local_inserts, [&](std::int64_t k) {
    const auto base = static_cast<std::uint64_t>(round++) * static_cast<std::uint64_t>(k);
    oneapi::tbb::parallel_for(std::int64_t{0}, k, [&](std::int64_t i) {
      const std::uint64_t key =
          oneside::pgas::detail::mix_hash(base + static_cast<std::uint64_t>(i));
      m->insert(key, key);
    });
    entries += static_cast<std::uint64_t>(k);
  });
  if (!bench::everywhere(m->local_size() == entries)) {
    state.SkipWithError("the sharded map lost inserts");
  }
}

void local_tbb(benchmark::State& state) {
  using chm = oneapi::tbb::concurrent_hash_map<std::uint64_t, std::uint64_t>;
  chm m;
  std::int64_t round = 0;
  std::uint64_t entries = 0;
  bench::measure(state, local_inserts, [&](std::int64_t k) {
    const auto base = static_cast<std::uint64_t>(round++) * static_cast<std::uint64_t>(k);
    oneapi::tbb::parallel_for(std::int64_t{0}, k, [&](std::int64_t i) {
      const std::uint64_t key =
          oneside::pgas::detail::mix_hash(base + static_cast<std::uint64_t>(i));
      m.insert({key, key});
    });
    entries += static_cast<std::uint64_t>(k);
  });
  if (!bench::everywhere(m.size() == entries)) state.SkipWithError("the TBB map lost inserts");
}

// ---- registration ------------------------------------------------------------------------

template <class Fn>
benchmark::internal::Benchmark* add(const std::string& name, Fn&& fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->UseManualTime();
}

// Fixed iteration counts keep the run short on a loaded machine: one batch of 10^7 aggregated
// inserts, a few batches of the slow arms.
bool register_all() {
  add("hash_map_insert/aggregated_distinct", [](benchmark::State& s) {
    insert_aggregated(s, aggregated_inserts);
  })->Iterations(aggregated_inserts);
  add("hash_map_insert/aggregated_64k", [](benchmark::State& s) {
    insert_aggregated(s, small_key_set);
  })->Iterations(aggregated_inserts);
  add("hash_map_insert/rpc_window256", insert_rpc_window)->Iterations(4 * async_batch);
  add("hash_map_insert/rpc_blocking", insert_rpc_blocking)->Iterations(4 * blocking_batch);
  add("hash_map_find/futures256", find_futures)->Iterations(4 * find_batch);
  add("hash_map_find/blocking", find_blocking)->Iterations(4 * blocking_batch);
  add("hash_map_local/sharded_mutex", local_sharded)->Iterations(4 * local_inserts);
  add("hash_map_local/tbb_concurrent", local_tbb)->Iterations(4 * local_inserts);
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
