// Reading what a job's ranks wait for from its boot object (see wait_report.hpp).
#include "launcher/wait_report.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <dirent.h>
#include <signal.h>
#include <string_view>
#include <unistd.h>
#include <vector>

#include <oneside/runtime/error.hpp>

#include "bootstrap/boot_segment.hpp"
#include "launcher/unique_fd.hpp"
#include "progress/wait_watch.hpp"
#include "transport/shm/shm_object.hpp"

namespace oneside::launcher {
namespace {

const detail::boot_rank& record_of(const void* boot, int size, int r) noexcept {
  return detail::boot_rank_of(const_cast<void*>(boot), size, r);
}

std::string seconds_text(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

void print(const std::string& text) {
  write_all(STDOUT_FILENO, text.data(), text.size());
}

// The launcher's pid in a job id ("<pid>-<random>"), or 0.
pid_t launcher_of(std::string_view job) noexcept {
  int pid = 0;
  const auto [ptr, ec] = std::from_chars(job.data(), job.data() + job.size(), pid);
  return ec == std::errc() && ptr != job.data() && ptr < job.data() + job.size() && *ptr == '-'
             ? pid
             : 0;
}

bool is_alive(pid_t pid) noexcept {
  return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

// The ids of the jobs whose boot objects are in /dev/shm.
std::vector<std::string> jobs_with_boot_objects() {
  std::vector<std::string> jobs;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return jobs;
  constexpr std::string_view prefix = "oneside.";
  constexpr std::string_view suffix = ".boot";
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name(e->d_name);
    if (name.size() > prefix.size() + suffix.size() && name.starts_with(prefix) &&
        name.ends_with(suffix)) {
      jobs.emplace_back(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
    }
  }
  ::closedir(dir);
  std::sort(jobs.begin(), jobs.end());
  return jobs;
}

}  // namespace

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string describe_ranks(const void* boot, int size, const process_state_fn& state) {
  std::string out;
  const std::int64_t now = monotonic_ns();
  for (int r = 0; r < size; ++r) {
    const detail::boot_rank& rec = record_of(boot, size, r);
    out.append("rank ").append(std::to_string(r));
    if (const std::int32_t pid = rec.owner.load(std::memory_order_relaxed); pid > 0) {
      out.append(" (pid ").append(std::to_string(pid)).append(")");
    }
    out.append(": ");
    if (const std::string ended = state(r); !ended.empty()) {
      out.append(ended).append("\n");
      continue;
    }
    const auto runtime =
        static_cast<detail::runtime_state>(rec.state.load(std::memory_order_relaxed));
    if (rec.waits.waiting.load(std::memory_order_relaxed) == 0) {
      out.append(runtime == detail::runtime_state::not_opened ? "has not opened the runtime; "
                 : runtime == detail::runtime_state::closed   ? "closed the runtime; "
                                                              : "");
      out.append("running, not waiting in oneside\n");
      continue;
    }
    out.append("waiting in oneside");
    if (const std::int64_t quiet = rec.waits.quiet_since_ns.load(std::memory_order_relaxed);
        quiet != 0 && now > quiet) {
      out.append(", quiet for ").append(seconds_text(now - quiet));
    }
    out.append("\n").append(detail::describe_waits(rec.waits, now));
  }
  return out;
}

bool waits_undescribed(const void* boot, int size, const std::function<bool(int rank)>& running) {
  for (int r = 0; r < size; ++r) {
    if (running(r) && detail::undescribed_waits(record_of(boot, size, r).waits) > 0) return true;
  }
  return false;
}

std::int64_t job_quiet_ns(const void* boot, int size,
                          const std::function<std::int64_t(int rank)>& ended_ns,
                          std::int64_t now_ns) {
  std::int64_t least = -1;
  for (int r = 0; r < size; ++r) {
    std::int64_t quiet = 0;
    if (const std::int64_t ended = ended_ns(r); ended > 0) {
      quiet = now_ns - ended;
    } else {
      const std::int64_t since =
          record_of(boot, size, r).waits.quiet_since_ns.load(std::memory_order_relaxed);
      if (since == 0) return 0;
      quiet = now_ns - since;
    }
    least = least < 0 ? quiet : std::min(least, quiet);
  }
  return std::max<std::int64_t>(least, 0);
}

int dump_jobs(const std::string& which) {
  int shown = 0;
  for (const std::string& job : jobs_with_boot_objects()) {
    const pid_t launcher = launcher_of(job);
    if (!which.empty() && which != job && which != std::to_string(launcher)) continue;
    if (!is_alive(launcher)) continue;  // a dead job's leftovers (oneside-run --cleanup)
    detail::shm_object boot;
    try {
      boot = detail::shm_object(detail::shm_name(job, "boot"), 0, detail::shm_object::mode::open);
    } catch (const error&) {
      continue;  // ended meanwhile, or not this user's
    }
    const auto* h = static_cast<const detail::boot_header*>(boot.data());
    if (boot.size() < sizeof(detail::boot_header) ||
        std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(h->magic))
                .load(std::memory_order_acquire) != detail::boot_magic ||
        h->version != detail::boot_version || h->size <= 0 ||
        boot.size() < detail::boot_segment_bytes(h->size)) {
      continue;  // another oneside version's job
    }
    std::string out = "job ";
    out.append(job).append(" (launcher pid ").append(std::to_string(launcher)).append(", ");
    out.append(std::to_string(h->size)).append(h->size == 1 ? " rank):\n" : " ranks):\n");
    out.append(describe_ranks(boot.data(), h->size, [&](int r) -> std::string {
      const std::int32_t pid = record_of(boot.data(), h->size, r).owner.load();
      if (pid > 0 && !is_alive(pid)) return "ended";
      return {};
    }));
    print(out);
    ++shown;
  }
  if (shown == 0) {
    print(which.empty() ? "oneside-run --dump: no oneside job of this user runs on this node\n"
                        : "oneside-run --dump: no running job " + which + " of this user\n");
    return 1;
  }
  return 0;
}

}  // namespace oneside::launcher
