// The MPI1 peer of apps/transpose: the same Parallel Research Kernels' Transpose, column blocks,
// command line and verification (../../apps/transpose/transpose_*.hpp), written the way PRK's
// MPI1 Transpose moves data: each rank transposes its diagonal block in place into B; then, in
// phase p = 1 … P-1, it posts MPI_Irecv for the block rank me + p sends it, packs the transpose
// of the block rank me - p needs (incrementing A as it reads it, tile by tile), MPI_Isend's it,
// waits for both, and adds the block it received into B. Blocks differ in size when the order
// does not divide by the rank count (the last ranks' column blocks are narrower). Links MPI only.
//
//   mpirun -n 2 --bind-to core mpi_transpose 10 4096 32
#include <cstdio>
#include <string>
#include <vector>

#include <mpi.h>

#include "transpose_cli.hpp"
#include "transpose_kernel.hpp"
#include "transpose_verify.hpp"

namespace {

namespace tr = oneside::apps::transpose;

int run(int argc, char** argv) {
  int me = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const bool root = me == 0;

  tr::options o;
  const tr::program_info program{"mpi_transpose", "MPI1", {"isend"}};
  if (const int code = tr::start(program, argc, argv, ranks, root, o); code >= 0) return code;

  const auto order = static_cast<std::size_t>(o.order);
  std::vector<tr::column_block> cols(static_cast<std::size_t>(ranks));
  std::size_t widest = 0;
  for (int q = 0; q < ranks; ++q) {
    cols[static_cast<std::size_t>(q)] = tr::columns_of(order, ranks, q);
    widest = std::max(widest, cols[static_cast<std::size_t>(q)].width);
  }
  const tr::column_block mine = cols[static_cast<std::size_t>(me)];
  const std::size_t w = mine.width;
  // This rank's column blocks, order rows of w, row-major; a rank's blocks of A are its rows of
  // another rank's columns, contiguous.
  std::vector<double> a(order * w);
  std::vector<double> b(order * w, 0.0);
  for (std::size_t i = 0; i < order; ++i) {
    for (std::size_t j = 0; j < w; ++j) a[i * w + j] = tr::initial_a(order, i, mine.start + j);
  }
  std::vector<double> work_in(w * widest);
  std::vector<double> work_out(w * widest);
  const tr::tiling tile = tr::tiling_of(o);

  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int it = 0; it <= o.iterations; ++it) {
    if (it == 1) {  // iteration 0 is the warm-up
      MPI_Barrier(MPI_COMM_WORLD);
      start = MPI_Wtime();
    }
    tr::add_transposed_increment(b.data() + mine.start * w, w, a.data() + mine.start * w, w, w, w,
                                 tile);
    for (int phase = 1; phase < ranks; ++phase) {
      const int recv_from = (me + phase) % ranks;
      const int send_to = (me - phase + ranks) % ranks;
      const tr::column_block& in = cols[static_cast<std::size_t>(recv_from)];
      const tr::column_block& out = cols[static_cast<std::size_t>(send_to)];
      // Received: B's rows of recv_from's columns, already transposed (in.width rows of w).
      MPI_Request reqs[2];
      MPI_Irecv(work_in.data(), static_cast<int>(in.width * w), MPI_DOUBLE, recv_from, phase,
                MPI_COMM_WORLD, &reqs[0]);
      // Sent: the transpose of A's rows of send_to's columns (w rows of out.width).
      tr::copy_transposed_increment(work_out.data(), out.width, a.data() + out.start * w, w, w,
                                    out.width, tile);
      MPI_Isend(work_out.data(), static_cast<int>(w * out.width), MPI_DOUBLE, send_to, phase,
                MPI_COMM_WORLD, &reqs[1]);
      MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
      tr::add_block(b.data() + in.start * w, w, work_in.data(), in.width, w);
    }
  }
  const double seconds = MPI_Wtime() - start;

  if (o.inject_error && root && w != 0) b[0] += 1.0;
  double local = tr::local_error(b.data(), order, mine, o.iterations), error = 0.0;
  double max_seconds = 0.0;
  MPI_Allreduce(&local, &error, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&seconds, &max_seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const int code = tr::report(error, max_seconds, o, root);
  if (code != 0 && !root) {
    std::fprintf(stderr, "mpi_transpose: rank %d: verification failed\n", me);
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int code = run(argc, argv);  // every rank decides the same code
  MPI_Finalize();
  return code;
}
