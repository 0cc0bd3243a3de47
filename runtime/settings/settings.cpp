// The registry of every ONESIDE_* setting (STYLE.md R9): declared once here with its type,
// default and meaning. The README's settings table is checked against this list by
// tests/unit/settings_test.cpp, and `oneside-run --settings` prints it.
#include "runtime/settings.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>

#include <oneside/runtime/error.hpp>

#include "runtime/check.hpp"

namespace oneside {
namespace {

using enum setting_type;

// clang-format off
constexpr std::array registry{
  // Transport and progress.
  setting_info{"ONESIDE_TRANSPORT", choice, "auto",
               "Transport for data movement between ranks. auto: shared memory under oneside-run "
               "or alone; under mpirun/srun (a build with ONESIDE_WITH_MPI), MPI between nodes and "
               "shared memory within a node. shm: shared memory only (every rank on one node). "
               "mpi: every peer through MPI, as if each rank had a node of its own.",
               "auto|shm|mpi"},
  setting_info{"ONESIDE_MPI_RANKS_PER_NODE", integer, "0",
               "MPI transport: pretend nodes hold this many consecutive world ranks (0: the real "
               "nodes), so one machine can run the hybrid of shared memory within a node and "
               "MPI between nodes."},
  setting_info{"ONESIDE_MPI_POLL_US", integer, "20",
               "MPI transport: longest sleep, in microseconds, of a rank's progress thread "
               "between polls of MPI when nothing arrives (it polls without sleeping while "
               "messages keep coming)."},
  setting_info{"ONESIDE_MPI_ATTACH", boolean, "1",
               "MPI transport: attach oneside's own memory (its segments, in chunks of 64 MiB) "
               "to the job's MPI window, so remote ranks reach it with MPI_Put/MPI_Get. 0 serves "
               "it by messages to the owner's progress thread, as memory the runtime did not "
               "allocate always is (and chunks past the MPI engine's limit of attachments)."},
  setting_info{"ONESIDE_AGENT", choice, "thread",
               "Who runs incoming active messages: a per-rank agent thread that sleeps when idle, "
               "or the rank's own waits and progress calls.", "thread|poll"},
  setting_info{"ONESIDE_AGENT_SPIN_US", integer, "50",
               "Microseconds the agent keeps polling after a message before it sleeps "
               "(0 when ranks outnumber cores)."},
  setting_info{"ONESIDE_SHM_REMAP", boolean, "1",
               "Windows over memory the runtime did not allocate (create, and regions of a page "
               "or more attached to dynamic windows): move its pages into shared memory in place "
               "(anonymous private memory only), so node peers load and store it directly "
               "instead of using cross-memory attach and the owner's agent."},
  setting_info{"ONESIDE_SHM_LOAD_STORE", boolean, "1",
               "Whether ranks of the shm transport load and store each other's memory. 0 makes "
               "every peer remote, as if on another node: data moves with cross-memory attach, "
               "atomics and accumulates run at the owner's agent, collectives push their data, "
               "and local_team() is each rank alone (tests the network-shaped paths on one node)."},
  setting_info{"ONESIDE_SHM_INLINE_BYTES", size, "1K",
               "Puts and gets of at most this many bytes to memory of the shm transport that a rank "
               "does not load and store (ONESIDE_SHM_LOAD_STORE=0, or user memory that could not "
               "move into shared memory) travel in a message its owner's agent applies instead of "
               "a cross-memory attach (gets: at most 256 bytes). 0: never. Off when ranks "
               "outnumber cores or ONESIDE_AGENT=poll (the owner's agent may not run soon)."},
  setting_info{"ONESIDE_AM_SLOTS", integer, "256",
               "Slots in each rank's active-message queue."},
  setting_info{"ONESIDE_AM_SLOT_BYTES", size, "4K",
               "Bytes per active-message slot (the largest payload is this minus a 64-byte header)."},
  // Waiting.
  setting_info{"ONESIDE_WAIT_SPIN_NS", integer, "20000",
               "Nanoseconds a wait spins before it starts yielding the CPU "
               "(0 when ranks outnumber cores: waits yield at once)."},
  setting_info{"ONESIDE_WAIT_YIELD_NS", integer, "200000",
               "Nanoseconds a wait yields the CPU before it sleeps on the doorbell futex."},
  setting_info{"ONESIDE_WAIT_SLEEP_MAX_US", integer, "1000",
               "Longest single sleep of a wait, in microseconds (sleepers are also woken "
               "explicitly by whoever they wait for)."},
  setting_info{"ONESIDE_WAIT_MEMBARRIER", boolean, "1",
               "Whether a waiter about to sleep pays for the wake-up protocol's barrier with "
               "membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), once per wait, so that wakers (every "
               "put to a node peer) need no fence. 0 makes wakers fence instead (no interrupts "
               "of the CPUs running ranks). Ignored where the kernel lacks it."},
  setting_info{"ONESIDE_OVERSUBSCRIBE", choice, "auto",
               "Whether ranks outnumber cores: auto (count them), yes or no. Changes how long "
               "waits spin.", "auto|yes|no"},
  // Collectives.
  setting_info{"ONESIDE_COLL_SLOT_BYTES", size, "1M",
               "Bytes of each staging slot of a team member's collective ring; larger messages "
               "move in pipelined pieces of this size."},
  setting_info{"ONESIDE_COLL_SLOTS", integer, "4",
               "Staging slots in each team member's collective ring (at least 2); a long ring "
               "lets readers' caches let go of a slot before it is written again."},
  setting_info{"ONESIDE_BARRIER", choice, "auto",
               "Barrier algorithm: dissemination (fastest when every rank has a core), central "
               "(fewer scheduling rounds when ranks outnumber cores) or auto (picks by "
               "ONESIDE_OVERSUBSCRIBE).", "auto|dissemination|central"},
  // The pgas layer.
  setting_info{"ONESIDE_HEAP_SEGMENT_BYTES", size, "64M",
               "Bytes of each segment a rank's global heap adds when it is full (a larger "
               "request gets a segment of its own size); pages are used only once touched."},
  setting_info{"ONESIDE_HEAP_MAX_BYTES", size, "0",
               "Cap on the bytes of each rank's global heap segments (0: no cap). An allocation "
               "that would need more raises no_mem and leaves the heap as it was."},
  // Tasks and placement.
  setting_info{"ONESIDE_TASK_THREADS", integer, "0",
               "Threads in each rank's task arena; 0 means the number of cores the rank is "
               "bound to (or its share of the node when unbound)."},
  setting_info{"ONESIDE_BIND_TO", choice, "auto",
               "oneside-run's default for --bind-to: core while ranks do not outnumber cores, "
               "none otherwise.", "auto|core|numa|none"},
  setting_info{"ONESIDE_TIMEOUT", integer, "0",
               "oneside-run's default for --timeout, in seconds (0: no limit)."},
  setting_info{"ONESIDE_KILL_GRACE_MS", integer, "300",
               "Milliseconds oneside-run waits after SIGTERM before it sends SIGKILL to the "
               "ranks of a failed, timed-out or interrupted job."},
  // Set by oneside-run for each rank (the launcher-to-rank protocol).
  setting_info{"ONESIDE_JOB_ID", string, "",
               "Identifier of the job; names its shared-memory objects.", {}, true},
  setting_info{"ONESIDE_RANK", integer, "0", "Rank of this process in the job.", {}, true},
  setting_info{"ONESIDE_SIZE", integer, "1", "Number of ranks in the job.", {}, true},
  setting_info{"ONESIDE_LOCAL_RANK", integer, "0", "Rank of this process on its node.", {}, true},
  setting_info{"ONESIDE_LOCAL_SIZE", integer, "1", "Number of ranks on this node.", {}, true},
  setting_info{"ONESIDE_BINDING", string, "none",
               "The binding oneside-run applied to this rank (core, numa or none).", {}, true},
};
// clang-format on

const setting_info& find(std::string_view name) {
  auto it = std::find_if(registry.begin(), registry.end(),
                         [&](const setting_info& s) { return s.name == name; });
  if (it == registry.end()) {
    detail::raise(error_class::arg, {.call = "settings"},
                  "unknown setting " + std::string(name) + " (not in the registry)");
  }
  return *it;
}

std::string raw_value(const setting_info& s) {
  const std::string name(s.name);
  if (const char* v = std::getenv(name.c_str()); v != nullptr) return v;
  return std::string(s.default_value);
}

[[noreturn]] void bad_value(const setting_info& s, const std::string& value, std::string_view why) {
  detail::raise(error_class::arg, {.call = "settings"},
                std::string(s.name) + "='" + value + "' " + std::string(why));
}

}  // namespace

std::span<const setting_info> all_settings() noexcept {
  return registry;
}

std::string setting_value(std::string_view name) {
  return raw_value(find(name));
}

namespace detail {

int mpi_launcher_size() noexcept {
  // Open MPI's mpirun, PMIx launchers (srun --mpi=pmix), MPICH's hydra and PMI-1/2.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* v = std::getenv(name); v != nullptr) {
      int n = 0;
      const std::string_view sv(v);
      auto [ptr, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), n);
      if (ec == std::errc() && n > 0) return n;
    }
  }
  // PMIx launchers without PMIX_SIZE still give every rank a PMIX_RANK.
  return std::getenv("PMIX_RANK") != nullptr ? 1 : 0;
}

bool setting_is_set(std::string_view name) {
  const std::string n(find(name).name);
  return std::getenv(n.c_str()) != nullptr;
}

std::int64_t setting_int(std::string_view name) {
  const setting_info& s = find(name);
  ONESIDE_CHECK(s.type == setting_type::integer || s.type == setting_type::size, error_class::arg,
                {.call = "settings"}, std::string(name) + " is not a numeric setting");
  const std::string v = raw_value(s);
  std::int64_t n = 0;
  const char* first = v.data();
  const char* last = v.data() + v.size();
  auto [ptr, ec] = std::from_chars(first, last, n);
  if (ec != std::errc() || ptr == first) bad_value(s, v, "is not a number");
  if (ptr != last) {
    if (s.type != setting_type::size || ptr + 1 != last) bad_value(s, v, "has trailing characters");
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(*ptr)));
    const int shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : -1;
    if (shift < 0) bad_value(s, v, "has an unknown unit (use K, M or G)");
    n <<= shift;
  }
  if (n < 0) bad_value(s, v, "is negative");
  return n;
}

bool setting_bool(std::string_view name) {
  const setting_info& s = find(name);
  std::string v = raw_value(s);
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off" || v.empty()) return false;
  bad_value(s, v, "is not a boolean (use 1/0, true/false, yes/no, on/off)");
}

std::string setting_string(std::string_view name) {
  const setting_info& s = find(name);
  std::string v = raw_value(s);
  if (s.type == setting_type::choice) {
    std::string_view rest = s.choices;
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      if (rest.substr(0, bar) == v) return v;
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
    bad_value(s, v, "is not one of " + std::string(s.choices));
  }
  return v;
}

}  // namespace detail
}  // namespace oneside
