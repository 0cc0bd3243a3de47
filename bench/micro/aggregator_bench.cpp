// Aggregation (aggregator.hpp) against its alternatives, in one run: rank 0 adds 1 to random
// 8-byte words of a table of 2^20 words on rank 1 (8 MiB; a node peer on the shm transport, a
// remote rank with ONESIDE_TRANSPORT=mpi under mpirun). Further ranks idle.
//
//   aggregator_add/aggregated        agg.atomic_add per update, agg.flush() per batch: each
//                                    buffer an active message the target's progress applies
//   aggregator_add/aggregated_origin the same with apply_at_origin: on shm the origin applies
//                                    each shipped buffer itself (MPI: as aggregated)
//   aggregator_add/aggregated_node   the same, ONESIDE_AGG_ROUTING's choice replaced by node
//                                    routing (the same as direct unless nodes hold several ranks)
//   aggregator_add/per_update        oneside::atomic_add per update (future dropped: fire and
//                                    forget), quiet() per batch
//   aggregator_add/hand              hand aggregation: the origin packs the batch's word indices
//                                    and rputs them in one span into a landing area of rank 1,
//                                    which applies them with CPU atomics after a barrier
//
// Times are per update, a batch of 65536 updates (the batch's time is the slower rank's, the
// target's work included: the aggregated and per-update targets serve by their progress, the
// hand target by its own loop). Each bench checks afterwards that the table's sum is the number
// of updates the origin issued and reports an error instead of a figure otherwise.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "bench_support.hpp"

namespace {

namespace bench = oneside::bench;
using oneside::global_ptr;
using oneside::rank_t;

constexpr rank_t origin_rank = 0;
constexpr rank_t target_rank = 1;
constexpr std::size_t table_words = std::size_t{1} << 20;
constexpr std::int64_t updates_per_batch = 65536;

enum class add_kind { aggregated, aggregated_origin, aggregated_node, per_update, hand };

// Every rank's table and landing area (rank 1's used), zeroed; the word indices the origin
// cycles through. Collective both ways.
class add_setup {
 public:
  add_setup()
      : table_(oneside::allocate<std::int64_t>(table_words)),
        landing_(oneside::allocate<std::uint32_t>(static_cast<std::size_t>(updates_per_batch))),
        indices_(static_cast<std::size_t>(updates_per_batch) * 4) {
    std::fill_n(table_.local(), table_words, 0);
    std::fill_n(landing_.local(), updates_per_batch, 0U);
    const oneside::team& w = oneside::world();
    const auto tables = oneside::allgather(w, static_cast<std::uint64_t>(table_.address()));
    const auto landings = oneside::allgather(w, static_cast<std::uint64_t>(landing_.address()));
    target_table_ = global_ptr<std::int64_t>(
        target_rank, static_cast<std::uintptr_t>(tables[static_cast<std::size_t>(target_rank)]));
    target_landing_ = global_ptr<std::uint32_t>(
        target_rank, static_cast<std::uintptr_t>(landings[static_cast<std::size_t>(target_rank)]));
    std::mt19937_64 g(12345);
    for (std::uint32_t& i : indices_) i = static_cast<std::uint32_t>(g() % table_words);
    oneside::barrier(w);
  }
  add_setup(const add_setup&) = delete;
  add_setup& operator=(const add_setup&) = delete;
  ~add_setup() {
    oneside::barrier(oneside::world());
    oneside::deallocate(landing_);
    oneside::deallocate(table_);
  }

  std::uint32_t next_index() {
    const std::uint32_t i = indices_[next_];
    next_ = next_ + 1 == indices_.size() ? 0 : next_ + 1;
    return i;
  }
  global_ptr<std::int64_t> target_table() const noexcept { return target_table_; }
  global_ptr<std::uint32_t> target_landing() const noexcept { return target_landing_; }
  std::int64_t* table() const { return table_.local(); }
  std::uint32_t* landing() const { return landing_.local(); }
  std::int64_t table_sum() const {
    return std::accumulate(table_.local(), table_.local() + table_words, std::int64_t{0});
  }

 private:
  global_ptr<std::int64_t> table_;
  global_ptr<std::uint32_t> landing_;
  global_ptr<std::int64_t> target_table_;
  global_ptr<std::uint32_t> target_landing_;
  std::vector<std::uint32_t> indices_;
  std::size_t next_ = 0;
};

void aggregator_add(benchmark::State& state, add_kind kind) {
  const oneside::team& w = oneside::world();
  if (w.size() <= target_rank) {
    state.SkipWithError("needs at least 2 ranks (rank 0 to rank 1)");
    return;
  }
  add_setup setup;
  const bool origin = w.rank() == origin_rank;
  const bool target = w.rank() == target_rank;
  oneside::aggregator agg({.routing = kind == add_kind::aggregated_node
                                          ? oneside::aggregator_routing::node
                                          : oneside::aggregator_routing::settings,
                           .apply_at_origin = kind == add_kind::aggregated_origin});
  std::vector<std::uint32_t> packed(static_cast<std::size_t>(updates_per_batch));
  std::int64_t issued = 0;
  bench::measure(state, updates_per_batch, [&](std::int64_t k) {
    switch (kind) {
      case add_kind::aggregated:
      case add_kind::aggregated_origin:
      case add_kind::aggregated_node:
        if (origin) {
          for (std::int64_t i = 0; i < k; ++i) {
            agg.atomic_add(setup.target_table() + setup.next_index(), std::int64_t{1});
          }
          agg.flush();
        }
        break;
      case add_kind::per_update:
        if (origin) {
          for (std::int64_t i = 0; i < k; ++i) {
            (void)oneside::atomic_add(setup.target_table() + setup.next_index(), std::int64_t{1});
          }
          oneside::quiet();
          oneside::progress();
        }
        break;
      case add_kind::hand:
        if (origin) {
          for (std::int64_t i = 0; i < k; ++i)
            packed[static_cast<std::size_t>(i)] = setup.next_index();
          oneside::rput(std::span<const std::uint32_t>(packed.data(), static_cast<std::size_t>(k)),
                        setup.target_landing())
              .wait();
        }
        oneside::barrier(w);
        if (target) {
          std::int64_t* t = setup.table();
          const std::uint32_t* in = setup.landing();
          for (std::int64_t i = 0; i < k; ++i) {
            std::atomic_ref<std::int64_t>(t[in[i]]).fetch_add(1, std::memory_order_relaxed);
          }
        }
        break;
    }
    if (origin) issued += k;
  });
  const std::int64_t expected = oneside::broadcast(w, issued, origin_rank);
  oneside::barrier(w);
  const bool ok = !target || setup.table_sum() == expected;
  if (oneside::allreduce(w, ok ? 1 : 0, oneside::op::min) != 1) {
    state.SkipWithError("the table's sum is not the number of updates issued");
  }
  state.SetItemsProcessed(state.iterations());  // items/s: updates per second
}

BENCHMARK_CAPTURE(aggregator_add, aggregated, add_kind::aggregated)->UseManualTime();
BENCHMARK_CAPTURE(aggregator_add, aggregated_origin, add_kind::aggregated_origin)->UseManualTime();
BENCHMARK_CAPTURE(aggregator_add, aggregated_node, add_kind::aggregated_node)->UseManualTime();
BENCHMARK_CAPTURE(aggregator_add, per_update, add_kind::per_update)->UseManualTime();
BENCHMARK_CAPTURE(aggregator_add, hand, add_kind::hand)->UseManualTime();

}  // namespace
