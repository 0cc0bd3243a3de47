// The registry of every ONESIDE_* setting (STYLE.md R9): declared once here with its type,
// default, valid values and meaning. The README's settings table is checked against this list
// by tests/unit/settings_test.cpp, and `oneside-run --settings` prints it. A new setting needs
// its entry only: integer and size settings must declare their valid range (checked at
// compile time, with the default inside it), and every reader of the environment (the
// launcher, the runtime's open, --settings) validates it from here.
#include "runtime/settings.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <unistd.h>

#include <oneside/runtime/error.hpp>

#include "runtime/check.hpp"
#include "topology/index_list.hpp"

namespace oneside {
namespace {

using enum setting_type;

// clang-format off
constexpr std::array registry{
  // Transport and progress.
  setting_info{"ONESIDE_TRANSPORT", choice, "auto", {},
               "Transport for data movement between ranks. auto: shared memory under oneside-run "
               "or alone; under mpirun/srun (a build with ONESIDE_WITH_MPI), MPI between nodes and "
               "shared memory within a node. shm: shared memory only (every rank on one node). "
               "mpi: every peer through MPI, as if each rank had a node of its own.",
               "auto|shm|mpi"},
  setting_info{"ONESIDE_MPI_RANKS_PER_NODE", integer, "0", {"0", "65536"},
               "MPI transport: pretend nodes hold this many consecutive world ranks (0: the real "
               "nodes), so one machine can run the hybrid of shared memory within a node and "
               "MPI between nodes."},
  setting_info{"ONESIDE_MPI_POLL_US", integer, "20", {"0", "1000000"},
               "MPI transport: longest sleep, in microseconds, of a rank's progress thread "
               "between polls of MPI when nothing arrives (it polls without sleeping while "
               "messages keep coming). Unset while the node's ranks take every PU: 1000 "
               "(polling every 20 µs cost a computing rank 2.5× its time)."},
  setting_info{"ONESIDE_MPI_ATTACH", boolean, "1", {},
               "MPI transport: attach oneside's own memory (its segments, in chunks of 64 MiB) "
               "to the job's MPI window, so remote ranks reach it with MPI_Put/MPI_Get. 0 serves "
               "it by messages to the owner's progress thread, as memory the runtime did not "
               "allocate always is (and chunks past the MPI engine's limit of attachments)."},
  setting_info{"ONESIDE_MPI_GET_BATCH", boolean, "1", {},
               "MPI transport: gets of up to 256 bytes that complete at the same flush (fibers' "
               "rget, loops of window gets) travel as one message, served by the target's "
               "progress, and one acknowledgement with every piece; a lone one is an MPI_Get. "
               "0: an MPI_Get each (one-sided on RDMA networks even while the target computes)."},
  setting_info{"ONESIDE_AGENT", choice, "thread", {},
               "Who runs incoming active messages: a per-rank agent thread that sleeps when idle, "
               "or the rank's own waits and progress calls.", "thread|poll"},
  setting_info{"ONESIDE_AGENT_SPIN_US", integer, "50", {"0", "1000000"},
               "Microseconds the agent (and the MPI transport's progress thread) keeps polling "
               "after a message before it sleeps (0 when ranks outnumber cores; unset, 0 while "
               "they take every PU)."},
  setting_info{"ONESIDE_SHM_REMAP", boolean, "1", {},
               "Windows over memory the runtime did not allocate (create, and regions of a page "
               "or more attached to dynamic windows): move its pages into shared memory in place "
               "(anonymous private memory only), so node peers load and store it directly "
               "instead of using cross-memory attach and the owner's agent."},
  setting_info{"ONESIDE_SHM_LOAD_STORE", boolean, "1", {},
               "Whether ranks of the shm transport load and store each other's memory. 0 makes "
               "every peer remote, as if on another node: data moves with cross-memory attach, "
               "atomics and accumulates run at the owner's agent, collectives push their data, "
               "and local_team() is each rank alone (tests the network-shaped paths on one node)."},
  setting_info{"ONESIDE_SHM_INLINE_BYTES", size, "1K", {"0", "1M"},
               "Puts and gets of at most this many bytes to memory of the shm transport that a rank "
               "does not load and store (ONESIDE_SHM_LOAD_STORE=0, or user memory that could not "
               "move into shared memory) travel in a message its owner's agent applies instead of "
               "a cross-memory attach (gets: at most 256 bytes; puts: at most what one message "
               "carries). 0: never. Off when ranks outnumber cores or ONESIDE_AGENT=poll (the "
               "owner's agent may not run soon)."},
  setting_info{"ONESIDE_AM_SLOTS", integer, "256", {"2", "65536"},
               "Slots in each rank's active-message queue (in shared memory: slots times "
               "ONESIDE_AM_SLOT_BYTES at most 256M)."},
  setting_info{"ONESIDE_AM_SLOT_BYTES", size, "4K", {"256", "16M"},
               "Bytes per active-message slot (the largest payload is this minus a 64-byte header)."},
  // Waiting.
  setting_info{"ONESIDE_WAIT_SPIN_NS", integer, "20000", {"0", "1000000000"},
               "Nanoseconds a wait spins before it starts yielding the CPU "
               "(0 when ranks outnumber cores: waits yield at once)."},
  setting_info{"ONESIDE_WAIT_YIELD_NS", integer, "200000", {"0", "60000000000"},
               "Nanoseconds a wait yields the CPU before it sleeps on the doorbell futex."},
  setting_info{"ONESIDE_WAIT_SLEEP_MAX_US", integer, "1000", {"1", "3600000000"},
               "Longest single sleep of a wait, in microseconds (sleepers are also woken "
               "explicitly by whoever they wait for)."},
  setting_info{"ONESIDE_WAIT_MEMBARRIER", boolean, "1", {},
               "Whether a waiter about to sleep pays for the wake-up protocol's barrier with "
               "membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), once per wait, so that wakers (every "
               "put to a node peer) need no fence. 0 makes wakers fence instead (no interrupts "
               "of the CPUs running ranks). Ignored where the kernel lacks it."},
  setting_info{"ONESIDE_OVERSUBSCRIBE", choice, "auto", {},
               "Whether ranks outnumber cores: auto (count them), yes or no. Changes how long "
               "waits spin.", "auto|yes|no"},
  // Collectives.
  setting_info{"ONESIDE_COLL_SLOT_BYTES", size, "1M", {"4K", "64M"},
               "Bytes of each staging slot of a team member's collective ring; larger messages "
               "move in pipelined pieces of this size."},
  setting_info{"ONESIDE_COLL_SLOTS", integer, "4", {"2", "64"},
               "Staging slots in each team member's collective ring (slots times "
               "ONESIDE_COLL_SLOT_BYTES at most 256M); a long ring lets readers' caches let go "
               "of a slot before it is written again."},
  setting_info{"ONESIDE_BARRIER", choice, "auto", {},
               "Barrier algorithm: dissemination (fastest when every rank has a core), central "
               "(fewer scheduling rounds when ranks outnumber cores) or auto (picks by "
               "ONESIDE_OVERSUBSCRIBE).", "auto|dissemination|central"},
  // The pgas layer.
  setting_info{"ONESIDE_HEAP_SEGMENT_BYTES", size, "64M", {"4K", "1T"},
               "Bytes of each segment a rank's global heap adds when it is full (a larger "
               "request gets a segment of its own size); pages are used only once touched."},
  setting_info{"ONESIDE_HEAP_MAX_BYTES", size, "0", {"0", "64T"},
               "Cap on the bytes of each rank's global heap segments (0: no cap). An allocation "
               "that would need more raises no_mem and leaves the heap as it was."},
  setting_info{"ONESIDE_AGG_BUFFER_BYTES", size, "4K", {"64", "16M"},
               "Bytes of each buffer an aggregator fills per destination (aggregator.hpp), at "
               "most what one active message carries (ONESIDE_AM_SLOT_BYTES minus 64 on shared "
               "memory): larger values are cut to that."},
  setting_info{"ONESIDE_AGG_BUFFERS", integer, "4", {"2", "1024"},
               "Buffers an aggregator holds per destination: the one it fills and those in "
               "flight. When all are in flight the sender makes progress until one is applied."},
  setting_info{"ONESIDE_AGG_ROUTING", choice, "auto", {},
               "How aggregators reach ranks of other nodes: direct (a buffer per rank), node (a "
               "buffer per node, spread there by one of its ranks through shared memory) or auto "
               "(node when some other node holds more than one rank).", "auto|direct|node"},
  // File I/O.
  setting_info{"ONESIDE_IO_ENGINE", choice, "uring", {},
               "How a file's I/O thread (nonblocking and split collective accesses, collective "
               "buffering's aggregators) moves an access's pieces: uring, batches of them "
               "through an io_uring (measured 1.7-2x faster for 4 KiB pieces; needs liburing in "
               "the build and a kernel that grants rings, else it runs as threads); threads, one "
               "pread/pwrite each.", "threads|uring"},
  setting_info{"ONESIDE_IO_MAPPED_READS", boolean, "1", {},
               "Reads of 16 pieces or more, 256 KiB or less each on average (strided and "
               "interleaved views), of a file on ext4, XFS or Btrfs copy the pieces out of "
               "read-only mappings of the file (8 MiB at a time) instead of one pread each, "
               "where a system call costs under 500 ns (measured once per process): 1.44x "
               "faster for 4 KiB pieces on ext4 (other file systems, tmpfs included, and "
               "machines with costlier kernel entries read by pread). 0: a pread per piece "
               "everywhere."},
  setting_info{"ONESIDE_IO_MAPPED_WRITES", boolean, "1", {},
               "Writes of 16 pieces or more, 256 KiB or less each on average (strided and "
               "interleaved views), to a file on tmpfs move the pieces into the file's pages "
               "through a mapping of it (process_vm_writev into the process's own mapping) "
               "instead of one pwrite each; collective writes of interleaved views by members on "
               "one node then skip collective buffering, each member writing its own pieces "
               "(4 KiB blocks of 1 GiB from 2 and 4 ranks: 0.94x and 0.91x a single-stream dd, "
               "1.35-1.5x faster than collective buffering). Files open write-only and disk file "
               "systems keep pwrite. 0: pwrite, and collective buffering for collective writes."},
  setting_info{"ONESIDE_IO_CB_READS", choice, "auto", {},
               "Whether collective reads (_all, _at_all) of interleaved views go through "
               "collective buffering when the members share one node (across nodes they always "
               "do): always; across-nodes (each member reads its own pieces); auto, when a "
               "system call costs 500 ns or more (measured once per process; 2-4x faster reads "
               "of 4 KiB pieces on a VM whose system calls cost 1 us).",
               "auto|always|across-nodes"},
  // Tasks and placement.
  setting_info{"ONESIDE_TASK_THREADS", integer, "0", {"0", "1024"},
               "Threads in each rank's task arena; 0 means the number of cores the rank is "
               "bound to (or its share of the node when unbound)."},
  setting_info{"ONESIDE_PROGRESS_THREAD", boolean, "0", {},
               "1: each rank runs a progress thread that drives the transport's progress "
               "(incoming messages over MPI or with ONESIDE_AGENT=poll) while the program "
               "computes without calling oneside; it polls, then sleeps up to "
               "ONESIDE_WAIT_SLEEP_MAX_US between polls. 0: waits, idle fibers and the agent "
               "drive progress (the thread is then started only to resume tasks suspended in "
               "a wait)."},
  setting_info{"ONESIDE_BIND_TO", choice, "auto", {},
               "oneside-run's default for --bind-to: core while ranks do not outnumber cores, "
               "none otherwise.", "auto|core|numa|none"},
  setting_info{"ONESIDE_TIMEOUT", integer, "0", {"0", "1000000000"},
               "oneside-run's default for --timeout, in seconds (0: no limit)."},
  setting_info{"ONESIDE_HANG_TIMEOUT", integer, "0", {"0", "1000000000"},
               "Seconds after which a job in which no rank makes progress (every rank waits in "
               "oneside, no wait ends, no rank computes) is ended: oneside-run prints what each "
               "rank waits for and exits with status 125 (0: never; up to max(S, 10) s later while a "
               "waiting thread has yet to say what it waits for). Alone or under mpirun, a "
               "rank that stays so long in such a wait says what it waits for and exits with 125."},
  setting_info{"ONESIDE_KILL_GRACE_MS", integer, "300", {"0", "3600000"},
               "Milliseconds oneside-run waits after SIGTERM before it sends SIGKILL to the "
               "ranks of a failed, timed-out or interrupted job."},
  // Set by oneside-run for each rank (the launcher-to-rank protocol).
  setting_info{"ONESIDE_JOB_ID", string, "", {},
               "Identifier of the job; names its shared-memory objects.", {}, true},
  setting_info{"ONESIDE_RANK", integer, "0", {"0", "65535"},
               "Rank of this process in the job.", {}, true},
  setting_info{"ONESIDE_SIZE", integer, "1", {"1", "65536"},
               "Number of ranks in the job.", {}, true},
  setting_info{"ONESIDE_LOCAL_RANK", integer, "0", {"0", "65535"},
               "Rank of this process on its node.", {}, true},
  setting_info{"ONESIDE_LOCAL_SIZE", integer, "1", {"1", "65536"},
               "Number of ranks on this node.", {}, true},
  setting_info{"ONESIDE_BINDING", choice, "none", {},
               "The binding oneside-run applied to this rank.", "core|numa|none", true},
  setting_info{"ONESIDE_SPARE_PUS", string, "", {},
               "PUs of this node no rank is bound to (oneside-run's plan, unset when there are "
               "none); each rank's file I/O threads run there, so split collectives overlap "
               "computation.", {}, true},
};
// clang-format on

// Pairs of settings whose product is memory every rank (or team member) holds in shared
// memory: each may be large, both together would exhaust the node.
struct product_limit {
  std::string_view count;
  std::string_view bytes;
  std::string_view max;  // a size, as values are written
  std::string_view what;
};
constexpr std::array product_limits{
    product_limit{"ONESIDE_AM_SLOTS", "ONESIDE_AM_SLOT_BYTES", "256M",
                  "each rank's active-message queue"},
    product_limit{"ONESIDE_COLL_SLOTS", "ONESIDE_COLL_SLOT_BYTES", "256M",
                  "each team member's collective ring"},
};

// --- Parsing, usable at compile time (the registry is checked with it) ---------------------

constexpr char upper(char c) noexcept {
  return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

constexpr bool equal_ignoring_case(std::string_view a, std::string_view b) noexcept {
  return std::ranges::equal(a, b, [](char x, char y) { return upper(x) == upper(y); });
}

// A number as a setting holds it; `problem` is empty when the text is one.
struct parsed_number {
  std::int64_t value = 0;
  std::string_view problem;
};

constexpr parsed_number parse_number(std::string_view v, bool with_unit) noexcept {
  constexpr std::int64_t top = std::numeric_limits<std::int64_t>::max();
  const std::string_view not_one = with_unit ? "is not a size" : "is not an integer";
  if (v.empty()) return {0, "is empty"};
  if (v.size() > 1 && v[0] == '-' && v[1] >= '0' && v[1] <= '9') return {0, "is negative"};
  if (v[0] < '0' || v[0] > '9') return {0, not_one};
  std::int64_t n = 0;
  std::size_t i = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i) {
    const int d = v[i] - '0';
    if (n > (top - d) / 10) return {0, "is too large"};
    n = n * 10 + d;
  }
  if (i == v.size()) return {n, {}};
  if (!with_unit) return {0, not_one};
  if (i + 1 != v.size()) return {0, "is not a size (a number and at most one unit: K, M, G or T)"};
  const char unit = upper(v[i]);
  const int shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : unit == 'T' ? 40 : -1;
  if (shift < 0) return {0, "has an unknown unit (K, M, G or T)"};
  if (n > (top >> shift)) return {0, "is too large"};
  return {n << shift, {}};
}

constexpr std::optional<bool> parse_bool(std::string_view v) noexcept {
  for (std::string_view t : {"1", "true", "yes", "on"}) {
    if (equal_ignoring_case(v, t)) return true;
  }
  for (std::string_view f : {"0", "false", "no", "off", ""}) {
    if (equal_ignoring_case(v, f)) return false;
  }
  return std::nullopt;
}

constexpr bool is_choice(std::string_view choices, std::string_view v) noexcept {
  while (!choices.empty()) {
    const auto bar = choices.find('|');
    if (choices.substr(0, bar) == v) return true;
    if (bar == std::string_view::npos) break;
    choices.remove_prefix(bar + 1);
  }
  return false;
}

constexpr bool is_numeric(const setting_info& s) noexcept {
  return s.type == integer || s.type == size;
}

// What oneside's code needs of an entry: numeric settings declare a valid range holding the
// default, choices hold theirs, the others declare no range.
constexpr bool entry_is_sound(const setting_info& s) noexcept {
  if (!s.name.starts_with("ONESIDE_") || s.meaning.empty()) return false;
  if (is_numeric(s)) {
    const bool unit = s.type == size;
    const parsed_number lo = parse_number(s.range.min, unit);
    const parsed_number hi = parse_number(s.range.max, unit);
    const parsed_number d = parse_number(s.default_value, unit);
    return lo.problem.empty() && hi.problem.empty() && d.problem.empty() && lo.value < hi.value &&
           lo.value <= d.value && d.value <= hi.value && s.choices.empty();
  }
  if (!s.range.min.empty() || !s.range.max.empty()) return false;
  if (s.type == choice) return is_choice(s.choices, s.default_value);
  if (s.type == boolean) return parse_bool(s.default_value).has_value() && s.choices.empty();
  return s.choices.empty();
}

constexpr bool registry_is_sound() noexcept {
  for (std::size_t i = 0; i < registry.size(); ++i) {
    if (!entry_is_sound(registry[i])) return false;
    for (std::size_t j = 0; j < i; ++j) {
      if (registry[j].name == registry[i].name) return false;
    }
  }
  auto numeric = [](std::string_view name) {
    const auto* it = std::ranges::find(registry, name, &setting_info::name);
    return it != registry.end() && is_numeric(*it);
  };
  return std::ranges::all_of(product_limits, [&](const product_limit& l) {
    return numeric(l.count) && numeric(l.bytes) && parse_number(l.max, true).problem.empty();
  });
}
static_assert(registry_is_sound(),
              "every setting is named ONESIDE_*, once, with a meaning; integer and size settings "
              "declare their valid range {min, max} with the default inside it; choices hold "
              "their default; product limits name numeric settings");

// --- Reading the environment ---------------------------------------------------------------

const setting_info* lookup(std::string_view name) noexcept {
  auto it = std::ranges::find(registry, name, &setting_info::name);
  return it == registry.end() ? nullptr : &*it;
}

const setting_info& find(std::string_view name) {
  const setting_info* s = lookup(name);
  if (s == nullptr) {
    detail::raise(error_class::arg, {.call = "settings"},
                  "unknown setting " + std::string(name) + " (not in the registry)");
  }
  return *s;
}

const char* env_of(std::string_view name) {
  return std::getenv(std::string(name).c_str());
}

std::string raw_value(const setting_info& s) {
  if (const char* v = env_of(s.name); v != nullptr) return v;
  return std::string(s.default_value);
}

// The value of a setting, checked: error(arg) naming it and its valid values otherwise.
std::string checked_value(const setting_info& s) {
  std::string v = raw_value(s);
  if (std::string problem = detail::value_problem(s, v); !problem.empty()) {
    detail::raise(error_class::arg, {.call = "settings"}, problem);
  }
  return v;
}

std::int64_t number_of(const setting_info& s, std::string_view v) noexcept {
  return parse_number(v, s.type == size).value;
}

std::string quoted(std::string_view name, std::string_view value) {
  std::string q(name);
  q.append("='").append(value).append("'");
  return q;
}

// Optimal string alignment distance (edits, with a swap of neighbours as one), ignoring case.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> before(b.size() + 1);
  std::vector<std::size_t> prev(b.size() + 1);
  std::vector<std::size_t> cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = upper(a[i - 1]) == upper(b[j - 1]);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && upper(a[i - 1]) == upper(b[j - 2]) &&
          upper(a[i - 2]) == upper(b[j - 1])) {
        cur[j] = std::min(cur[j], before[j - 2] + 1);
      }
    }
    before.swap(prev);
    prev.swap(cur);
  }
  return prev[b.size()];
}

// --- The launcher-to-rank protocol ---------------------------------------------------------

constexpr std::string_view protocol_hint =
    " (oneside-run sets the launcher-to-rank variables for each rank; do not set them by hand)";

bool valid_job_id(std::string_view id) noexcept {
  return !id.empty() && id.size() <= 64 && std::ranges::all_of(id, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
  });
}

// Whether the launcher-to-rank variables describe a rank of a job, as oneside-run writes them
// (only asked when ONESIDE_JOB_ID is set): every problem, each a line.
std::vector<detail::setting_problem> protocol_problems() {
  std::vector<detail::setting_problem> out;
  auto problem = [&](std::string text) { out.push_back({true, text.append(protocol_hint)}); };
  const std::string job = env_of("ONESIDE_JOB_ID");
  if (!valid_job_id(job)) {
    problem(quoted("ONESIDE_JOB_ID", job) +
            " is not a job identifier (at most 64 letters, digits, '-' and '_')");
  }
  // Every other variable must be there (one line names the missing ones) and valid.
  std::string missing;
  for (const setting_info& s : registry) {
    // ONESIDE_SPARE_PUS is optional: a job whose ranks take every PU has none.
    if (s.set_by_launcher && s.name != "ONESIDE_JOB_ID" && s.name != "ONESIDE_SPARE_PUS" &&
        env_of(s.name) == nullptr) {
      missing.append(missing.empty() ? "" : ", ").append(s.name);
    }
  }
  if (!missing.empty()) problem("ONESIDE_JOB_ID is set without " + missing);
  auto number = [&](std::string_view name) -> std::optional<std::int64_t> {
    const char* v = env_of(name);
    if (v == nullptr) return std::nullopt;
    if (std::string p = detail::value_problem(find(name), v); !p.empty()) {
      problem(std::move(p));
      return std::nullopt;
    }
    return number_of(find(name), v);
  };
  const auto rank = number("ONESIDE_RANK");
  const auto size = number("ONESIDE_SIZE");
  const auto local_rank = number("ONESIDE_LOCAL_RANK");
  const auto local_size = number("ONESIDE_LOCAL_SIZE");
  if (const char* b = env_of("ONESIDE_BINDING"); b != nullptr) {
    if (std::string p = detail::value_problem(find("ONESIDE_BINDING"), b); !p.empty()) {
      problem(std::move(p));
    }
  }
  if (const char* spare = env_of("ONESIDE_SPARE_PUS"); spare != nullptr && *spare != '\0') {
    try {
      (void)detail::parse_index_list(spare);
    } catch (const oneside::error&) {
      problem(std::string("ONESIDE_SPARE_PUS=") + spare + " is not a list of PU indices");
    }
  }
  if (rank && size && *rank >= *size) {
    problem("ONESIDE_RANK=" + std::to_string(*rank) +
            " is not a rank of a job of ONESIDE_SIZE=" + std::to_string(*size));
  }
  if (size && local_rank && local_size && (*local_rank >= *local_size || *local_size > *size)) {
    problem("ONESIDE_LOCAL_RANK=" + std::to_string(*local_rank) + " and ONESIDE_LOCAL_SIZE=" +
            std::to_string(*local_size) + " do not describe a rank of a node of a job of " +
            "ONESIDE_SIZE=" + std::to_string(*size));
  }
  return out;
}

// The launcher-to-rank variables present in the environment, as NAME='value'.
std::vector<std::pair<std::string_view, std::string>> protocol_variables_present() {
  std::vector<std::pair<std::string_view, std::string>> out;
  for (const setting_info& s : registry) {
    if (const char* v = env_of(s.name); s.set_by_launcher && v != nullptr)
      out.emplace_back(s.name, v);
  }
  return out;
}

void check_protocol(detail::settings_reader who, std::vector<detail::setting_problem>& out) {
  const auto present = protocol_variables_present();
  if (present.empty()) return;
  if (detail::started_by_launcher()) {
    std::vector<detail::setting_problem> p = protocol_problems();
    // oneside-run started inside a rank of another job: it replaces that job's variables.
    if (who == detail::settings_reader::launcher && p.empty()) return;
    if (who == detail::settings_reader::runtime) {
      out.insert(out.end(), p.begin(), p.end());
      return;
    }
  }
  for (const auto& [name, value] : present) {
    std::string text = quoted(name, value) + " is ignored: ";
    if (who == detail::settings_reader::launcher) {
      text.append("oneside-run sets it for each rank");
      if (name == "ONESIDE_SIZE") text.append(" (use -n)");
    } else {
      text.append("this process was not started by oneside-run, which sets it for each rank");
    }
    out.push_back({false, std::move(text)});
  }
}

// A transport the job cannot have, from what the environment says about who started it (what
// the build lacks is the transport table's to say: transport::build_problem).
void check_transport(detail::settings_reader who, std::vector<detail::setting_problem>& out) {
  const char* v = env_of("ONESIDE_TRANSPORT");
  if (v == nullptr || std::string_view(v) != "mpi") return;
  const std::string head = quoted("ONESIDE_TRANSPORT", v) +
                           " needs a job started by an MPI "
                           "launcher (mpirun, srun)";
  if (who == detail::settings_reader::launcher) {
    out.push_back({true, head + "; the ranks of oneside-run use shared memory (auto or shm)"});
  } else if (detail::started_by_launcher() || detail::mpi_launcher_size() == 0) {
    out.push_back({true, head});
  }
}

void check_products(std::vector<detail::setting_problem>& out) {
  for (const product_limit& l : product_limits) {
    const setting_info& count = find(l.count);
    const setting_info& bytes = find(l.bytes);
    const std::string c = raw_value(count);
    const std::string b = raw_value(bytes);
    if (!detail::value_problem(count, c).empty() || !detail::value_problem(bytes, b).empty()) {
      continue;  // reported as such
    }
    if (number_of(count, c) > parse_number(l.max, true).value / number_of(bytes, b)) {
      out.push_back({true, std::string(l.count) + "=" + c + " times " + std::string(l.bytes) + "=" +
                               b + " is more than " + std::string(l.max) +
                               " bytes of shared memory for " + std::string(l.what)});
    }
  }
}

void check_unknown(std::vector<detail::setting_problem>& out) {
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (lookup(name) != nullptr) continue;
    const std::string_view near = detail::misspelt_setting(name);
    if (!near.empty()) {
      out.push_back({true, std::string(name) + " is not a oneside setting; did you mean " +
                               std::string(near) + "?"});
    } else if (name.starts_with("ONESIDE_")) {
      out.push_back({false, std::string(name) +
                                " is not a oneside setting and is ignored (oneside-run --settings "
                                "lists them)"});
    }
  }
}

}  // namespace

std::span<const setting_info> all_settings() noexcept {
  return registry;
}

std::string setting_value(std::string_view name) {
  return raw_value(find(name));
}

std::string valid_values(const setting_info& s) {
  switch (s.type) {
    case integer:
      return std::string(s.range.min).append(" to ").append(s.range.max);
    case size:
      return std::string(s.range.min).append(" to ").append(s.range.max).append(" bytes");
    case boolean:
      return "1/0, true/false, yes/no, on/off";
    case choice:
      return std::string(s.choices);
    case string:
      break;
  }
  return {};
}

namespace detail {

std::string value_problem(const setting_info& s, std::string_view value) {
  std::string_view problem;
  switch (s.type) {
    case integer:
    case size: {
      const parsed_number n = parse_number(value, s.type == size);
      problem = n.problem;
      if (problem.empty() &&
          (n.value < number_of(s, s.range.min) || n.value > number_of(s, s.range.max))) {
        problem = "is out of range";
      }
      break;
    }
    case boolean:
      if (!parse_bool(value)) problem = "is not a boolean";
      break;
    case choice:
      if (!is_choice(s.choices, value))
        return quoted(s.name, value) + " is not one of " + std::string(s.choices);
      break;
    case string:
      break;
  }
  if (problem.empty()) return {};
  return quoted(s.name, value)
      .append(" ")
      .append(problem)
      .append("; valid: ")
      .append(valid_values(s));
}

std::string_view misspelt_setting(std::string_view name) {
  if (lookup(name) != nullptr || name.empty()) return {};
  // A few edits (more for long names), ignoring case.
  // Other variables only when they are very close (a misspelt prefix, another case).
  const bool ours = name.starts_with("ONESIDE_");
  const std::size_t most = ours && name.size() >= 16 ? 3 : 2;
  std::string_view best;
  std::size_t best_distance = most + 1;
  for (const setting_info& s : registry) {
    const std::size_t gap =
        s.name.size() > name.size() ? s.name.size() - name.size() : name.size() - s.name.size();
    if (gap > most) continue;
    if (const std::size_t d = edit_distance(name, s.name); d < best_distance) {
      best = s.name;
      best_distance = d;
    }
  }
  if (!best.empty()) return best;
  // A unit or word left off the end: the one setting that starts with the name and '_'.
  if (!ours) return {};
  std::string stem(name);
  stem.push_back('_');
  for (const setting_info& s : registry) {
    if (s.name.size() > stem.size() && equal_ignoring_case(s.name.substr(0, stem.size()), stem)) {
      if (!best.empty()) return {};  // several: no guess
      best = s.name;
    }
  }
  return best;
}

std::vector<setting_problem> check_environment(settings_reader who) {
  std::vector<setting_problem> out;
  for (const setting_info& s : registry) {
    if (s.set_by_launcher) continue;  // the protocol's rules below
    if (const char* v = env_of(s.name); v != nullptr) {
      if (std::string p = value_problem(s, v); !p.empty()) out.push_back({true, std::move(p)});
    }
  }
  check_products(out);
  check_transport(who, out);
  check_protocol(who, out);
  check_unknown(out);
  return out;
}

bool started_by_launcher() {
  const char* v = env_of("ONESIDE_JOB_ID");
  return v != nullptr && *v != '\0';
}

namespace {
// The first of `names` set to a number at least `low`, or -1.
int foreign_number(std::initializer_list<const char*> names, int low) noexcept {
  for (const char* name : names) {
    if (const char* v = std::getenv(name); v != nullptr) {
      int n = 0;
      const std::string_view sv(v);
      auto [ptr, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), n);
      if (ec == std::errc() && ptr == sv.data() + sv.size() && n >= low) return n;
    }
  }
  return -1;
}
}  // namespace

int mpi_launcher_size() noexcept {
  // Open MPI's mpirun, PMIx launchers (srun --mpi=pmix), MPICH's hydra and PMI-1/2.
  if (const int n =
          foreign_number({"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"}, 1);
      n > 0) {
    return n;
  }
  // PMIx launchers without PMIX_SIZE still give every rank a PMIX_RANK.
  return std::getenv("PMIX_RANK") != nullptr ? 1 : 0;
}

int mpi_launcher_rank() noexcept {
  return foreign_number({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, 0);
}

bool setting_is_set(std::string_view name) {
  return env_of(find(name).name) != nullptr;
}

std::pair<std::int64_t, std::int64_t> setting_limits(std::string_view name) {
  const setting_info& s = find(name);
  ONESIDE_CHECK(is_numeric(s), error_class::arg, {.call = "settings"},
                std::string(name) + " is not a numeric setting");
  return {number_of(s, s.range.min), number_of(s, s.range.max)};
}

std::int64_t setting_int(std::string_view name) {
  const setting_info& s = find(name);
  ONESIDE_CHECK(is_numeric(s), error_class::arg, {.call = "settings"},
                std::string(name) + " is not a numeric setting");
  return number_of(s, checked_value(s));
}

bool setting_bool(std::string_view name) {
  const setting_info& s = find(name);
  ONESIDE_CHECK(s.type == boolean, error_class::arg, {.call = "settings"},
                std::string(name) + " is not a boolean setting");
  return *parse_bool(checked_value(s));
}

std::string setting_string(std::string_view name) {
  const setting_info& s = find(name);
  return checked_value(s);
}

}  // namespace detail
}  // namespace oneside
