// oneside's arm of the 1 GiB collective file I/O benchmark (issue 24's bench rows), the same
// pattern, timing and report as its MPI-IO peer (../peers/mpi_io_bench.cpp,
// ../support/io_pattern.hpp): file::write_at_all and file::read_at_all of every rank's share,
// contiguous or 4 KiB blocks round-robin over the ranks. Engines:
//   default file::open's defaults (collective buffering for interleaved views only)
//   direct  each member moves its own data (hint collective_buffering=false)
//   cb      collective buffering (hint collective_buffering=true: two-phase I/O)
//   staged  file::open's defaults, every large access staged, reads too (hint staged_io=true)
//   unstaged file::open's defaults but no staging buffer (hint staged_io=false: each member's
//           blocking access is one pread/pwrite per piece, the default before the staged path)
//   dd      the file system's single-stream rate: rank 0 alone writes (then reads) the whole
//           total with one large pwrite (pread) per repetition, as dd with a large block does;
//           the other ranks wait
// --split times write_at_all_begin + _end (read_at_all_begin + _end) instead: the access runs
// on the file's I/O thread, whose engine ONESIDE_IO_ENGINE chooses (threads or uring).
// Run with oneside-run -n N; bench/run_io.py runs it against the peer.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

#include <oneside/oneside.hpp>

#include "app_main.hpp"
#include "io_pattern.hpp"

namespace {

namespace io = oneside::bench::io;
using oneside::datatype;
using oneside::file;
using oneside::file_mode;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double slowest(double t) {
  return oneside::allreduce(oneside::world(), t, oneside::op::max);
}

// Writes or reads all of [p, p + len) at `at` with as few calls as the kernel allows.
bool whole(int fd, std::byte* p, std::size_t len, off_t at, bool write) {
  while (len > 0) {
    const ssize_t n = write ? ::pwrite(fd, p, len, at) : ::pread(fd, p, len, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<std::size_t>(n);
    at += n;
  }
  return true;
}

// The file of this launch (rank 0's process id in its name).
std::string launch_path(const io::options& o) {
  return o.path(oneside::broadcast(oneside::world(), static_cast<long>(::getpid()), 0));
}

int run_dd(const io::options& o) {
  const oneside::team& w = oneside::world();
  const std::string path = launch_path(o);
  std::vector<double> wt;
  std::vector<double> rt;
  int bad = 0;
  std::vector<std::byte> out;
  std::vector<std::byte> in;
  int fd = -1;
  if (w.rank() == 0) {
    out.resize(static_cast<std::size_t>(o.bytes));
    in.resize(out.size());
    io::fill(out, 0, 0);
    fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0 || !whole(fd, out.data(), out.size(), 0, true)) bad = 1;  // untimed
  }
  for (int rep = 0; rep < o.reps; ++rep) {
    if (w.rank() == 0) io::fill(out, 0, rep + 1);
    oneside::barrier(w);
    const double t0 = now();
    if (w.rank() == 0 && !whole(fd, out.data(), out.size(), 0, true)) bad = 1;
    wt.push_back(slowest(now() - t0));
  }
  for (int rep = 0; rep < o.reps; ++rep) {
    if (w.rank() == 0) std::memset(in.data(), 0, in.size());
    oneside::barrier(w);
    const double t0 = now();
    if (w.rank() == 0 && !whole(fd, in.data(), in.size(), 0, false)) bad = 1;
    rt.push_back(slowest(now() - t0));
    if (w.rank() == 0 && std::memcmp(in.data(), out.data(), in.size()) != 0) bad = 1;
  }
  if (fd >= 0) {
    ::close(fd);
    ::unlink(path.c_str());
  }
  bad = oneside::allreduce(w, bad, oneside::op::max);
  if (w.rank() == 0) {
    std::printf("oneside_io_bench engine dd bytes %lld dir %s\n", static_cast<long long>(o.bytes),
                o.dir.c_str());
    io::report("write_at_all", wt, o.bytes);
    io::report("read_at_all", rt, o.bytes);
    if (bad != 0) std::printf("verification FAILED\n");
  }
  return bad;
}

int run(int argc, char** argv) {
  io::options o;
  o.engine = "default";
  if (!io::parse(argc, argv, o, "default|direct|cb|staged|unstaged|dd")) return 2;
  if (o.engine == "dd") return run_dd(o);
  const std::string known[] = {"default", "direct", "cb", "staged", "unstaged"};
  if (std::find(std::begin(known), std::end(known), o.engine) == std::end(known)) {
    std::fprintf(stderr, "oneside_io_bench: unknown engine %s\n", o.engine.c_str());
    return 2;
  }
  const oneside::team& w = oneside::world();
  std::int64_t share = 0;
  if (!io::share_of(o, w.size(), share)) return 2;
  oneside::info hints;
  for (const auto& [k, v] : io::hint_pairs(o.hints)) hints.set(k, v);
  if (o.engine == "cb") hints.set("collective_buffering", "true");
  if (o.engine == "direct") hints.set("collective_buffering", "false");
  if (o.engine == "unstaged") hints.set("staged_io", "false");
  if (o.engine == "staged") hints.set("staged_io", "true");
  const std::string path = launch_path(o);
  file f = file::open(w, path, file_mode::create | file_mode::rdwr, hints);
  const datatype& b = datatype::of<std::byte>();
  if (o.interleaved) {
    const datatype ft = datatype::resized(datatype::contiguous(o.block, b), 0, o.block * w.size());
    f.set_view(w.rank() * o.block, b, ft);
  } else {
    f.set_view(w.rank() * share, b, b);
  }
  std::vector<std::byte> out(static_cast<std::size_t>(share));
  std::vector<std::byte> in(static_cast<std::size_t>(share));
  io::fill(out, w.rank(), 0);
  (void)f.write_at_all(0, out.data(), share, b);  // untimed: the file's blocks exist
  std::vector<double> wt;
  std::vector<double> rt;
  int bad = 0;
  for (int rep = 0; rep < o.reps; ++rep) {
    io::fill(out, w.rank(), rep + 1);
    oneside::barrier(w);
    const double t0 = now();
    if (o.split) {
      f.write_at_all_begin(0, out.data(), share, b);
      (void)f.write_at_all_end(out.data());
    } else {
      (void)f.write_at_all(0, out.data(), share, b);
    }
    wt.push_back(slowest(now() - t0));
  }
  for (int rep = 0; rep < o.reps; ++rep) {
    std::memset(in.data(), 0, in.size());
    oneside::barrier(w);
    const double t0 = now();
    oneside::io_status st;
    if (o.split) {
      f.read_at_all_begin(0, in.data(), share, b);
      st = f.read_at_all_end(in.data());
    } else {
      st = f.read_at_all(0, in.data(), share, b);
    }
    rt.push_back(slowest(now() - t0));
    if (st.bytes != share || std::memcmp(in.data(), out.data(), in.size()) != 0) bad = 1;
  }
  f.close();
  bad = oneside::allreduce(w, bad, oneside::op::max);
  if (w.rank() == 0) {
    file::remove(path);
    std::printf("oneside_io_bench engine %s%s ranks %d bytes %lld pattern %s dir %s\n",
                o.engine.c_str(), o.split ? " split" : "", w.size(),
                static_cast<long long>(o.bytes), o.interleaved ? "interleaved" : "contiguous",
                o.dir.c_str());
    io::report("write_at_all", wt, o.bytes);
    io::report("read_at_all", rt, o.bytes);
    if (bad != 0) std::printf("verification FAILED\n");
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  return oneside::apps::app_main("oneside_io_bench", argc, argv, run);
}
