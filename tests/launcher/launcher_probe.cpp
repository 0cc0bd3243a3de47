// launcher_probe: the rank program of the launcher tests. It does not open the oneside
// runtime unless asked (the launcher must work for any program); it reads the launcher-to-rank
// variables through the settings registry and shows what the launcher did by its actions, chosen on
// the command line and run in this order:
//   --bind-pu P         bind itself to PU P (sched_setaffinity), before anything reads the
//                       topology
//   --ignore-term       ignore SIGTERM (only SIGKILL ends this rank)
//   --shm               create the shared-memory object "probe.r<rank>" of the job and never
//                       remove it (only the launcher's sweep can)
//   --fork-child        fork a grandchild that sleeps 60 s (it does not die with the rank)
//   --record DIR        write DIR/rank<rank>.txt: pid, job, rank, size, local rank and size,
//                       binding, CPU affinity, this_rank_topology(), grandchild pid, and
//                       the arguments after --
//   --print-lines       stdout "out one\nout two\nout partial", stderr "err one\nerr partial"
//                       (the last lines of each without a newline)
//   --wait-all          wait (at most 20 s) until every rank of the job has recorded itself
//   --exit R:K          rank R exits with status K
//   --segv R            rank R dies of SIGSEGV
//   --kill-self R       rank R sends itself SIGKILL
//   --runtime           open the oneside runtime, barrier over the world, close it
//   --runtime-exit R    the same, but rank R exits with status 0 right after opening it
//                       (std::exit: the runtime is never closed)
//   --spawn-solo        with --runtime: every rank starts this program again as a child (it
//                       inherits the job's variables) with --solo and fails unless the child
//                       exits 0 within 20 s
//   --solo              open the runtime; exit 0 when it is a job of one rank, else 1
//   --hold FILE         with --runtime: after the barrier, create FILE.r<rank>, wait (at most
//                       60 s) until FILE exists, then fail unless this rank's --shm object is
//                       still there, and barrier again (a live job other jobs must not touch)
//   --sleep S           sleep S seconds, then exit 0 (what the launcher must cut short)
//   -- ARGS...          recorded as they arrive, never interpreted
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sched.h>
#include <signal.h>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/runtime.hpp>
#include <oneside/runtime/settings.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/topology.hpp>

#include "topology/binding.hpp"
#include "topology/index_list.hpp"
#include "transport/shm/shm_object.hpp"

namespace {

namespace fs = std::filesystem;

struct probe_options {
  int bind_pu = -1;
  bool ignore_term = false;
  bool shm = false;
  bool fork_child = false;
  std::string record_dir;
  bool print_lines = false;
  bool wait_all = false;
  int exit_rank = -1;
  int exit_code = 0;
  int segv_rank = -1;
  int kill_rank = -1;
  int sleep_s = 0;
  bool runtime = false;
  bool spawn_solo = false;
  bool solo = false;
  int runtime_exit_rank = -1;
  std::string hold;
  std::vector<std::string> passed;  // after --
};

[[noreturn]] void usage(std::string_view what) {
  std::fprintf(stderr, "launcher_probe: %.*s\n", static_cast<int>(what.size()), what.data());
  std::exit(64);
}

probe_options parse(int argc, char** argv) {
  probe_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value");
      return argv[++i];
    };
    if (a == "--") {
      for (++i; i < argc; ++i) o.passed.emplace_back(argv[i]);
    } else if (a == "--bind-pu") {
      o.bind_pu = std::stoi(next());
    } else if (a == "--ignore-term") {
      o.ignore_term = true;
    } else if (a == "--shm") {
      o.shm = true;
    } else if (a == "--fork-child") {
      o.fork_child = true;
    } else if (a == "--record") {
      o.record_dir = next();
    } else if (a == "--print-lines") {
      o.print_lines = true;
    } else if (a == "--wait-all") {
      o.wait_all = true;
    } else if (a == "--exit") {
      const std::string v = next();
      const auto colon = v.find(':');
      if (colon == std::string::npos) usage("--exit R:K");
      o.exit_rank = std::stoi(v.substr(0, colon));
      o.exit_code = std::stoi(v.substr(colon + 1));
    } else if (a == "--segv") {
      o.segv_rank = std::stoi(next());
    } else if (a == "--kill-self") {
      o.kill_rank = std::stoi(next());
    } else if (a == "--sleep") {
      o.sleep_s = std::stoi(next());
    } else if (a == "--spawn-solo") {
      o.spawn_solo = true;
    } else if (a == "--solo") {
      o.solo = true;
    } else if (a == "--hold") {
      o.hold = next();
    } else if (a == "--runtime") {
      o.runtime = true;
    } else if (a == "--runtime-exit") {
      o.runtime = true;
      o.runtime_exit_rank = std::stoi(next());
    } else {
      usage(a);
    }
  }
  return o;
}

// "rank3": built with append (GCC 12 warns falsely on "literal" + std::string at -O3).
std::string numbered(std::string_view stem, int n) {
  std::string s(stem);
  s.append(std::to_string(n));
  return s;
}

int number_or_zero(const std::string& text) {
  int n = 0;
  (void)std::from_chars(text.data(), text.data() + text.size(), n);
  return n;
}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&ts, &ts) != 0) continue;  // EINTR: sleep the rest
}

std::vector<int> affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (std::size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(static_cast<int>(cpu));
  }
  return out;
}

void record(const probe_options& o, int rank, pid_t grandchild) {
  const oneside::rank_topology& topo = oneside::this_rank_topology();
  std::string text;
  auto line = [&text](std::string_view key, const std::string& value) {
    text.append(key).append("=").append(value).append("\n");
  };
  line("pid", std::to_string(::getpid()));
  line("job", oneside::setting_value("ONESIDE_JOB_ID"));
  line("rank", oneside::setting_value("ONESIDE_RANK"));
  line("size", oneside::setting_value("ONESIDE_SIZE"));
  line("local_rank", oneside::setting_value("ONESIDE_LOCAL_RANK"));
  line("local_size", oneside::setting_value("ONESIDE_LOCAL_SIZE"));
  line("binding", oneside::setting_value("ONESIDE_BINDING"));
  line("affinity", oneside::detail::format_index_list(affinity()));
  line("topo_pus", oneside::detail::format_index_list(topo.pus));
  line("topo_cores", oneside::detail::format_index_list(topo.cores));
  line("topo_numa", oneside::detail::format_index_list(topo.numa_nodes));
  line("topo_bound", topo.is_bound ? "1" : "0");
  line("topo_describe", topo.describe());
  line("grandchild", std::to_string(grandchild));
  for (const std::string& a : o.passed) line("arg", a);
  // Written under a temporary name and renamed: a reader never sees half a record.
  const fs::path dir(o.record_dir);
  const fs::path tmp = dir / numbered(".rank", rank).append(".tmp");
  {
    std::ofstream f(tmp);
    f << text;
    if (!f.flush()) usage("cannot write the record");
  }
  fs::rename(tmp, dir / numbered("rank", rank).append(".txt"));
}

// Waits for the other ranks' records: a file-system rendezvous polled every 10 ms, because
// the probe deliberately uses nothing of the runtime (no barrier, no waiting primitive).
void wait_for_all(const std::string& dir, int size) {
  for (int waited_ms = 0; waited_ms < 20000; waited_ms += 10) {
    int present = 0;
    for (int r = 0; r < size; ++r) {
      if (fs::exists(fs::path(dir) / numbered("rank", r).append(".txt"))) ++present;
    }
    if (present == size) return;
    sleep_ms(10);
  }
  usage("the other ranks never recorded themselves");
}

// Starts this program with --solo (the environment, the job's variables included, is inherited)
// and waits for it, at most 20 s: true when it exited 0.
bool spawn_solo_child() {
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) {
    char name[] = "launcher_probe";
    char flag[] = "--solo";
    char* args[] = {name, flag, nullptr};
    ::execv("/proc/self/exe", args);
    ::_exit(127);
  }
  for (int waited_ms = 0; waited_ms < 20000; waited_ms += 10) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
      std::fprintf(stderr, "launcher_probe: the solo child ended with status %d\n", status);
      return false;
    }
    sleep_ms(10);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  std::fputs("launcher_probe: the solo child hung (it joined its parent's job)\n", stderr);
  return false;
}

// --hold: says it holds, waits for the go, then checks that nothing of the job was removed
// meanwhile: this rank's --shm object is still there and the ranks still meet.
bool hold(const probe_options& o, int rank) {
  std::ofstream(o.hold + ".r" + std::to_string(rank)).flush();
  int waited_ms = 0;
  for (; waited_ms < 60000 && !fs::exists(o.hold); waited_ms += 10) sleep_ms(10);
  if (waited_ms >= 60000) {
    std::fputs("launcher_probe: no go within 60 s\n", stderr);
    return false;
  }
  if (o.shm) {
    try {
      const oneside::detail::shm_object again(
          oneside::detail::shm_name(oneside::setting_value("ONESIDE_JOB_ID"),
                                    numbered("probe.r", rank)),
          0, oneside::detail::shm_object::mode::open);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "launcher_probe: this job's object is gone: %s\n", e.what());
      return false;
    }
  }
  oneside::barrier(oneside::world());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const probe_options o = parse(argc, argv);
  // Leniently: a malformed value (the settings tests set some) is for the runtime's open to report.
  const int rank = number_or_zero(oneside::setting_value("ONESIDE_RANK"));
  const int size = number_or_zero(oneside::setting_value("ONESIDE_SIZE"));

  if (o.bind_pu >= 0) oneside::detail::bind_this_process(std::vector<int>{o.bind_pu});
  if (o.ignore_term) ::signal(SIGTERM, SIG_IGN);
  // Kept alive until exit, never unlinked: the object outlives this process.
  oneside::detail::shm_object extra;
  if (o.shm) {
    const std::string name = oneside::detail::shm_name(oneside::setting_value("ONESIDE_JOB_ID"),
                                                       numbered("probe.r", rank));
    extra = oneside::detail::shm_object(name, 4096, oneside::detail::shm_object::mode::create);
  }
  pid_t grandchild = 0;
  if (o.fork_child) {
    grandchild = ::fork();
    if (grandchild == 0) {
      sleep_ms(60000);
      ::_exit(0);
    }
  }
  if (!o.record_dir.empty()) record(o, rank, grandchild);
  if (o.print_lines) {
    std::fputs("out one\nout two\nout partial", stdout);
    std::fflush(stdout);
    std::fputs("err one\nerr partial", stderr);
    std::fflush(stderr);
  }
  if (o.wait_all && !o.record_dir.empty()) wait_for_all(o.record_dir, size);
  if (o.solo) {
    oneside::runtime rt(argc, argv);
    return oneside::world().size() == 1 && oneside::world().rank() == 0 ? 0 : 1;
  }
  if (o.runtime) {
    oneside::runtime rt(argc, argv);
    if (rank == o.runtime_exit_rank) std::exit(0);  // leaves with the runtime open
    if (o.spawn_solo && !spawn_solo_child()) return 1;
    oneside::barrier(oneside::world());
    if (!o.hold.empty() && !hold(o, rank)) return 1;
  }
  if (rank == o.exit_rank) return o.exit_code;
  if (rank == o.segv_rank) {
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // a core dump would only slow the test down
    ::signal(SIGSEGV, SIG_DFL);          // sanitizers install a handler that exits instead
    ::raise(SIGSEGV);
  }
  if (rank == o.kill_rank) ::kill(::getpid(), SIGKILL);
  if (o.sleep_s > 0) sleep_ms(1000L * o.sleep_s);
  return 0;
}
