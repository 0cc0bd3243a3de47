// Running programs with a time limit and inspecting what they left behind.
#include "launcher_harness.hpp"

#include <cerrno>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdexcept>
#include <string_view>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "topology/index_list.hpp"

namespace oneside::test {
namespace {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&ts, &ts) != 0) continue;
}

void append_available(int& fd, std::string& sink) {
  char buf[8192];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    sink.append(buf, static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    ::close(fd);
    fd = -1;
  }
}

}  // namespace

const std::string& launcher_path() {
  static const std::string path = ONESIDE_TEST_LAUNCHER;
  return path;
}

const std::string& probe_path() {
  static const std::string path = ONESIDE_TEST_PROBE;
  return path;
}

process_run::process_run(const std::vector<std::string>& argv,
                         const std::vector<std::pair<std::string, std::string>>& env) {
  // Everything the child needs is built before fork.
  std::vector<std::string> env_strings;
  auto overridden = [&env](std::string_view entry) {
    for (const auto& kv : env) {
      if (entry.size() > kv.first.size() && entry.starts_with(kv.first) &&
          entry[kv.first.size()] == '=') {
        return true;
      }
    }
    return false;
  };
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with("ONESIDE_") && !overridden(entry)) env_strings.emplace_back(entry);
  }
  for (const auto& [k, v] : env) {
    std::string entry = k;
    entry.append("=").append(v);
    env_strings.push_back(std::move(entry));
  }
  std::vector<std::string> args = argv;
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argp;
  for (std::string& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);

  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  start_ = clock::now();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execve(argp[0], argp.data(), envp.data());
    ::_exit(126);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

process_run::~process_run() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

run_result process_run::wait(std::chrono::seconds limit) {
  run_result r;
  const auto deadline = start_ + limit;
  // After the process has exited, its output pipes may stay open a little longer (ranks are
  // still being killed); this bounds how long we keep reading then.
  std::optional<clock::time_point> exited_at;
  int status = 0;
  while (true) {
    if (pid_ > 0) {
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        pid_ = -1;
        exited_at = clock::now();
        r.elapsed = *exited_at - start_;
      }
    }
    if (pid_ < 0 && out_fd_ < 0 && err_fd_ < 0) break;
    if (exited_at && clock::now() > *exited_at + std::chrono::seconds(10)) break;
    if (pid_ > 0 && clock::now() > deadline) {
      r.timed_out = true;
      ::kill(pid_, SIGKILL);
    }
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    // A short timeout: the exit of the process is noticed by waitpid above, not by poll.
    if (::poll(fds, 2, 20) > 0) {
      if (fds[0].revents != 0) append_available(out_fd_, r.out);
      if (fds[1].revents != 0) append_available(err_fd_, r.err);
    }
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  return r;
}

run_result run_launcher(const std::vector<std::string>& args,
                        const std::vector<std::pair<std::string, std::string>>& env,
                        std::chrono::seconds limit) {
  std::vector<std::string> argv{launcher_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  process_run p(argv, env);
  return p.wait(limit);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      out.push_back(text.substr(start));
      break;
    }
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (std::string& l : lines_of(text)) {
    if (l.starts_with(prefix)) out.push_back(std::move(l));
  }
  return out;
}

scratch_dir::scratch_dir() {
  std::string tmpl = (fs::path(::testing::TempDir()) / "oneside-launcher-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

scratch_dir::~scratch_dir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::map<int, rank_record> read_records(const std::string& dir) {
  std::map<int, rank_record> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("rank") || !name.ends_with(".txt")) continue;
    rank_record rec;
    std::ifstream f(e.path());
    std::string line;
    while (std::getline(f, line)) {
      const std::size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = line.substr(0, eq);
      const std::string value = line.substr(eq + 1);
      if (key == "pid") rec.pid = std::stoi(value);
      if (key == "job") rec.job = value;
      if (key == "rank") rec.rank = std::stoi(value);
      if (key == "size") rec.size = std::stoi(value);
      if (key == "local_rank") rec.local_rank = std::stoi(value);
      if (key == "local_size") rec.local_size = std::stoi(value);
      if (key == "binding") rec.binding = value;
      if (key == "affinity") rec.affinity = detail::parse_index_list(value);
      if (key == "topo_pus") rec.topo_pus = detail::parse_index_list(value);
      if (key == "topo_cores") rec.topo_cores = detail::parse_index_list(value);
      if (key == "topo_numa") rec.topo_numa = detail::parse_index_list(value);
      if (key == "topo_describe") rec.topo_describe = value;
      if (key == "topo_bound") rec.topo_bound = value == "1";
      if (key == "grandchild") rec.grandchild = std::stoi(value);
      if (key == "arg") rec.args.push_back(value);
    }
    out[rec.rank] = rec;
  }
  return out;
}

bool wait_for_records(const std::string& dir, int n, std::chrono::seconds limit) {
  const auto deadline = clock::now() + limit;
  while (static_cast<int>(read_records(dir).size()) < n) {
    if (clock::now() > deadline) return false;
    sleep_ms(10);
  }
  return true;
}

namespace {
std::vector<std::string> shm_objects_starting(const std::string& prefix) {
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator("/dev/shm")) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(prefix)) out.push_back(name);
  }
  return out;
}
}  // namespace

std::vector<std::string> job_shm_objects(const std::string& job) {
  return shm_objects_starting(cat("oneside.", job, "."));
}

std::vector<std::string> shm_objects_of_process(pid_t pid) {
  return shm_objects_starting(cat("oneside.", std::to_string(pid), "-"));
}

bool process_gone(pid_t pid) {
  ::waitpid(pid, nullptr, WNOHANG);  // our zombie (an adopted orphan): reap it
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

std::vector<pid_t> wait_until_gone(const std::vector<pid_t>& pids, std::chrono::seconds limit) {
  const auto deadline = clock::now() + limit;
  std::vector<pid_t> left = pids;
  while (true) {
    std::erase_if(left, [](pid_t p) { return process_gone(p); });
    if (left.empty() || clock::now() > deadline) return left;
    sleep_ms(10);
  }
}

void reap_adopted_children() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) continue;
}

bool wait_for_adopted_children(std::chrono::seconds limit) {
  const auto deadline = clock::now() + limit;
  while (true) {
    const pid_t reaped = ::waitpid(-1, nullptr, WNOHANG);
    if (reaped < 0 && errno == ECHILD) return true;
    if (reaped > 0) continue;
    if (clock::now() > deadline) return false;
    sleep_ms(10);
  }
}

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream f(cat("/proc/", std::to_string(pid), "/task/", std::to_string(pid), "/children"));
  for (pid_t c; f >> c;) out.push_back(c);
  return out;
}

void become_subreaper() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
}

std::vector<int> own_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (std::size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(static_cast<int>(cpu));
  }
  return out;
}

}  // namespace oneside::test
