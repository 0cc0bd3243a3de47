// The reaper: a tiny process forked by the launcher before any rank, which cleans up the job
// if the launcher itself dies without doing so (kill -9, OOM killer). It waits on a pipe whose
// only writer is the launcher; end-of-file without the launcher's "done" means the launcher
// is gone, and the reaper then kills the job's process group and removes the job's
// shared-memory objects. Ranks also die on their own then (PR_SET_PDEATHSIG), but whatever
// they forked and the objects in /dev/shm would outlive them without the reaper.
#pragma once

#include <string>
#include <sys/types.h>

#include "launcher/unique_fd.hpp"

namespace oneside::launcher {

class reaper {
 public:
  reaper() = default;
  // Forks the reaper of job `job_id`, which keeps descriptor `liveness_fd` (the job's
  // liveness record: the job is alive to sweepers while the reaper lives). Call while the
  // launcher has no other thread (the child runs ordinary code after fork). Throws
  // error(intern).
  static reaper start(const std::string& job_id, int liveness_fd);

  reaper(reaper&& o) noexcept;
  reaper& operator=(reaper&& o) noexcept;
  reaper(const reaper&) = delete;
  reaper& operator=(const reaper&) = delete;
  // Dismisses the reaper (see dismiss()).
  ~reaper();

  pid_t pid() const noexcept { return pid_; }
  // Tells the reaper the process group of the ranks, which it kills if the launcher dies.
  void watch_group(pid_t pgid) noexcept;
  // The launcher's SIGCHLD handling reaped the reaper (it died early): forget it.
  void on_reaped() noexcept;
  // The launcher has cleaned up itself: the reaper exits quietly; waits for it.
  void dismiss() noexcept;

 private:
  reaper(pid_t pid, unique_fd pipe) noexcept : pid_(pid), pipe_(std::move(pipe)) {}
  pid_t pid_ = -1;
  unique_fd pipe_;  // write end; the reaper holds the read end
};

}  // namespace oneside::launcher
