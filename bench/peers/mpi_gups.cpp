// The MPI peer of apps/gups: the same HPC Challenge RandomAccess (random stream, table layout,
// command line, verification and report: ../../apps/gups/gups_*.hpp), written the way HPCC's MPI
// reference (MPIRandomAccess.c, its standard "bucket" algorithm) moves the updates. Each rank
// generates its share of the stream one value at a time; an update of its own words is applied
// at once, any other is put in the owner's bucket. At most 1024 updates may wait in the buckets
// (HPCC's MAX_TOTAL_PENDING_UPDATES: the look-ahead it allows); when they are full, the largest
// bucket leaves as one message of at most 1024 updates (LOCAL_BUFFER_SIZE), by MPI_Isend from
// one send buffer once the previous send is done. Before each value the rank receives what has
// arrived: 1 pre-posted MPI_Irecv from any source (4 with more than 4 ranks, as HPCC's
// USE_MULTIPLE_RECV), tested with MPI_Testany, applied and posted again. At the end the buckets
// are emptied, a zero-length "finished" message goes to every other rank, and a rank receives
// until every other one has finished (MPI keeps a sender's messages in order). Two departures
// from HPCC's code: it finds the largest bucket with a heap, a scan over the ranks does here
// (for the few ranks of one node); and its final MPI_Cancel of the pre-posted receives drops
// an update message one of them matched before another took the last "finished" (with 4
// receives, seen at 8 ranks), which this version applies.
// Links MPI only.
//
//   mpirun -n 2 --bind-to core mpi_gups --log2-table 26
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <mpi.h>

#include "gups_cli.hpp"
#include "gups_stream.hpp"
#include "gups_verify.hpp"

namespace {

namespace gu = oneside::apps::gups;

constexpr int finished_tag = 1;
constexpr int update_tag = 2;
constexpr std::size_t max_pending = 1024;      // updates waiting in the buckets, at most
constexpr std::size_t message_updates = 1024;  // updates per message, at most

class bucket_updater {
 public:
  bucket_updater(std::uint64_t* local, const gu::table_layout& t, int me)
      : local_(local),
        t_(t),
        me_(me),
        first_(t.start(me)),
        buckets_(static_cast<std::size_t>(t.ranks())),
        send_(message_updates),
        receives_(t.ranks() > 4 ? 4 : 1),
        recv_(static_cast<std::size_t>(receives_) * message_updates),
        in_(static_cast<std::size_t>(receives_), MPI_REQUEST_NULL),
        receiving_(t.ranks() - 1) {
    for (auto& b : buckets_) b.reserve(max_pending);
  }

  void run(gu::update_stream& share) {
    for (int k = 0; k < receives_; ++k) post(k);
    std::uint64_t a = 0;
    bool more = share.next(a);
    while (more) {
      receive_ready();
      if (pending_ < max_pending) {
        const std::uint64_t g = t_.index_of(a);
        const int r = t_.owner(g);
        if (r == me_) {
          local_[g - first_] ^= a;
        } else {
          buckets_[static_cast<std::size_t>(r)].push_back(a);
          ++pending_;
        }
        more = share.next(a);
      } else {
        send_largest();
      }
    }
    while (pending_ > 0) {
      receive_ready();
      send_largest();
    }
    std::vector<MPI_Request> done(static_cast<std::size_t>(t_.ranks()), MPI_REQUEST_NULL);
    for (int r = 0; r < t_.ranks(); ++r) {
      if (r != me_) {
        MPI_Isend(&a, 0, MPI_UINT64_T, r, finished_tag, MPI_COMM_WORLD,
                  &done[static_cast<std::size_t>(r)]);
      }
    }
    while (receiving_ > 0) {
      int k = 0;
      MPI_Status st;
      MPI_Waitany(receives_, in_.data(), &k, &st);
      take(k, st);
    }
    MPI_Waitall(static_cast<int>(done.size()), done.data(), MPI_STATUSES_IGNORE);
    // A receive may have matched an update message before another one matched its sender's
    // "finished": what it holds is applied, not cancelled away.
    for (int k = 0; k < receives_; ++k) {
      MPI_Request& r = in_[static_cast<std::size_t>(k)];
      MPI_Cancel(&r);
      MPI_Status st;
      MPI_Wait(&r, &st);
      int cancelled = 0;
      MPI_Test_cancelled(&st, &cancelled);
      if (!cancelled) apply(k, st);
    }
    MPI_Wait(&out_, MPI_STATUS_IGNORE);
  }

 private:
  void post(int k) {
    MPI_Irecv(recv_.data() + static_cast<std::size_t>(k) * message_updates,
              static_cast<int>(message_updates), MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG,
              MPI_COMM_WORLD, &in_[static_cast<std::size_t>(k)]);
  }

  // Applies the message receive k completed with (counts a "finished").
  void apply(int k, const MPI_Status& st) {
    if (st.MPI_TAG == update_tag) {
      int n = 0;
      MPI_Get_count(&st, MPI_UINT64_T, &n);
      const std::uint64_t* m = recv_.data() + static_cast<std::size_t>(k) * message_updates;
      for (int j = 0; j < n; ++j) local_[t_.index_of(m[j]) - first_] ^= m[j];
    } else {
      --receiving_;
    }
  }
  // Applies it and posts the receive again.
  void take(int k, const MPI_Status& st) {
    apply(k, st);
    post(k);
  }

  // Applies every message that has arrived.
  void receive_ready() {
    while (receiving_ > 0) {
      int k = MPI_UNDEFINED;
      int arrived = 0;
      MPI_Status st;
      MPI_Testany(receives_, in_.data(), &k, &arrived, &st);
      if (!arrived || k == MPI_UNDEFINED) return;
      take(k, st);
    }
  }

  // Sends the largest bucket (at most one message of it) once the previous send is done.
  void send_largest() {
    int free = 0;
    MPI_Test(&out_, &free, MPI_STATUS_IGNORE);
    if (!free) return;
    const auto largest =
        std::max_element(buckets_.begin(), buckets_.end(),
                         [](const auto& x, const auto& y) { return x.size() < y.size(); });
    std::vector<std::uint64_t>& b = *largest;
    const std::size_t n = std::min(b.size(), message_updates);
    std::copy(b.end() - static_cast<std::ptrdiff_t>(n), b.end(), send_.begin());
    b.resize(b.size() - n);
    pending_ -= n;
    MPI_Isend(send_.data(), static_cast<int>(n), MPI_UINT64_T,
              static_cast<int>(largest - buckets_.begin()), update_tag, MPI_COMM_WORLD, &out_);
  }

  std::uint64_t* local_;
  const gu::table_layout& t_;
  int me_;
  std::uint64_t first_;
  std::vector<std::vector<std::uint64_t>> buckets_;
  std::size_t pending_ = 0;
  std::vector<std::uint64_t> send_;
  MPI_Request out_ = MPI_REQUEST_NULL;
  int receives_;
  std::vector<std::uint64_t> recv_;
  std::vector<MPI_Request> in_;
  int receiving_;  // ranks that have not finished yet
};

int run(int argc, char** argv) {
  int me = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const bool root = me == 0;

  gu::options o;
  const gu::program_info program{"mpi_gups", "MPI (HPCC's bucket algorithm)", {"bucket"}};
  if (const int code = gu::start(program, argc, argv, ranks, root, o); code >= 0) return code;

  const gu::table_layout layout(o.log2_table, ranks);
  std::vector<std::uint64_t> table(layout.local_size(me));
  gu::initialize(table.data(), layout, me);
  gu::update_stream share = gu::update_stream::share(layout, me, o.updates_factor, o.skip_every);
  bucket_updater updater(table.data(), layout, me);

  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  updater.run(share);
  MPI_Barrier(MPI_COMM_WORLD);
  const double seconds = MPI_Wtime() - start;

  const std::uint64_t wrong =
      o.verify ? gu::replay_and_count(table.data(), layout, me, o.updates_factor) : 0;
  std::uint64_t errors = 0;
  double max_seconds = 0.0;
  MPI_Allreduce(&wrong, &errors, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&seconds, &max_seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const int code = gu::report(errors, max_seconds, o, root);
  if (code != 0 && !root) std::fprintf(stderr, "mpi_gups: rank %d: verification failed\n", me);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int code = run(argc, argv);
  MPI_Finalize();
  return code;
}
