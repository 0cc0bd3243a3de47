// Helpers of the launcher tests: run a program (oneside-run) with its own time limit while
// capturing stdout, stderr and the exit status; read what launcher_probe recorded; look for
// a job's leftovers in /dev/shm and among processes.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace oneside::test {

// Concatenation by append (GCC 12 warns falsely on "literal" + std::string at -O3).
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  (s.append(parts), ...);
  return s;
}

// Paths of the programs under test (compile definitions from CMake).
const std::string& launcher_path();
const std::string& probe_path();

struct run_result {
  int exit_code = -1;      // when it exited
  int term_signal = 0;     // when a signal killed it
  bool timed_out = false;  // our own limit expired and we killed it
  std::string out;
  std::string err;
  std::chrono::duration<double> elapsed{};
};

// A started process whose output is collected by wait(). The environment is ours without
// any ONESIDE_* variable (so the caller's settings cannot change a test), with `env` added
// or replacing what we have.
class process_run {
 public:
  process_run(const std::vector<std::string>& argv,
              const std::vector<std::pair<std::string, std::string>>& env = {});
  process_run(const process_run&) = delete;
  process_run& operator=(const process_run&) = delete;
  ~process_run();  // kills and reaps it if wait() was not called

  pid_t pid() const noexcept { return pid_; }
  // Collects output until the process has exited and both pipes are closed. After `limit`
  // it is killed (SIGKILL) and timed_out is set.
  run_result wait(std::chrono::seconds limit = std::chrono::seconds(60));

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::chrono::steady_clock::time_point start_;
};

// oneside-run with `args`, waited for with `limit`.
run_result run_launcher(const std::vector<std::string>& args,
                        const std::vector<std::pair<std::string, std::string>>& env = {},
                        std::chrono::seconds limit = std::chrono::seconds(60));

// The lines of `text` (a last line without a newline counts).
std::vector<std::string> lines_of(const std::string& text);
// Lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix);

// A fresh directory, removed with its contents at scope exit.
class scratch_dir {
 public:
  scratch_dir();
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir();
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// What launcher_probe --record wrote for one rank.
struct rank_record {
  pid_t pid = 0;
  std::string job;
  int rank = -1;
  int size = -1;
  int local_rank = -1;
  int local_size = -1;
  std::string binding;
  std::vector<int> affinity;
  std::vector<int> topo_pus;
  std::vector<int> topo_cores;
  std::vector<int> topo_numa;
  bool topo_bound = false;
  std::string topo_describe;
  pid_t grandchild = 0;
  std::vector<std::string> args;
};

// The records present in `dir`, by rank.
std::map<int, rank_record> read_records(const std::string& dir);
// Waits (polling, at most `limit`) until `n` records exist; returns whether they do.
bool wait_for_records(const std::string& dir, int n, std::chrono::seconds limit);

// Names in /dev/shm that belong to job `job` ("oneside.<job>.*").
std::vector<std::string> job_shm_objects(const std::string& job);
// Names in /dev/shm of any job that process `pid` made (job ids start with the pid of the
// launcher or of a process that opened the runtime alone: "oneside.<pid>-*").
std::vector<std::string> shm_objects_of_process(pid_t pid);
// Whether process `pid` no longer exists. A zombie child of ours is reaped first (the tests
// make this process a child subreaper, so orphaned ranks and their children end up here).
bool process_gone(pid_t pid);
// Waits (polling, at most `limit`) until every pid is gone; returns the ones still there.
std::vector<pid_t> wait_until_gone(const std::vector<pid_t>& pids, std::chrono::seconds limit);
// Reaps every exited child (orphans adopted as subreaper, such as the reaper of a killed
// launcher) without waiting for the ones still running.
void reap_adopted_children();
// Reaps children (polling, at most `limit`) until this process has none left; returns whether
// none is. After a launcher such as mpirun has exited, its ranks that outlived it are ours.
bool wait_for_adopted_children(std::chrono::seconds limit);
// The children of process `pid` (from /proc; empty when the kernel does not list them).
std::vector<pid_t> children_of(pid_t pid);
// Makes this process the reaper of orphaned descendants (PR_SET_CHILD_SUBREAPER) so that
// process_gone() can tell a dead orphan from a live one. Idempotent.
void become_subreaper();
// The PUs this process may run on.
std::vector<int> own_affinity();

}  // namespace oneside::test
