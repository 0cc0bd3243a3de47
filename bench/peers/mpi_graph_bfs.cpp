// mpi_graph_bfs: the MPI two-sided peer of apps/graph's BFS (issue 22) — a level-synchronous
// top-down BFS written the usual way with plain MPI, on the same graph, search keys, result
// lines and --verify checks (graph_peer.hpp).
//
// The vertices are split in blocks as apps/graph's vertex_partition splits them (owner(v) =
// v / ceil(N/P)). Each rank generates its share of the edge list and sends each arc to its
// source's owner with one MPI_Alltoallv (kernel 1, construction_time), which builds the CSR of
// its rows (targets are global numbers). A search goes level by level: each rank scans its
// frontier's rows, claims its own unvisited neighbours at once and packs (neighbour, parent)
// pairs per owner for the others; the counts go by MPI_Alltoall and the pairs by MPI_Alltoallv;
// the owner sets the parent of each vertex not yet visited and queues it; an MPI_Allreduce of
// the next frontier's size ends the search. The time of a search runs from a barrier to the
// last level's allreduce. Links MPI only.
//
//   mpirun -n 2 --bind-to core mpi_graph_bfs --scale 18 [--verify on] [--json out.json]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>

#include "graph_peer.hpp"

namespace {

namespace gp = oneside::bench::graph_peer;
namespace ag = oneside::apps::graph;
using gp::vid;

// dist::block over P ranks, as apps/graph/dist_graph.hpp's vertex_partition.
struct partition {
  std::uint64_t n;
  int ranks;
  std::uint64_t block;

  partition(std::uint64_t vertices, int p)
      : n(vertices),
        ranks(p),
        block((vertices + static_cast<std::uint64_t>(p) - 1) / static_cast<std::uint64_t>(p)) {}
  int owner(vid v) const noexcept { return static_cast<int>(v / block); }
  vid first(int r) const noexcept {
    return static_cast<vid>(std::min(n, block * static_cast<std::uint64_t>(r)));
  }
  vid size(int r) const noexcept { return first(r + 1) - first(r); }
};

// This rank's rows.
struct local_csr {
  vid first = 0;
  vid rows = 0;
  std::vector<std::uint64_t> offsets;
  std::vector<vid> targets;

  std::uint64_t degree(vid l) const noexcept { return offsets[l + 1] - offsets[l]; }
};

// Sends each (key, value) pair to owner(key) by MPI_Alltoallv; returns what arrived, pairs
// interleaved. `out[r]` holds the pairs for rank r, interleaved.
std::vector<vid> exchange(std::vector<std::vector<vid>>& out, std::vector<int>& counts,
                          std::vector<int>& rcounts, std::vector<int>& sdispls,
                          std::vector<int>& rdispls, std::vector<vid>& sendbuf) {
  const auto p = out.size();
  std::size_t total = 0;
  for (std::size_t r = 0; r < p; ++r) {
    counts[r] = static_cast<int>(out[r].size());
    sdispls[r] = static_cast<int>(total);
    total += out[r].size();
  }
  sendbuf.resize(total);
  for (std::size_t r = 0; r < p; ++r) {
    std::copy(out[r].begin(), out[r].end(), sendbuf.begin() + sdispls[r]);
    out[r].clear();
  }
  MPI_Alltoall(counts.data(), 1, MPI_INT, rcounts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::size_t incoming = 0;
  for (std::size_t r = 0; r < p; ++r) {
    rdispls[r] = static_cast<int>(incoming);
    incoming += static_cast<std::size_t>(rcounts[r]);
  }
  std::vector<vid> in(incoming);
  MPI_Alltoallv(sendbuf.data(), counts.data(), sdispls.data(), MPI_UINT32_T, in.data(),
                rcounts.data(), rdispls.data(), MPI_UINT32_T, MPI_COMM_WORLD);
  return in;
}

class bfs_search {
 public:
  bfs_search(const local_csr& c, const partition& part, int me)
      : c_(c),
        part_(part),
        me_(me),
        parent_(c.rows),
        out_(static_cast<std::size_t>(part.ranks)),
        counts_(out_.size()),
        rcounts_(out_.size()),
        sdispls_(out_.size()),
        rdispls_(out_.size()) {}

  const std::vector<std::int32_t>& parent() const noexcept { return parent_; }

  void run(vid root) {
    std::fill(parent_.begin(), parent_.end(), gp::unreached);
    frontier_.clear();
    if (part_.owner(root) == me_) {
      parent_[root - c_.first] = static_cast<std::int32_t>(root);
      frontier_.push_back(root - c_.first);
    }
    while (true) {
      next_.clear();
      for (vid l : frontier_) {
        const vid u = c_.first + l;
        for (std::uint64_t i = c_.offsets[l]; i < c_.offsets[l + 1]; ++i) {
          const vid v = c_.targets[i];
          const int o = part_.owner(v);
          if (o == me_) {
            claim(v - c_.first, u);
          } else {
            auto& b = out_[static_cast<std::size_t>(o)];
            b.push_back(v);
            b.push_back(u);
          }
        }
      }
      const std::vector<vid> in = exchange(out_, counts_, rcounts_, sdispls_, rdispls_, send_);
      for (std::size_t k = 0; k < in.size(); k += 2) claim(in[k] - c_.first, in[k + 1]);
      unsigned long long size = next_.size();
      unsigned long long global = 0;
      MPI_Allreduce(&size, &global, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      if (global == 0) break;
      frontier_.swap(next_);
    }
  }

 private:
  void claim(vid l, vid parent) {
    if (parent_[l] < 0) {
      parent_[l] = static_cast<std::int32_t>(parent);
      next_.push_back(l);
    }
  }

  const local_csr& c_;
  const partition& part_;
  int me_;
  std::vector<std::int32_t> parent_;
  std::vector<vid> frontier_;
  std::vector<vid> next_;
  std::vector<std::vector<vid>> out_;
  std::vector<int> counts_, rcounts_, sdispls_, rdispls_;
  std::vector<vid> send_;
};

int run(int argc, char** argv, int me, int ranks) {
  const gp::program_info info{
      "mpi_graph_bfs", "MPI two-sided level-synchronous BFS", {"bfs"}, false, false};
  gp::options o;
  if (const int rc = gp::start(info, argc, argv, me == 0, o); rc >= 0) return rc;
  const ag::kronecker g(o.scale, o.edgefactor, o.seed);
  const partition part(static_cast<std::uint64_t>(g.vertex_count()), ranks);
  if (me == 0) {
    std::printf("Graph500-style BFS, %s, %d ranks, scale %d, edgefactor %d, seed %llu\n",
                info.flavour, ranks, o.scale, o.edgefactor,
                static_cast<unsigned long long>(o.seed));
    std::fflush(stdout);
  }
  gp::report r;
  r.program = &info;
  r.opts = &o;
  r.processes = ranks;

  // This rank's share of the edge list, as arcs (source, target) per source's owner.
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  const ag::index_range share = ag::share_of(g.edge_count(), ranks, me);
  std::vector<ag::edge> edges(share.end - share.begin);
  for (std::uint64_t e = share.begin; e < share.end; ++e) edges[e - share.begin] = g.edge_at(e);
  MPI_Barrier(MPI_COMM_WORLD);
  r.generation_time = MPI_Wtime() - t0;

  t0 = MPI_Wtime();
  local_csr c;
  c.first = part.first(me);
  c.rows = part.size(me);
  {
    std::vector<std::vector<vid>> out(static_cast<std::size_t>(ranks));
    for (const ag::edge& e : edges) {
      if (e.u == e.v) continue;
      const auto u = static_cast<vid>(e.u);
      const auto v = static_cast<vid>(e.v);
      auto& bu = out[static_cast<std::size_t>(part.owner(u))];
      bu.push_back(u);
      bu.push_back(v);
      auto& bv = out[static_cast<std::size_t>(part.owner(v))];
      bv.push_back(v);
      bv.push_back(u);
    }
    std::vector<ag::edge>().swap(edges);
    const auto p = static_cast<std::size_t>(ranks);
    std::vector<int> counts(p), rcounts(p), sdispls(p), rdispls(p);
    std::vector<vid> send;
    const std::vector<vid> arcs = exchange(out, counts, rcounts, sdispls, rdispls, send);
    c.offsets.assign(static_cast<std::size_t>(c.rows) + 1, 0);
    for (std::size_t k = 0; k < arcs.size(); k += 2) ++c.offsets[arcs[k] - c.first + 1];
    for (std::size_t l = 0; l < c.rows; ++l) c.offsets[l + 1] += c.offsets[l];
    c.targets.resize(arcs.size() / 2);
    std::vector<std::uint64_t> next(c.offsets.begin(), c.offsets.end() - 1);
    for (std::size_t k = 0; k < arcs.size(); k += 2)
      c.targets[next[arcs[k] - c.first]++] = arcs[k + 1];
  }
  MPI_Barrier(MPI_COMM_WORLD);
  r.construction_time = MPI_Wtime() - t0;

  // The search keys: every rank reads the same "degree >= 1" bitmap.
  const std::size_t words = (part.n + 63) / 64;
  std::vector<std::uint64_t> has_edges(words, 0);
  for (vid l = 0; l < c.rows; ++l) {
    if (c.degree(l) > 0) has_edges[(c.first + l) / 64] |= std::uint64_t{1} << ((c.first + l) % 64);
  }
  MPI_Allreduce(MPI_IN_PLACE, has_edges.data(), static_cast<int>(words), MPI_UINT64_T, MPI_BOR,
                MPI_COMM_WORLD);
  const std::vector<vid> keys = gp::search_keys(g, o.roots, [&](ag::vertex_t v) {
    return (has_edges[static_cast<std::size_t>(v) / 64] >> (v % 64)) & 1;
  });
  if (keys.empty()) {  // the same on every rank
    if (me == 0) gp::has_keys(info.name, keys, o);
    return 1;
  }

  std::optional<gp::verifier> check;
  if (o.verify && me == 0) check.emplace(g, o.corrupt);
  bool ok = true;
  std::vector<int> sizes(static_cast<std::size_t>(ranks));
  std::vector<int> displs(static_cast<std::size_t>(ranks));
  for (int q = 0; q < ranks; ++q) {
    sizes[static_cast<std::size_t>(q)] = static_cast<int>(part.size(q));
    displs[static_cast<std::size_t>(q)] = static_cast<int>(part.first(q));
  }
  std::vector<std::int32_t> all(me == 0 && o.verify ? part.n : 0);

  bfs_search s(c, part, me);
  s.run(keys[0]);  // warm-up, as the reference
  for (std::size_t k = 0; k < keys.size(); ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    s.run(keys[k]);
    MPI_Barrier(MPI_COMM_WORLD);
    r.bfs.times.push_back(MPI_Wtime() - t0);
    unsigned long long degrees = 0;
    for (vid l = 0; l < c.rows; ++l) degrees += s.parent()[l] >= 0 ? c.degree(l) : 0;
    MPI_Allreduce(MPI_IN_PLACE, &degrees, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    r.bfs.edges.push_back(static_cast<double>(degrees / 2));
    if (o.verify) {
      MPI_Gatherv(s.parent().data(), static_cast<int>(c.rows), MPI_INT32_T, all.data(),
                  sizes.data(), displs.data(), MPI_INT32_T, 0, MPI_COMM_WORLD);
      if (me == 0) ok = gp::check(info.name, "bfs", check->bfs_tree(keys[k], all)) && ok;
    }
  }
  if (me == 0) {
    gp::print_report(r);
    if (o.verify) {
      r.validated = ok;
      std::printf(ok ? "Solution validates\n" : "Solution fails validation\n");
    }
    gp::write_json(r);
  }
  int status = ok ? 0 : 1;
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int status = run(argc, argv, me, ranks);
  MPI_Finalize();
  return status;
}
