// The MPI-RMA peer of apps/stencil: the same Parallel Research Kernels' Stencil, decomposition
// and kernel (../../apps/stencil/stencil_*.hpp), with halos moved as PRK's MPIRMA stencil
// moves them: MPI_Put into the neighbours' windows between two MPI_Win_fence calls. Only the
// fence variant exists here. --kernel prk (the default here) is PRK's structure (exchange,
// stencil, then a separate in += 1 pass); --kernel fused runs the oneside app's phases, so
// the two programs can also be compared with identical computation. Links MPI only.
//
//   mpirun -n 2 --bind-to core mpi_stencil --n 4000 --radius 2 --iterations 100
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <mpi.h>

#include "stencil_cli.hpp"
#include "stencil_decomposition.hpp"
#include "stencil_halo.hpp"
#include "stencil_kernel.hpp"
#include "stencil_verify.hpp"

namespace {

namespace st = oneside::apps::stencil;
using st::index_t;

int to_int(index_t v) {
  return static_cast<int>(v);
}

class halo {
 public:
  halo(const st::block& b, double* in, MPI_Win win, st::halo_kind kind)
      : b_(b), in_(in), win_(win), kind_(kind), mine_(st::receive_areas_of(b)) {
    for (int d = 0; d < st::side_count; ++d) {
      if (b.neighbour[d] == st::no_neighbour) continue;
      nb_[d] = st::make_block(b.n, b.r, b.px, b.py, b.neighbour[d]);
      nb_layout_[d] = st::receive_areas_of(nb_[d]);
      if (d == st::left || d == st::right) {
        send_buf_[d].resize(static_cast<std::size_t>(b.r * b.h));
        if (kind == st::halo_kind::datatype) {
          MPI_Type_vector(to_int(b.h), to_int(b.r), to_int(b.stride()), MPI_DOUBLE, &col_mine_);
          MPI_Type_commit(&col_mine_);
          MPI_Type_vector(to_int(b.h), to_int(b.r), to_int(nb_[d].stride()), MPI_DOUBLE,
                          &col_nb_[d]);
          MPI_Type_commit(&col_nb_[d]);
        }
      }
    }
  }
  halo(const halo&) = delete;
  halo& operator=(const halo&) = delete;
  ~halo() {
    if (col_mine_ != MPI_DATATYPE_NULL) MPI_Type_free(&col_mine_);
    for (MPI_Datatype& t : col_nb_) {
      if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    }
  }

  void send() {
    st::for_each_halo_put(
        b_, nb_, kind_, in_, send_buf_,
        [&](int, index_t, int q, const double* src, index_t count, index_t dst) {
          MPI_Put(src, to_int(count), MPI_DOUBLE, q, dst, to_int(count), MPI_DOUBLE, win_);
        },
        [&](int d, int q, const double* src, index_t dst) {
          MPI_Put(src, 1, col_mine_, q, dst, 1, col_nb_[d], win_);
        },
        [&](int d, int q, const std::vector<double>& buf) {
          const int count = to_int(static_cast<index_t>(buf.size()));
          MPI_Put(buf.data(), count, MPI_DOUBLE, q, nb_layout_[d].recv[st::opposite(d)], count,
                  MPI_DOUBLE, win_);
        });
  }

  void unpack() {
    if (kind_ == st::halo_kind::pack) st::unpack_columns(b_, in_, mine_);
  }

 private:
  const st::block& b_;
  double* in_;
  MPI_Win win_;
  st::halo_kind kind_;
  st::receive_areas mine_;
  st::block nb_[st::side_count];
  st::receive_areas nb_layout_[st::side_count]{};
  std::vector<double> send_buf_[st::side_count];
  MPI_Datatype col_mine_ = MPI_DATATYPE_NULL;
  MPI_Datatype col_nb_[st::side_count] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL,
                                          MPI_DATATYPE_NULL};
};

int run(int argc, char** argv) {
  int me = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const bool root = me == 0;

  // PRK's MPIRMA structure by default; --kernel fused runs the oneside app's phases.
  st::options o;
  int px = 1, py = 1;
  const st::program_info program{"mpi_stencil", "MPI-RMA", {"fence"}, st::kernel_kind::prk, false};
  if (const int code = st::start(program, argc, argv, ranks, root, o, px, py); code >= 0) {
    return code;
  }

  const st::block b = st::make_block(o.n, o.radius, px, py, me);
  // The window of one rank: `in` with its ghost frame, then the receive areas of packed columns
  // from the left and the right neighbour (st::receive_areas), as in the oneside app.
  const st::receive_areas mine = st::receive_areas_of(b);
  double* in = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  MPI_Win_allocate(static_cast<MPI_Aint>(mine.end) * static_cast<MPI_Aint>(sizeof(double)),
                   sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &in, &win);
  std::vector<double> out(static_cast<std::size_t>(b.w * b.h));
  const st::grid g{&b, in, out.data()};
  st::initialize(g);
  const st::phases p = st::plan(b, o.kernel);
  const int close_assert = o.kernel == st::kernel_kind::prk
                               ? MPI_MODE_NOPUT | MPI_MODE_NOSUCCEED | MPI_MODE_NOSTORE
                               : MPI_MODE_NOPUT | MPI_MODE_NOSUCCEED;
  double seconds = 0.0;
  {
    halo ex(b, in, win, o.halo);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = 0.0;
    for (int it = 0; it <= o.iterations; ++it) {
      if (it == 1) {  // iteration 0 is the warm-up
        MPI_Barrier(MPI_COMM_WORLD);
        start = MPI_Wtime();
      }
      MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
      ex.send();
      st::sweep(g, p.interior, p.fused);
      MPI_Win_fence(close_assert, win);
      ex.unpack();
      for (const st::rect& e : p.edge) st::sweep(g, e, {});
      for (const st::rect& e : p.rest) st::increment(g, e);
    }
    seconds = MPI_Wtime() - start;
  }

  if (o.inject_error && me == ranks - 1) {
    const st::rect a = b.active();
    if (!a.empty()) out[static_cast<std::size_t>(a.y0 * b.w + a.x0)] += st::injected_error(o);
  }
  double local = st::local_norm(g), norm = 0.0, max_seconds = 0.0;
  MPI_Allreduce(&local, &norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&seconds, &max_seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const int code = st::report(st::verify(norm, o), max_seconds, o, root);
  MPI_Win_free(&win);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int code = run(argc, argv);
  MPI_Finalize();
  return code;
}
