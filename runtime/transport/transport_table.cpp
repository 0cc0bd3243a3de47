// The transport table (transport_table.hpp).
#include "transport/transport_table.hpp"

#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "runtime/check.hpp"
#include "runtime/settings.hpp"
#include "transport/router.hpp"
#if ONESIDE_HAVE_MPI
#include "transport/mpi/mpi_transport.hpp"
#endif

namespace oneside::transport {

using oneside::detail::setting_bool;
using oneside::detail::setting_int;
using oneside::detail::setting_is_set;
using oneside::detail::setting_string;

std::atomic<std::uint64_t> batched_get_messages_for_testing{0};

std::string build_problem() {
#if ONESIDE_HAVE_MPI
  return {};
#else
  const std::string choice = setting_string("ONESIDE_TRANSPORT");
  if (choice != "mpi") return {};
  return "ONESIDE_TRANSPORT='" + choice + "' needs a oneside built with ONESIDE_WITH_MPI";
#endif
}

transport_plan plan_transport(const oneside::detail::bootstrap& boot, bool oversubscribed,
                              bool full) {
  const std::string choice = setting_string("ONESIDE_TRANSPORT");
  // A network backend between nodes when an MPI launcher started the job, unless shm is asked
  // for (every rank must then share one node); shm alone otherwise.
  const bool under_mpi = boot.kind() == "mpi";
  ONESIDE_CHECK(choice != "mpi" || under_mpi, error_class::arg, {.call = "runtime"},
                "ONESIDE_TRANSPORT=mpi needs a job started by an MPI launcher (mpirun, srun) and "
                "a oneside built with ONESIDE_WITH_MPI");
  ONESIDE_CHECK(choice != "shm" || !under_mpi || boot.local_size() == boot.size(), error_class::arg,
                {.call = "runtime"},
                "ONESIDE_TRANSPORT=shm needs every rank on one node, but this job has " +
                    std::to_string(boot.local_size()) + " of its " + std::to_string(boot.size()) +
                    " ranks on this node");
  transport_plan p;
  p.node.am_slots = static_cast<std::size_t>(setting_int("ONESIDE_AM_SLOTS"));
  p.node.am_slot_bytes = static_cast<std::size_t>(setting_int("ONESIDE_AM_SLOT_BYTES"));
  p.node.agent_thread = setting_string("ONESIDE_AGENT") == "thread";
  p.node.remap_user_memory = setting_bool("ONESIDE_SHM_REMAP");
  p.node.load_store = setting_bool("ONESIDE_SHM_LOAD_STORE");
  const bool spin_set = setting_is_set("ONESIDE_AGENT_SPIN_US");
  p.node.agent_spin_ns =
      oversubscribed || (full && !spin_set) ? 0 : setting_int("ONESIDE_AGENT_SPIN_US") * 1000;
  // Inline transfers wait for the owner's agent: only while it runs soon.
  const auto inline_bytes = static_cast<std::size_t>(setting_int("ONESIDE_SHM_INLINE_BYTES"));
  p.node.inline_bytes = oversubscribed || !p.node.agent_thread ? 0 : inline_bytes;
  p.network = under_mpi && choice != "shm";
  p.every_peer_remote = choice == "mpi";
  p.ranks_per_node = static_cast<int>(setting_int("ONESIDE_MPI_RANKS_PER_NODE"));
  p.poll_spin_ns = p.node.agent_spin_ns;
  p.poll_max_ns = full && !setting_is_set("ONESIDE_MPI_POLL_US")
                      ? std::int64_t{1'000'000}
                      : setting_int("ONESIDE_MPI_POLL_US") * 1000;
  p.attach = setting_bool("ONESIDE_MPI_ATTACH");
  p.get_batch = setting_bool("ONESIDE_MPI_GET_BATCH");
  return p;
}

std::unique_ptr<runtime_backend> make_transport(oneside::detail::bootstrap& boot,
                                                const transport_plan& plan) {
  if (!plan.network) return std::make_unique<shm>(boot, plan.node);
#if ONESIDE_HAVE_MPI
  // The router first (the backends' front: their handlers send through it), then the node's
  // backend over the node's bootstrap, then the network's, whose memory is the node's.
  std::vector<rank_t> members;
  std::unique_ptr<oneside::detail::bootstrap> node_boot = boot.split_node(
      {.alone = plan.every_peer_remote, .ranks_per_node = plan.ranks_per_node}, members);
  ONESIDE_CHECK(node_boot != nullptr, error_class::intern, {.call = "runtime"},
                "the job's bootstrap cannot tell its nodes");
  auto r = std::make_unique<router>(boot.rank(), boot.size(), members,
                                    plan.every_peer_remote ? "mpi" : "mpi+shm");
  shm::options node_opts = plan.node;
  node_opts.job_ranks = members;
  node_opts.job_size = boot.size();
  node_opts.front = r.get();
  auto node = std::make_unique<shm>(*node_boot, node_opts);
  mpi_options net_opts;
  net_opts.spin_ns = plan.poll_spin_ns;
  net_opts.poll_max_ns = plan.poll_max_ns;
  net_opts.attach = plan.attach;
  net_opts.get_batch = plan.get_batch;
  net_opts.memory = node.get();
  net_opts.bell = &node->local_doorbell();
  net_opts.front = r.get();
  std::unique_ptr<runtime_backend> net = make_mpi_backend(boot, net_opts);
  r->attach(std::move(node_boot), std::move(node), std::move(net));
  boot.barrier();  // every rank's router is whole before any peer may send it anything
  return r;
#else
  ONESIDE_CHECK(false, error_class::arg, {.call = "runtime"},
                "this oneside was built without ONESIDE_WITH_MPI");
  return nullptr;
#endif
}

}  // namespace oneside::transport
