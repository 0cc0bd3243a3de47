// The GUPS mini-app: HPC Challenge RandomAccess on the PGAS layer. A table of 2^n 64-bit words
// lies on the symmetric heap, HPCC's MPI layout (contiguous blocks whose sizes differ by at most
// one, gups_stream.hpp); each rank generates its share of HPCC's random stream and applies
// T[a & (2^n - 1)] ^= a for each value a, wherever the word lives. Variants say how an update
// reaches the word's owner, one function each (update_fn), listed in `variants` below:
//   atomic    one remote atomic_xor per update, fire-and-forget (its future dropped), and one
//             quiet() at the end: a CPU atomic on memory this process maps (its own, node
//             peers' on shm), else the transport's atomic, applied by the owner
//   aggregated one aggregator (oneside/pgas/aggregator.hpp) per rank, an atomic_xor per update
//             through it, one flush() at the end (every update applied at its owner when it
//             returns); --combine on|off folds updates of one word within a buffer (default
//             off: random words of a large table rarely meet in a buffer, bench/RESULTS.md);
//             --atomic-apply on|off applies the updates with CPU atomics or, the default, with
//             plain loads and stores a buffer at a time (HPCC allows the rare lost update of
//             two ranks updating one word at once; verification counts them);
//             --apply-at-origin on|off has the sender apply its node peers' buffers itself
//   rpc       one rpc_ff per update whose body xors the owner's word (a CPU atomic: bodies run
//             as concurrent tasks of the owner's arena), and one quiet() at the end, which
//             returns once every rpc_ff this rank issued ran at its owner
// The command line offers the variants listed in `variants` (the first is the default).
// Time: from a barrier to the barrier after the last update is visible everywhere (the slowest
// rank's), reported as HPCC does (updates / seconds / 1e9); then every rank replays the whole
// stream on its own words and the wrong words are counted (gups_verify.hpp).
//
// The table's words are reached through a global_ptr computed from the layout (a shift when the
// rank count is a power of two) rather than through a dist_array<std::uint64_t, 1>'s ptr(): the
// two measured alike on 2 ranks and the heap 5-15% faster at 1 rank (bench/RESULTS.md, GUPS),
// and HPCC's layout (block sizes differing by at most one) is kept this way.
//
//   oneside-run -n 2 gups --log2-table 26 --variant atomic
//
// Testing only: --skip-updates K leaves out every K-th update of each rank's share
// (gups_cli.hpp), which verification must catch.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <oneside/oneside.hpp>

#include "common/app_main.hpp"
#include "gups_cli.hpp"
#include "gups_stream.hpp"
#include "gups_verify.hpp"

namespace {

namespace gu = oneside::apps::gups;

// The distributed table as the variants see it: every rank's block, at the same offset of its
// symmetric heap (its own address in each process).
class table {
 public:
  table(const gu::table_layout& l, oneside::global_ptr<std::uint64_t> block)
      : layout_(l), bases_(oneside::allgather(oneside::world(), std::uint64_t{block.address()})) {}

  const gu::table_layout& layout() const noexcept { return layout_; }

  // The word stream value `a` updates.
  oneside::global_ptr<std::uint64_t> word_of(std::uint64_t a) const noexcept {
    const std::uint64_t g = layout_.index_of(a);
    const int r = layout_.owner(g);
    return oneside::global_ptr<std::uint64_t>(
        static_cast<oneside::rank_t>(r),
        static_cast<std::uintptr_t>(bases_[static_cast<std::size_t>(r)] +
                                    (g - layout_.start(r)) * sizeof(std::uint64_t)));
  }

 private:
  gu::table_layout layout_;
  std::vector<std::uint64_t> bases_;
};

// A variant: applies this rank's share of the updates to `t` and returns once each of them is
// applied at its owner (the updates sent to this rank by the others may still be under way).
using update_fn = void (*)(const table& t, gu::update_stream& share, const gu::options& o);

void update_atomic(const table& t, gu::update_stream& share, const gu::options&) {
  for (std::uint64_t a = 0; share.next(a);) (void)oneside::atomic_xor(t.word_of(a), a);
  oneside::quiet();
}

void update_aggregated(const table& t, gu::update_stream& share, const gu::options& o) {
  oneside::aggregator agg(
      {.combine = o.combine, .apply_at_origin = o.apply_at_origin, .atomic_apply = o.atomic_apply});
  for (std::uint64_t a = 0; share.next(a);) agg.atomic_xor(t.word_of(a), a);
  agg.flush();
}

// The rpc variant's body: runs at the word's owner (concurrent tasks there, so a CPU atomic).
void xor_here(oneside::global_ptr<std::uint64_t> word, std::uint64_t a) {
  std::atomic_ref<std::uint64_t>(*word.local()).fetch_xor(a, std::memory_order_relaxed);
}

// quiet() returns once every rpc_ff this rank issued ran at its owner, so after the barrier
// that follows every update ran.
void update_rpc(const table& t, gu::update_stream& share, const gu::options&) {
  for (std::uint64_t a = 0; share.next(a);) {
    const oneside::global_ptr<std::uint64_t> w = t.word_of(a);
    oneside::rpc_ff(w.where(), &xor_here, w, a);
  }
  oneside::quiet();
}

const std::vector<std::pair<std::string, update_fn>> variants = {
    {"atomic", update_atomic},
    {"aggregated", update_aggregated},
    {"rpc", update_rpc},
};

int run(int argc, char** argv) {
  const oneside::team& world = oneside::world();
  const int me = world.rank();
  const int ranks = world.size();
  const bool root = me == 0;

  std::vector<std::string> names;
  for (const auto& v : variants) names.push_back(v.first);
  const gu::program_info program{"gups", "oneside", names};
  gu::options o;
  if (const int code = gu::start(program, argc, argv, ranks, root, o); code >= 0) return code;
  update_fn update = nullptr;
  for (const auto& v : variants) {
    if (v.first == o.variant) update = v.second;
  }

  const gu::table_layout layout(o.log2_table, ranks);
  const oneside::global_ptr<std::uint64_t> block =
      oneside::symmetric_allocate<std::uint64_t>(layout.max_local_size());
  std::uint64_t* const local = block.local();
  gu::initialize(local, layout, me);
  const table t(layout, block);
  gu::update_stream share = gu::update_stream::share(layout, me, o.updates_factor, o.skip_every);

  oneside::barrier(world);
  const auto start = std::chrono::steady_clock::now();
  update(t, share, o);
  oneside::barrier(world);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::uint64_t wrong =
      o.verify ? gu::replay_and_count(local, layout, me, o.updates_factor) : 0;
  const std::uint64_t errors = oneside::allreduce(world, wrong, oneside::op::sum);
  const double max_seconds = oneside::allreduce(world, seconds, oneside::op::max);
  oneside::symmetric_free(block);
  const int code = gu::report(errors, max_seconds, o, root);
  if (code != 0 && !root) std::fprintf(stderr, "gups: rank %d: verification failed\n", me);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  return oneside::apps::app_main("gups", argc, argv, run);
}
