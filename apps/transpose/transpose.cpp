// The transpose mini-app: the Parallel Research Kernels' Transpose (B += A^T; A += 1, iterated)
// over two order x order dist_array<double, 2> distributed by column blocks ({dist::none,
// dist::block}, PRK MPI1's decomposition), read as a redistribution: rank r's column block of
// B needs A's row block r, which every rank q holds a block of (rows of r's columns, q's
// columns: one run of q's row-major block). Rank r adds the transpose of each such block into
// its own B, tile by tile, then increments its own A on the local view. Variants say how the
// blocks of the other ranks arrive:
//   direct    read in place through global_ptr::local() when this process maps the owner's
//             block (shm node peers); blocks it does not map are fetched as rget does
//   rget      region rgets into two buffers, the next block's fetch overlapping the transpose
//             of the current one
//   get       one blocking region get per block, then its transpose
//   rows      one region get of A's whole row block r (every rank's part: one strided
//             transfer per owner), then the transpose of each part; A += 1 after a barrier
// The diagonal block (rows and columns of r, read by r alone) is transposed and incremented in
// one pass, as PRK does (except in rows). Per iteration: a barrier (every A incremented), the
// transposes, a barrier (every rank has read its blocks of everyone's A), the increment of the
// rest of A. On shm a region rget of a block this process maps copies it at the call, so rget
// overlaps fetches with transposes only where blocks move through the transport.
//
//   oneside-run -n 2 transpose 10 4096 32
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "common/app_main.hpp"
#include "transpose_cli.hpp"
#include "transpose_kernel.hpp"
#include "transpose_verify.hpp"

namespace {

namespace tr = oneside::apps::transpose;
using matrix = oneside::dist_array<double, 2>;

// Rank q's column block of `a` (dist::block over the columns, from its pattern).
tr::column_block columns_of(const matrix& a, int q) {
  const auto r = static_cast<oneside::rank_t>(q);
  const std::size_t w = a.pattern().local_extents(r)[1];
  return {w == 0 ? a.extent(1) : a.pattern().global_index(r, {0, 0})[1], w};
}

// The region of `a` rank `me` needs from rank q: rows of me's columns, columns of q's.
oneside::region<2> block_of(const tr::column_block& mine, const tr::column_block& theirs) {
  return {{mine.start, theirs.start}, {mine.width, theirs.width}};
}

int run(int argc, char** argv) {
  const oneside::team& world = oneside::world();
  const int me = world.rank();
  const int ranks = world.size();
  const bool root = me == 0;

  tr::options o;
  const tr::program_info program{"transpose", "oneside", {"direct", "rget", "get", "rows"}};
  if (const int code = tr::start(program, argc, argv, ranks, root, o); code >= 0) return code;

  const auto order = static_cast<std::size_t>(o.order);
  const std::array<int, 2> grid{1, ranks};
  matrix a(world, {order, order}, {oneside::dist::none, oneside::dist::block}, grid, "A");
  matrix b(world, {order, order}, {oneside::dist::none, oneside::dist::block}, grid, "B");
  std::vector<tr::column_block> cols(static_cast<std::size_t>(ranks));
  for (int q = 0; q < ranks; ++q) cols[static_cast<std::size_t>(q)] = columns_of(a, q);
  const tr::column_block mine = cols[static_cast<std::size_t>(me)];
  const std::size_t w = mine.width;
  double* const a_local = a.local().data();  // order rows of w, row-major
  double* const b_local = b.local().data();
  a.transform_local(
      [order](const matrix::index_type& g, double) { return tr::initial_a(order, g[0], g[1]); });
  b.transform_local([](double) { return 0.0; });
  const tr::tiling tile = tr::tiling_of(o);

  // The blocks of the other ranks, in PRK's order (phase p reads from rank me + p).
  std::vector<int> from;
  for (int p = 1; p < ranks; ++p) {
    const int q = (me + p) % ranks;
    if (w != 0 && cols[static_cast<std::size_t>(q)].width != 0) from.push_back(q);
  }
  std::size_t widest = 0;
  for (const int q : from) widest = std::max(widest, cols[static_cast<std::size_t>(q)].width);
  // Where each block is mapped here (direct), else fetched into one of two buffers.
  std::vector<const double*> mapped(from.size(), nullptr);
  if (o.variant == "direct") {
    for (std::size_t k = 0; k < from.size(); ++k) {
      const tr::column_block& c = cols[static_cast<std::size_t>(from[k])];
      const oneside::global_ptr<double> p = a.ptr({mine.start, c.start});
      if (p.is_local()) mapped[k] = p.local();
    }
  }
  if (root && o.variant == "direct") {
    const auto in_place = static_cast<std::size_t>(
        std::count_if(mapped.begin(), mapped.end(), [](const double* m) { return m != nullptr; }));
    std::printf("Blocks read in place = %zu of %zu (rank 0)\n", in_place, mapped.size());
    std::fflush(stdout);
  }
  std::vector<double> buffers[2];
  for (std::vector<double>& buf : buffers) buf.resize(w * widest);
  std::vector<double> row_block(o.variant == "rows" ? w * order : 0);

  // B's rows of q's columns += the transpose of the block (w rows of cols[q].width columns,
  // row stride `stride`).
  auto add_block = [&](int q, const double* block, std::size_t stride) {
    const tr::column_block& c = cols[static_cast<std::size_t>(q)];
    tr::add_transposed(b_local + c.start * w, w, block, stride, c.width, w, tile);
  };
  auto fetch = [&](std::size_t k, int slot) {
    const tr::column_block& c = cols[static_cast<std::size_t>(from[k])];
    return a.rget(block_of(mine, c), std::span<double>(buffers[slot].data(), w * c.width));
  };

  oneside::barrier(world);
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  for (int it = 0; it <= o.iterations; ++it) {
    if (it == 1) {  // iteration 0 is the warm-up
      oneside::barrier(world);
      start = std::chrono::steady_clock::now();
    }
    oneside::barrier(world);  // every rank's A holds this iteration's values
    if (o.variant == "rows") {
      // A's whole row block r (r's columns of every rank: a redistribution) in one region
      // get, then the transpose of each rank's part of it; A += 1 afterwards, everywhere.
      a.get({{mine.start, 0}, {w, order}}, row_block);
      for (int q = 0; q < ranks; ++q) {
        const tr::column_block& c = cols[static_cast<std::size_t>(q)];
        if (w != 0 && c.width != 0) {
          tr::add_transposed(b_local + c.start * w, w, row_block.data() + c.start, order, c.width,
                             w, tile);
        }
      }
      oneside::barrier(world);
      tr::increment(a_local, order * w);
      continue;
    }
    if (o.variant == "get") {
      tr::add_transposed_increment(b_local + mine.start * w, w, a_local + mine.start * w, w, w, w,
                                   tile);
      for (std::size_t k = 0; k < from.size(); ++k) {
        fetch(k, 0).wait();
        add_block(from[k], buffers[0].data(), cols[static_cast<std::size_t>(from[k])].width);
      }
    } else {
      // rget, and direct for the blocks it does not map: the first fetch overlaps the
      // diagonal block, each later one the transpose of the block before it.
      std::vector<oneside::future<>> pending(from.size());
      std::vector<int> slot_of(from.size(), 0);
      int next_slot = 0;
      auto issue_after = [&](std::size_t k) {  // the next block to fetch after block k - 1
        for (; k < from.size(); ++k) {
          if (mapped[k] == nullptr) {
            slot_of[k] = next_slot;
            pending[k] = fetch(k, next_slot);
            next_slot ^= 1;
            return;
          }
        }
      };
      issue_after(0);
      tr::add_transposed_increment(b_local + mine.start * w, w, a_local + mine.start * w, w, w, w,
                                   tile);
      for (std::size_t k = 0; k < from.size(); ++k) {
        const std::size_t stride = cols[static_cast<std::size_t>(from[k])].width;
        if (mapped[k] != nullptr) {
          add_block(from[k], mapped[k], stride);
          continue;
        }
        pending[k].wait();
        issue_after(k + 1);  // into the other buffer, while this one is transposed
        add_block(from[k], buffers[slot_of[k]].data(), stride);
      }
    }
    oneside::barrier(world);  // every rank has read its blocks of this rank's A
    tr::increment(a_local, mine.start * w);
    tr::increment(a_local + (mine.start + w) * w, (order - mine.start - w) * w);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (o.inject_error && root && w != 0) b_local[0] += 1.0;
  const double error = oneside::allreduce(
      world, tr::local_error(b_local, order, mine, o.iterations), oneside::op::sum);
  const double max_seconds = oneside::allreduce(world, seconds, oneside::op::max);
  const int code = tr::report(error, max_seconds, o, root);
  if (code != 0 && !root) std::fprintf(stderr, "transpose: rank %d: verification failed\n", me);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  return oneside::apps::app_main("transpose", argc, argv, run);
}
