// The Graph500 (version 3) benchmark on oneside: a Kronecker graph (kronecker.hpp, generated in
// parallel, the same at every rank count), kernel 1 (the distributed CSR, dist_graph.hpp, timed
// as construction_time), kernel 2 (BFS from `--nbfs` search keys, bfs.hpp, in the variant
// --bfs names) and kernel 3 (SSSP by delta-stepping from the same keys, sssp.hpp; --no-sssp
// skips it), each tree validated by the specification's rules (bfs_validate.hpp,
// sssp_validate.hpp), and the results printed in the reference's format (graph500_output.hpp),
// with an optional JSON record. "Solution validates" ends the output when every search
// validated. The SSSP solver's preparation of the graph (rows sorted by weight, ghosts) is
// kernel 1's work and counted in construction_time, as the reference counts its own.
//
//   oneside-run -n 2 graph500 --scale 18 --bfs diropt
//
// Each kernel is one function taking the graph and the keys and returning a kernel_result (its
// per-search times and edge counts), so another kernel (SSSP) joins the list print_results gets.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <oneside/oneside.hpp>

#include "bfs.hpp"
#include "bfs_validate.hpp"
#include "common/app_main.hpp"
#include "graph500_cli.hpp"
#include "graph500_output.hpp"
#include "sssp.hpp"
#include "sssp_validate.hpp"
#include "timing.hpp"

namespace {

namespace gr = oneside::apps::graph;
using gr::timed;

// The input and what the kernels share.
struct graph_input {
  const gr::dist_csr& csr;
  const std::vector<gr::edge>& edges;  // this rank's share of the edge list (validation)
  const std::vector<gr::vertex_t>& roots;
};

// A kernel failed validation: the message the root prints.
struct kernel_failure {
  std::string message;
};

// Kernel 2: a search from each key, timed, its edges counted, its tree validated. Returns false
// (with `failure` set, the same at every rank) at the first tree that does not validate.
bool run_bfs(const graph_input& in, const gr::graph500_options& o, const oneside::team& t,
             gr::kernel_result& result, std::uint64_t& state_bytes, kernel_failure& failure) {
  const gr::bfs_kind kind = o.bfs == "topdown" ? gr::bfs_kind::topdown : gr::bfs_kind::diropt;
  gr::bfs_tuning tuning;
  tuning.claims = o.claims == "rpc"      ? gr::bfs_claims::rpc
                  : o.claims == "atomic" ? gr::bfs_claims::atomic
                                         : gr::bfs_claims::direct;
  gr::bfs_solver solver(in.csr, t, tuning);
  std::optional<gr::bfs_validator> validator;
  if (o.validate) validator.emplace(in.csr, in.edges, t);
  result.name = "bfs";
  for (std::size_t i = 0; i < in.roots.size(); ++i) {
    const gr::vertex_t root = in.roots[i];
    result.times.push_back(timed(t, [&] { solver.run(root, kind); }));
    result.nedges.push_back(static_cast<double>(solver.traversed_edges()));
    if (!validator) {
      result.validate_times.push_back(-1.0);
      continue;
    }
    if (o.inject_error && i == 0 && in.csr.partition.owner(root) == in.csr.rank) {
      solver.parents().local().data()[root - in.csr.first] = -1;
    }
    gr::bfs_verdict verdict;
    result.validate_times.push_back(
        timed(t, [&] { verdict = validator->validate(solver.parents(), root); }));
    if (!verdict.is_valid()) {
      failure.message = "BFS " + std::to_string(i) + " from root " + std::to_string(root) +
                        " does not validate: " + verdict.message();
      return false;
    }
  }
  state_bytes = oneside::allreduce(t, solver.state_bytes(), oneside::op::sum);
  return true;
}

// Kernel 3: shortest paths from each key, timed, validated; edges counted as for BFS (those of
// the root's component; the validation counts them, or, without it, each reached row's arcs
// to smaller vertices: a reached vertex's neighbours are all reached).
bool run_sssp(const graph_input& in, gr::delta_stepping& solver, const gr::graph500_options& o,
              const oneside::team& t, gr::kernel_result& result, kernel_failure& failure) {
  result.name = "sssp";
  for (std::size_t i = 0; i < in.roots.size(); ++i) {
    const gr::vertex_t root = in.roots[i];
    gr::sssp_result r;
    result.times.push_back(timed(t, [&] { r = solver.run(root, o.delta); }));
    if (!o.validate) {
      std::uint64_t edges = 0;
      for (gr::vertex_t l = 0; l < in.csr.local_rows(); ++l) {
        if (r.parent[static_cast<std::size_t>(l)] < 0) continue;
        for (gr::vertex_t v : in.csr.neighbours(l)) edges += v < in.csr.first + l ? 1 : 0;
      }
      result.nedges.push_back(static_cast<double>(oneside::allreduce(t, edges, oneside::op::sum)));
      result.validate_times.push_back(-1.0);
      continue;
    }
    if (o.inject_sssp_error && i == 0 && in.csr.partition.owner(root) == in.csr.rank) {
      r.distance[static_cast<std::size_t>(root - in.csr.first)] = 1.0F;
    }
    gr::sssp_verdict verdict;
    result.validate_times.push_back(
        timed(t, [&] { verdict = gr::validate_sssp(in.csr, root, r, t); }));
    result.nedges.push_back(static_cast<double>(verdict.edges));
    if (!verdict.is_valid()) {
      failure.message = "SSSP " + std::to_string(i) + " from root " + std::to_string(root) +
                        " does not validate: " + verdict.message();
      return false;
    }
  }
  return true;
}

int run(int argc, char** argv) {
  const oneside::team& world = oneside::world();
  const bool root = world.rank() == 0;
  std::string error;
  const gr::graph500_options o = gr::parse_graph500_options(argc, argv, error);
  // Every rank leaves with status 1 together, after the root printed why (the launcher ends
  // the job at the first failed rank).
  auto fail = [&](const std::string& msg) {
    if (root) {
      std::fflush(stdout);
      std::fprintf(stderr, "graph500: error: %s\n", msg.c_str());
    }
    oneside::barrier(world);
    return 1;
  };
  if (!error.empty()) return fail(error);
  if (o.help) {
    if (root) gr::print_graph500_usage();
    return 0;
  }

  const gr::kronecker g(o.scale, o.edgefactor, o.seed);
  gr::run_info info;
  info.scale = o.scale;
  info.edgefactor = o.edgefactor;
  info.nbfs = o.nbfs;
  info.seed = o.seed;
  info.ranks = world.size();
  info.variant = o.bfs;
  info.edge_list_bytes = g.edge_count() * 2 * sizeof(gr::vertex_t);

  // The edge list (this rank's share), then kernel 1 from it; the list stays for validation.
  std::vector<gr::edge> edges;
  info.graph_generation = timed(world, [&] { edges = gr::edge_share(g, world); });
  std::optional<gr::dist_csr> csr;
  std::optional<gr::delta_stepping> sssp;
  info.construction_time = timed(world, [&] {
    csr.emplace(gr::build_dist_csr(g, edges, world));
    if (o.sssp) sssp.emplace(*csr, world);
  });
  if (!o.validate) edges = {};
  info.csr_bytes =
      oneside::allreduce(world,
                         static_cast<std::uint64_t>(csr->offsets.size() * sizeof(std::uint64_t) +
                                                    csr->targets.size() * sizeof(gr::target_t) +
                                                    csr->weights.size() * sizeof(float)),
                         oneside::op::sum);

  const std::uint64_t searchable = gr::searchable_vertices(*csr, world);
  if (static_cast<std::uint64_t>(o.nbfs) > searchable) {
    return fail("option --nbfs: " + std::to_string(o.nbfs) + " search keys asked for, but only " +
                std::to_string(searchable) + " vertices have edges (use a smaller --nbfs)");
  }
  const std::vector<gr::vertex_t> roots = gr::select_roots(*csr, o.nbfs, world);
  const graph_input in{*csr, edges, roots};

  std::vector<gr::kernel_result> kernels(o.sssp ? 2 : 1);
  kernel_failure failure;
  if (!run_bfs(in, o, world, kernels[0], info.bfs_state_bytes, failure) ||
      (sssp && !run_sssp(in, *sssp, o, world, kernels[1], failure))) {
    if (root) std::printf("No results printed for invalid run.\n");
    return fail(failure.message);
  }
  info.validated = o.validate;

  if (root) {
    std::printf("Graph500 v3 BFS%s on oneside (%s), %d ranks\n", o.sssp ? " and SSSP" : "",
                o.bfs.c_str(), world.size());
    gr::print_results(stdout, info, kernels);
    std::printf("%-32s%.2f (CSR and BFS state; the edge list: 16)\n",
                "bytes_per_edge:", gr::bytes_per_edge(info));
  }
  int json_ok = 1;
  if (root && !o.json.empty()) json_ok = gr::write_json(o.json, info, kernels) ? 1 : 0;
  json_ok = oneside::broadcast(world, json_ok, 0);
  if (json_ok == 0) return fail("option --json: cannot write '" + o.json + "'");
  if (root && info.validated) std::printf("Solution validates\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return oneside::apps::app_main("graph500", argc, argv, run);
}
