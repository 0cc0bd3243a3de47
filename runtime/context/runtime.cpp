// Opening and closing the runtime: bootstrap, transport, teams and the task arena, in that
// order, and back. Settings are read (and checked) here, once.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include <oneside/runtime/runtime.hpp>
#include <oneside/runtime/topology.hpp>

#include "bootstrap/bootstrap.hpp"
#include "context/context.hpp"
#include "fiber/fibers.hpp"
#include "progress/progress_thread.hpp"
#include "progress/wait_watch.hpp"
#include "runtime/check.hpp"
#include "runtime/settings.hpp"
#include "task/arena_impl.hpp"
#include "team/team_impl.hpp"
#include "transport/transport_table.hpp"

namespace oneside {
namespace detail {
// Defined in context.cpp: publishing and retiring the context. The wait parameters are set
// before any thread of the runtime exists (the agent reads them) and stay until the next open.
void set_wait_params(const wait_params& w);
void install_context(std::unique_ptr<context> c);
std::unique_ptr<context> uninstall_context();
}  // namespace detail

namespace {

// The environment's ONESIDE_* variables, checked before anything is created. A problem is a
// mistake of whoever started the program that no caller can repair, so the process ends as
// oneside-run would end: one line per problem on stderr and exit status 2 (an exception would
// abort every rank with "terminate called" and a core). Under an MPI launcher only its rank 0
// prints (every rank sees the same environment); under oneside-run, which checked the same
// environment and printed its warnings, only errors are printed (an environment changed on the
// way, by a wrapper script). Warnings are printed once per process.
void enforce_settings() {
  std::vector<detail::setting_problem> problems =
      detail::check_environment(detail::settings_reader::runtime);
  if (problems.empty()) {
    if (std::string p = transport::build_problem(); !p.empty()) problems.push_back({true, p});
  }
  if (problems.empty()) return;
  static std::atomic<bool> warned{false};
  const bool by_launcher = detail::started_by_launcher();
  const bool warn = !by_launcher && !warned.exchange(true);
  bool fatal = false;
  std::string text;
  for (const detail::setting_problem& p : problems) {
    fatal = fatal || p.fatal;
    if (!p.fatal && !warn) continue;
    text.append("oneside: ").append(p.fatal ? "" : "warning: ").append(p.text).append("\n");
  }
  if (by_launcher || detail::mpi_launcher_rank() <= 0) {
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  }
  if (fatal) {
    std::fflush(nullptr);
    std::exit(2);
  }
}

bool decide_oversubscribed(const detail::bootstrap& boot) {
  const std::string mode = detail::setting_string("ONESIDE_OVERSUBSCRIBE");
  if (mode == "yes") return true;
  if (mode == "no") return false;
  const machine_topology m = this_machine();
  return boot.local_size() > std::max(1, m.pus);
}

// Whether the node's ranks take every PU (or are taken to outnumber them): no PU is left for
// a helper thread to spin or poll on without taking a computing rank's time.
bool decide_full(const detail::bootstrap& boot, bool oversubscribed) {
  return oversubscribed || boot.local_size() >= std::max(1, this_machine().pus);
}

detail::wait_params read_wait_params(bool oversubscribed) {
  detail::wait_params w;
  w.spin_ns = detail::setting_is_set("ONESIDE_WAIT_SPIN_NS")
                  ? detail::setting_int("ONESIDE_WAIT_SPIN_NS")
                  : (oversubscribed ? 0 : detail::setting_int("ONESIDE_WAIT_SPIN_NS"));
  w.yield_ns = detail::setting_int("ONESIDE_WAIT_YIELD_NS");
  w.sleep_max_ns = detail::setting_int("ONESIDE_WAIT_SLEEP_MAX_US") * 1000;  // at least 1 us
  w.poll_progress = detail::setting_string("ONESIDE_AGENT") == "poll";
  return w;
}

int arena_threads(const rank_topology& topo, const detail::bootstrap& boot) {
  if (const std::int64_t n = detail::setting_int("ONESIDE_TASK_THREADS"); n > 0) {
    return static_cast<int>(n);
  }
  if (topo.is_bound) return std::max<int>(1, static_cast<int>(topo.cores.size()));
  // Unbound: this rank's share of the node's cores.
  const machine_topology m = this_machine();
  return std::max(1, m.cores / std::max(1, boot.local_size()));
}

// Closed transports that handles the program still holds (segments and exposures, and the
// teams and windows made of them) may release into, which they then ignore. Each stays only
// while it has such handles: a program that opens and closes the runtime again and again does
// not keep every transport it had. Called under g_open_mutex.
std::vector<std::unique_ptr<transport::runtime_backend>>& graveyard() {
  static std::vector<std::unique_ptr<transport::runtime_backend>> g;
  return g;
}
std::mutex g_open_mutex;

// Adds a closed transport to the graveyard (when given one) and destroys those no handle
// refers to any more.
void bury(std::unique_ptr<transport::backend> closed) {
  auto& g = graveyard();
  if (closed) {
    g.emplace_back(static_cast<transport::runtime_backend*>(closed.release()));
  }
  std::erase_if(g, [](const auto& t) { return !t->in_use(); });
}

// Local teardown of a context that will not be closed collectively: drop the teams, stop the
// agent and release this rank's shared memory; the transport object goes to the graveyard.
void retire(std::unique_ptr<detail::context> ctx) {
  if (!ctx) return;
  detail::set_progress_thread(false);
  detail::layer_registry::release_all(*ctx);
  ctx->world = team();
  ctx->local = team();
  ctx->arena.reset();
  static_cast<transport::runtime_backend&>(*ctx->transport).abandon();
  ctx->boot->abandon();
  bury(std::move(ctx->transport));
}

}  // namespace

runtime::runtime() : runtime(0, nullptr) {}

runtime::runtime(int /*argc*/, char** /*argv*/) {
  enforce_settings();  // may end the process: before the lock and before anything exists
  std::lock_guard lock(g_open_mutex);
  ONESIDE_CHECK(detail::current_context() == nullptr, error_class::arg, {.call = "runtime"},
                "a oneside runtime is already open in this process");
  bury(nullptr);  // transports whose last handles went since
  auto ctx = std::make_unique<detail::context>();
  detail::set_hang_timeout(
      std::min<std::int64_t>(detail::setting_int("ONESIDE_HANG_TIMEOUT"), 1'000'000'000) *
      1'000'000'000);
  ctx->boot = detail::make_bootstrap();
  // From here until close, exiting with status 0 fails the job (the launcher reads this).
  ctx->boot->note_runtime(detail::runtime_state::open);
  ctx->oversubscribed = decide_oversubscribed(*ctx->boot);
  // Read every setting the open needs before anything is created (enforce_settings checked
  // their values; what depends on the job, such as shm across nodes, is checked here).
  const transport::transport_plan plan = transport::plan_transport(
      *ctx->boot, ctx->oversubscribed, decide_full(*ctx->boot, ctx->oversubscribed));
  detail::wait_params wait = read_wait_params(ctx->oversubscribed);
  // Over a network backend, waiting threads also drive it (incoming one-sided traffic and
  // messages).
  wait.poll_progress = wait.poll_progress || plan.waits_progress();
  (void)detail::setting_int("ONESIDE_COLL_SLOT_BYTES");
  (void)detail::setting_int("ONESIDE_COLL_SLOTS");
  ctx->topology = this_rank_topology();
  const int threads = arena_threads(ctx->topology, *ctx->boot);

  detail::set_wait_params(wait);
  if (detail::setting_bool("ONESIDE_WAIT_MEMBARRIER")) (void)detail::enable_asymmetric_fences();
  ctx->transport = transport::make_transport(*ctx->boot, plan);
  detail::context& c = *ctx;
  detail::install_context(std::move(ctx));
  try {
    c.world = detail::team_impl::make_world();
    // The node-local team: the ranks whose memory this one loads and stores (the transport
    // says which; the lowest of them is the node's color).
    const rank_t node = c.transport->node_ranks().front();
    c.local = c.world.split(node, c.world.rank());
    c.arena = std::make_unique<detail::arena_impl>(threads);
    detail::layer_registry::open_all(c);
    if (detail::setting_bool("ONESIDE_PROGRESS_THREAD")) detail::set_progress_thread(true);
    c.boot->barrier();
  } catch (...) {
    retire(detail::uninstall_context());
    throw;
  }
  rank_ = c.world.rank();
  size_ = c.world.size();
  open_ = true;
}

void runtime::close() {
  if (!open_) return;
  open_ = false;
  std::lock_guard lock(g_open_mutex);
  detail::context* c = detail::current_context();
  if (c == nullptr) return;
  detail::drain_fibers();  // this thread's fibers end first (they may still talk)
  c->boot->barrier();      // every rank is done with collectives and transport calls
  c->arena.reset();        // tasks still queued finish first
  detail::set_progress_thread(false);
  detail::layer_registry::release_all(*c);  // upper layers' memory, before the transport
  c->world = team();
  c->local = team();
  static_cast<transport::runtime_backend&>(*c->transport).close();
  std::unique_ptr<detail::context> ctx = detail::uninstall_context();
  ctx->boot->note_runtime(detail::runtime_state::closed);
  bury(std::move(ctx->transport));
}

runtime::~runtime() {
  if (!open_) return;
  if (std::uncaught_exceptions() > 0) {
    // This rank is failing: no collective close (the others may never get there). Release
    // what is ours; the launcher ends the job and sweeps the rest.
    open_ = false;
    std::lock_guard lock(g_open_mutex);
    retire(detail::uninstall_context());
    return;
  }
  try {
    close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::abort();
  }
}

bool is_open() noexcept {
  return detail::current_context() != nullptr;
}

}  // namespace oneside
