// The MPI-IO peer of oneside's collective file I/O (../micro/io_bench.cpp): Open MPI's
// MPI_File_write_at_all and MPI_File_read_at_all of the same pattern (../support/io_pattern.hpp:
// 1 GiB in total, a contiguous share per rank or 4 KiB blocks round-robin over the ranks),
// written the usual way: MPI_File_open on MPI_COMM_WORLD, a view of MPI_BYTE etypes and a
// resized contiguous filetype for the interleaved pattern, explicit offset 0 in the view, the
// library's default I/O component (OMPIO in Open MPI 4.1) and hints (--hints adds some). Each
// operation is timed between barriers and takes the slowest rank's time. Links MPI only.
//
//   mpirun -n 2 --bind-to core mpi_io_bench --dir /dev/shm --pattern interleaved
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include <mpi.h>

#include "io_pattern.hpp"

namespace {

namespace io = oneside::bench::io;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  std::fprintf(stderr, "mpi_io_bench: %s: %s\n", what, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

double slowest(double t) {
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  io::options o;
  std::int64_t share = 0;
  if (!io::parse(argc, argv, o) || !io::share_of(o, ranks, share) || share > INT32_MAX) {
    MPI_Finalize();
    return 2;
  }
  const int count = static_cast<int>(share);

  MPI_Info info = MPI_INFO_NULL;
  const auto pairs = io::hint_pairs(o.hints);
  if (!pairs.empty()) {
    MPI_Info_create(&info);
    for (const auto& [k, v] : pairs) MPI_Info_set(info, k.c_str(), v.c_str());
  }
  long id = static_cast<long>(::getpid());
  MPI_Bcast(&id, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  const std::string path = o.path(id);
  MPI_File fh;
  check(MPI_File_open(MPI_COMM_WORLD, path.c_str(), MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh),
        "MPI_File_open");
  MPI_File_set_errhandler(fh, MPI_ERRORS_ARE_FATAL);
  MPI_Datatype filetype = MPI_BYTE;
  MPI_Offset disp = static_cast<MPI_Offset>(rank) * share;
  if (o.interleaved) {
    MPI_Datatype blk;
    MPI_Type_contiguous(static_cast<int>(o.block), MPI_BYTE, &blk);
    MPI_Type_create_resized(blk, 0, static_cast<MPI_Aint>(o.block) * ranks, &filetype);
    MPI_Type_commit(&filetype);
    MPI_Type_free(&blk);
    disp = static_cast<MPI_Offset>(rank) * o.block;
  }
  check(MPI_File_set_view(fh, disp, MPI_BYTE, filetype, "native", info), "MPI_File_set_view");

  std::vector<std::byte> out(static_cast<std::size_t>(share));
  std::vector<std::byte> in(static_cast<std::size_t>(share));
  io::fill(out, rank, 0);
  MPI_Status st;
  // Untimed: the file's blocks exist before the measurement.
  MPI_File_write_at_all(fh, 0, out.data(), count, MPI_BYTE, &st);
  std::vector<double> wt;
  std::vector<double> rt;
  int bad = 0;
  for (int rep = 0; rep < o.reps; ++rep) {
    io::fill(out, rank, rep + 1);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_File_write_at_all(fh, 0, out.data(), count, MPI_BYTE, &st);
    wt.push_back(slowest(MPI_Wtime() - t0));
  }
  for (int rep = 0; rep < o.reps; ++rep) {
    std::memset(in.data(), 0, in.size());
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_File_read_at_all(fh, 0, in.data(), count, MPI_BYTE, &st);
    rt.push_back(slowest(MPI_Wtime() - t0));
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (got != count || std::memcmp(in.data(), out.data(), in.size()) != 0) bad = 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_File_close(&fh);
  if (o.interleaved) MPI_Type_free(&filetype);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  if (rank == 0) {
    MPI_File_delete(path.c_str(), MPI_INFO_NULL);
    std::printf("mpi_io_bench ranks %d bytes %lld pattern %s dir %s\n", ranks,
                static_cast<long long>(o.bytes), o.interleaved ? "interleaved" : "contiguous",
                o.dir.c_str());
    io::report("write_at_all", wt, o.bytes);
    io::report("read_at_all", rt, o.bytes);
    if (bad != 0) std::printf("verification FAILED\n");
  }
  MPI_Finalize();
  return bad != 0 ? 1 : 0;
}
