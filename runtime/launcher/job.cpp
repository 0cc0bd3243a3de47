// Running a job: starting the ranks, supervising them, ending the job early when one fails,
// times out or the launcher is interrupted, and cleaning up in every case.
#include "launcher/job.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <oneside/runtime/settings.hpp>

#include "bootstrap/boot_segment.hpp"
#include "launcher/line_tagger.hpp"
#include "launcher/reaper.hpp"
#include "launcher/signal_channel.hpp"
#include "launcher/wait_report.hpp"
#include "runtime/check.hpp"
#include "topology/binding.hpp"
#include "topology/index_list.hpp"
#include "transport/shm/shm_object.hpp"

namespace oneside::launcher {
namespace {

using clock = std::chrono::steady_clock;

// After the last rank is gone, output still in the pipes is forwarded for at most this long
// (anything the ranks forked has been killed by then; this only bounds the wait).
constexpr auto drain_limit = std::chrono::seconds(1);

// How often the hang check (ONESIDE_HANG_TIMEOUT) reads the ranks' wait records.
constexpr auto hang_check_every = std::chrono::milliseconds(250);

// What a child reports on its status pipe when it cannot become its rank. Nothing arrives
// when exec succeeds: the pipe is close-on-exec.
struct start_failure {
  int stage;  // stage_bind or stage_exec
  int err;
};
constexpr int stage_bind = 0;
constexpr int stage_exec = 1;

// Everything a child needs between fork and exec, prepared by the parent: the child only
// makes system calls, no allocation and no locking (async-signal-safe).
struct child_plan {
  pid_t launcher = 0;
  pid_t group = 0;  // the ranks' process group; 0 for the first rank, which founds it
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int stdin_fd = -1;  // -1: keep the launcher's
  int stdout_fd = -1;
  int stderr_fd = -1;
  int status_fd = -1;
  const detail::affinity_mask* mask = nullptr;  // null: no binding
  const signal_channel* signals = nullptr;
};

[[noreturn]] void fail_start(int status_fd, int stage, int err) noexcept {
  const start_failure f{stage, err};
  write_all(status_fd, &f, sizeof f);
  ::_exit(exit_no_start);
}

[[noreturn]] void become_rank(const child_plan& p) noexcept {
  ::setpgid(0, p.group);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // If the launcher died before the line above, no death signal will ever come: leave now.
  if (::getppid() != p.launcher) ::_exit(exit_no_start);
  if (p.stdin_fd >= 0) ::dup2(p.stdin_fd, STDIN_FILENO);
  if (p.stdout_fd >= 0) ::dup2(p.stdout_fd, STDOUT_FILENO);
  if (p.stderr_fd >= 0) ::dup2(p.stderr_fd, STDERR_FILENO);
  if (p.mask != nullptr) {
    if (const int err = p.mask->apply(); err != 0) fail_start(p.status_fd, stage_bind, err);
  }
  p.signals->restore_in_child();
  ::execve(p.path, p.argv, p.envp);
  fail_start(p.status_fd, stage_exec, errno);
}

// A null-terminated argv/envp view of `strings`, which must outlive it.
std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string env_entry(std::string_view name, std::string_view value) {
  std::string e(name);
  e.append("=").append(value);
  return e;
}

// The launcher-to-rank variables (settings marked set_by_launcher): a rank gets this job's
// values, never stale ones inherited from an enclosing job.
bool is_protocol_variable(std::string_view entry) {
  for (const setting_info& s : all_settings()) {
    if (s.set_by_launcher && entry.size() > s.name.size() && entry.starts_with(s.name) &&
        entry[s.name.size()] == '=') {
      return true;
    }
  }
  return false;
}

std::string plural(int n, std::string_view noun) {
  std::string s = std::to_string(n);
  s.append(" ").append(noun);
  if (n != 1) s += 's';
  return s;
}

// "; killing the other 3 ranks", "; killing the other rank", or nothing.
std::string killing_the_others(int n) {
  if (n == 0) return {};
  if (n == 1) return "; killing the other rank";
  std::string s = "; killing the other ";
  s.append(plural(n, "rank"));
  return s;
}

std::string signal_text(int sig) {
  std::string s = std::to_string(sig);
  const char* d = ::sigdescr_np(sig);
  s.append(" (").append(d != nullptr ? d : "unknown signal").append(")");
  return s;
}

// "exited with status 3" / "killed by signal 11 (Segmentation fault)"
std::string describe_status(int status) {
  if (WIFEXITED(status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  std::string s = "killed by signal ";
  s.append(signal_text(WTERMSIG(status)));
  if (WCOREDUMP(status)) s.append(", core dumped");
  return s;
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class job {
 public:
  explicit job(const job_spec& spec) : spec_(spec), job_id_(detail::make_job_id()) {}
  job(const job&) = delete;
  job& operator=(const job&) = delete;
  ~job() { finish(); }

  int run() {
    try {
      // What dead jobs of this user left (their launcher and reaper were killed with SIGKILL).
      (void)detail::sweep_dead_jobs();
      // The job's liveness record first: it covers every object of the job made after it, and
      // the reaper holds it too (inherited), so that the job stays alive to sweepers for as
      // long as either lives.
      liveness_ = detail::job_liveness::join(job_id_, "oneside-run");
      reaper_ = reaper::start(job_id_, liveness_.fd());
      boot_ =
          detail::shm_object(detail::shm_name(job_id_, "boot"), detail::boot_segment_bytes(size()),
                             detail::shm_object::mode::create, {.call = "oneside-run"});
      detail::init_boot_segment(boot_.data(), size());
      start_ranks();
      supervise();
    } catch (const std::exception& e) {
      std::string line = "oneside-run: ";
      line.append(e.what()).append("\n");
      write_all(STDERR_FILENO, line.data(), line.size());
      if (!ending_) exit_code_ = exit_internal;
    }
    finish();
    return exit_code_;
  }

 private:
  struct rank_process {
    pid_t pid = -1;
    bool running = false;
    std::int64_t ended_ns = 0;  // CLOCK_MONOTONIC when it ended (exited with status 0)
    std::string ended;          // how it ended, for the wait report
  };

  int size() const noexcept { return static_cast<int>(spec_.bindings.size()); }

  void start_ranks() {
    std::vector<std::string> base_env;
    // Copy the environment the launcher was given; settings are read through the registry,
    // this only passes the environment on.
    for (char** e = environ; *e != nullptr; ++e) {
      if (!is_protocol_variable(*e)) base_env.emplace_back(*e);
    }
    std::vector<std::string> args = spec_.argv;
    const std::vector<char*> argv = c_strings(args);

    dev_null_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!dev_null_) detail::raise_system("open", "cannot open /dev/null", errno);
    // A rank is in a background process group: reading the terminal would stop it (SIGTTIN).
    const bool stdin_usable = ::isatty(STDIN_FILENO) == 0;

    std::vector<std::optional<detail::affinity_mask>> masks(spec_.bindings.size());
    for (std::size_t r = 0; r < masks.size(); ++r) {
      if (spec_.bindings[r].policy != detail::bind_policy::none) {
        masks[r].emplace(spec_.bindings[r].pus);
      }
    }

    const std::string spare = detail::format_index_list(detail::spare_pus(spec_.bindings));
    ranks_.resize(spec_.bindings.size());
    for (int r = 0; r < size(); ++r) {
      const auto ur = static_cast<std::size_t>(r);
      std::vector<std::string> env = base_env;
      env.push_back(env_entry("ONESIDE_JOB_ID", job_id_));
      env.push_back(env_entry("ONESIDE_RANK", std::to_string(r)));
      env.push_back(env_entry("ONESIDE_SIZE", std::to_string(size())));
      env.push_back(env_entry("ONESIDE_LOCAL_RANK", std::to_string(r)));
      env.push_back(env_entry("ONESIDE_LOCAL_SIZE", std::to_string(size())));
      env.push_back(env_entry("ONESIDE_BINDING", detail::to_string(spec_.bindings[ur].policy)));
      if (!spare.empty()) env.push_back(env_entry("ONESIDE_SPARE_PUS", spare));
      const std::vector<char*> envp = c_strings(env);

      pipe_ends status = make_pipe();
      pipe_ends out;
      pipe_ends err;
      if (spec_.tag_output) {
        out = make_pipe();
        err = make_pipe();
      }
      child_plan plan;
      plan.launcher = ::getpid();
      plan.group = pgid_;
      plan.path = spec_.program.c_str();
      plan.argv = argv.data();
      plan.envp = envp.data();
      plan.stdin_fd = (r == 0 && stdin_usable) ? -1 : dev_null_.get();
      plan.stdout_fd = out.write.get();
      plan.stderr_fd = err.write.get();
      plan.status_fd = status.write.get();
      plan.mask = masks[ur] ? &*masks[ur] : nullptr;
      plan.signals = &signals_;

      const pid_t pid = ::fork();
      if (pid < 0) detail::raise_system("fork", "cannot start rank " + std::to_string(r), errno);
      if (pid == 0) become_rank(plan);

      ranks_[ur] = {pid, true, 0, {}};
      ++running_;
      if (pgid_ == 0) {
        pgid_ = pid;
        reaper_.watch_group(pgid_);
      }
      // The child joins the group itself too; doing it on both sides means the group is
      // complete before anyone signals it, whichever side runs first.
      ::setpgid(pid, pgid_);
      status.write.reset();
      if (spec_.tag_output) {
        out.write.reset();
        err.write.reset();
        taggers_.emplace_back(r, std::move(out.read), STDOUT_FILENO);
        taggers_.emplace_back(r, std::move(err.read), STDERR_FILENO);
      }

      start_failure f{};
      ssize_t got = 0;
      do {
        got = ::read(status.read.get(), &f, sizeof f);
      } while (got < 0 && errno == EINTR);
      if (got == static_cast<ssize_t>(sizeof f)) {
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) continue;
        ranks_[ur].running = false;
        --running_;
        std::string what = "rank ";
        what.append(std::to_string(r)).append(" could not start: ");
        what.append(f.stage == stage_bind ? "cannot bind it to PUs of " : "cannot execute ");
        what.append(f.stage == stage_bind ? spec_.bindings[ur].description : spec_.program);
        what.append(": ").append(::strerror(f.err));
        what.append(killing_the_others(running_));
        begin_ending(what, exit_no_start);
        return;
      }
    }
    if (spec_.timeout.count() > 0) deadline_ = clock::now() + spec_.timeout;
    if (spec_.hang_timeout.count() > 0) next_hang_check_ = clock::now() + hang_check_every;
  }

  void supervise() {
    std::vector<pollfd> fds;
    std::vector<std::size_t> owner;  // fds[i] belongs to taggers_[owner[i]] (i > 0)
    while (running_ > 0 || (has_open_output() && clock::now() < drain_until_)) {
      fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
      owner.assign(1, 0);
      for (std::size_t t = 0; t < taggers_.size(); ++t) {
        if (!taggers_[t].is_open()) continue;
        fds.push_back(pollfd{taggers_[t].fd(), POLLIN, 0});
        owner.push_back(t);
      }
      const int ready = ::poll(fds.data(), fds.size(), poll_timeout_ms());
      if (ready < 0 && errno != EINTR) {
        detail::raise_system("poll", "the launcher's wait failed", errno);
      }
      if (ready > 0) {
        for (std::size_t i = 1; i < fds.size(); ++i) {
          if (fds[i].revents != 0) taggers_[owner[i]].on_readable();
        }
        if (fds[0].revents != 0) {
          for (int s : signals_.read_pending()) on_signal(s);
        }
      }
      check_deadlines();
    }
  }

  bool has_open_output() const noexcept {
    for (const line_tagger& t : taggers_) {
      if (t.is_open()) return true;
    }
    return false;
  }

  // Milliseconds until the next deadline (rounded up, so that it has passed when poll
  // returns), or -1 to wait for events only.
  int poll_timeout_ms() const {
    std::optional<clock::time_point> next;
    auto consider = [&next](clock::time_point t) {
      if (!next || t < *next) next = t;
    };
    if (!ending_ && deadline_ && running_ > 0) consider(*deadline_);
    if (!ending_ && next_hang_check_ && running_ > 0) consider(*next_hang_check_);
    if (ending_ && !killed_ && running_ > 0) consider(kill_at_);
    if (running_ == 0) consider(drain_until_);
    if (!next) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - clock::now()).count();
    return static_cast<int>(std::clamp<std::int64_t>(left, 0, INT_MAX));
  }

  void on_signal(int sig) {
    if (sig == SIGCHLD) {
      reap();
    } else if (sig == SIGUSR1) {
      report_waits("oneside-run: what the ranks of job " + job_id_ + " do (SIGUSR1):\n");
    } else if (!ending_) {
      std::string what = "interrupted by signal ";
      what.append(signal_text(sig));
      if (running_ > 0) what.append("; killing ").append(plural(running_, "rank"));
      begin_ending(what, 128 + sig);
    } else if (!killed_) {
      kill_now();  // asked twice: do not wait for the grace period
    }
  }

  void reap() {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;  // 0: nobody else has ended; -1: no children left
      if (pid == reaper_.pid()) {
        reaper_.on_reaped();
        continue;
      }
      for (std::size_t r = 0; r < ranks_.size(); ++r) {
        if (ranks_[r].pid != pid || !ranks_[r].running) continue;
        ranks_[r].running = false;
        ranks_[r].ended_ns = monotonic_ns();
        ranks_[r].ended = describe_status(status);
        --running_;
        const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (failed && !ending_) {
          std::string what = "rank ";
          what.append(std::to_string(r)).append(" ").append(describe_status(status));
          what.append(killing_the_others(running_));
          begin_ending(what, exit_code_of(status));
        } else if (!failed && !ending_ && runtime_left_open(r)) {
          // The others would wait for it in their next collective, forever.
          std::string what = "rank ";
          what.append(std::to_string(r))
              .append(
                  " exited with status 0 without closing the oneside runtime (it opened it; "
                  "close it, or let the oneside::runtime object go out of scope, before "
                  "exiting)");
          what.append(killing_the_others(running_));
          begin_ending(what, exit_unclosed);
        }
      }
    }
    if (running_ == 0 && !ranks_done_) {
      ranks_done_ = true;
      // Whatever the ranks forked into their group goes with them. The group id cannot name
      // anybody else while one of its members lives; once none does, the kill finds nobody
      // (a new group with that id would need the pid numbers to wrap around in between).
      if (pgid_ > 0) ::kill(-pgid_, SIGKILL);
      drain_until_ = clock::now() + drain_limit;
    }
  }

  // Whether rank r opened the runtime and has not closed it (the state it left in the boot
  // object).
  bool runtime_left_open(std::size_t r) const noexcept {
    if (boot_.data() == nullptr) return false;
    return detail::boot_rank_of(boot_.data(), size(), static_cast<int>(r))
               .state.load(std::memory_order_acquire) ==
           static_cast<std::uint32_t>(detail::runtime_state::open);
  }

  // The job ends early: one line on stderr, SIGTERM now, SIGKILL after the grace period.
  void begin_ending(const std::string& what, int exit_code) {
    ending_ = true;
    exit_code_ = exit_code;
    std::string line = "oneside-run: ";
    line.append(what).append("\n");
    write_all(STDERR_FILENO, line.data(), line.size());
    if (running_ == 0) return;
    if (spec_.kill_grace.count() <= 0) {
      kill_now();
      return;
    }
    signal_ranks(SIGTERM);
    kill_at_ = clock::now() + spec_.kill_grace;
  }

  // Prints `headline` and a paragraph per rank (wait_report.hpp) on stderr.
  void report_waits(const std::string& headline) {
    if (boot_.data() == nullptr) return;
    std::string text = headline;
    std::string ranks = describe_ranks(boot_.data(), size(), [&](int r) {
      return ranks_[static_cast<std::size_t>(r)].running
                 ? std::string()
                 : ranks_[static_cast<std::size_t>(r)].ended;
    });
    for (std::size_t at = 0; at < ranks.size();) {
      const std::size_t end = std::min(ranks.find('\n', at), ranks.size());
      text.append("  ").append(ranks, at, end - at).append("\n");
      at = end + 1;
    }
    write_all(STDERR_FILENO, text.data(), text.size());
  }

  // Every rank waits in oneside (or is gone) and none has made progress for the hang timeout:
  // say what each waits for and end the job.
  void check_hang() {
    next_hang_check_ = clock::now() + hang_check_every;
    if (boot_.data() == nullptr) return;
    const std::int64_t quiet = job_quiet_ns(
        boot_.data(), size(), [&](int r) { return ranks_[static_cast<std::size_t>(r)].ended_ns; },
        monotonic_ns());
    const std::int64_t limit = std::chrono::nanoseconds(spec_.hang_timeout).count();
    if (quiet < limit) return;
    // Each waiting thread describes its own wait, when it next wakes: on a loaded machine
    // that may come seconds late. Give late descriptions up to another timeout (10 s at
    // least) so the report says what every rank waits for.
    const std::int64_t grace = std::max<std::int64_t>(limit, 10'000'000'000);
    if (quiet < limit + grace && waits_undescribed(boot_.data(), size(), [&](int r) {
          return ranks_[static_cast<std::size_t>(r)].running;
        })) {
      return;
    }
    const std::string seconds = std::to_string(spec_.hang_timeout.count());
    report_waits("oneside-run: no rank made progress for " + seconds +
                 " s (ONESIDE_HANG_TIMEOUT); what each rank waits for:\n");
    std::string what = "the job hangs; killing ";
    what.append(plural(running_, "rank"));
    begin_ending(what, exit_hang);
  }

  void check_deadlines() {
    const auto now = clock::now();
    if (!ending_ && next_hang_check_ && running_ > 0 && now >= *next_hang_check_) check_hang();
    if (!ending_ && deadline_ && running_ > 0 && now >= *deadline_) {
      std::string what = "job timed out after ";
      what.append(std::to_string(spec_.timeout.count())).append(" s; killing ");
      what.append(plural(running_, "rank"));
      begin_ending(what, exit_timeout);
    }
    if (ending_ && !killed_ && running_ > 0 && now >= kill_at_) kill_now();
  }

  void kill_now() noexcept {
    signal_ranks(SIGKILL);
    killed_ = true;
  }

  // The whole group (ranks and what they forked) and each rank by pid, in case a rank moved
  // itself to another group. Unreaped ranks keep their pids, so these never hit a stranger.
  void signal_ranks(int sig) noexcept {
    if (pgid_ > 0) ::kill(-pgid_, sig);
    for (const rank_process& r : ranks_) {
      if (r.running) ::kill(r.pid, sig);
    }
  }

  // Runs once, whatever happened before: no rank left, no shared memory left, reaper told.
  void finish() noexcept {
    if (finished_) return;
    finished_ = true;
    if (running_ > 0) {
      signal_ranks(SIGKILL);
      for (rank_process& r : ranks_) {
        if (!r.running) continue;
        while (::waitpid(r.pid, nullptr, 0) < 0 && errno == EINTR) continue;
        r.running = false;
      }
      running_ = 0;
    }
    if (pgid_ > 0) ::kill(-pgid_, SIGKILL);
    boot_ = detail::shm_object();
    detail::sweep_job_shm(job_id_);  // the liveness record last
    liveness_ = detail::job_liveness();
    reaper_.dismiss();
  }

  const job_spec& spec_;
  signal_channel signals_;  // first: signals are blocked before any child exists
  std::string job_id_;
  detail::job_liveness liveness_;
  reaper reaper_;
  detail::shm_object boot_;
  unique_fd dev_null_;
  std::vector<rank_process> ranks_;
  std::vector<line_tagger> taggers_;
  pid_t pgid_ = 0;
  int running_ = 0;
  bool ending_ = false;
  bool killed_ = false;
  bool ranks_done_ = false;
  bool finished_ = false;
  int exit_code_ = 0;
  std::optional<clock::time_point> deadline_;
  std::optional<clock::time_point> next_hang_check_;
  clock::time_point kill_at_{};
  clock::time_point drain_until_{};
};

}  // namespace

int run_job(const job_spec& spec) {
  return job(spec).run();
}

}  // namespace oneside::launcher
