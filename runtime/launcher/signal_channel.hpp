// The launcher's signals as readable events (signalfd): SIGCHLD, SIGINT, SIGTERM, SIGHUP and
// SIGUSR1 (print what the ranks wait for) are blocked and read from a descriptor in the main poll
// loop, so no work ever runs inside a signal handler. SIGPIPE is ignored so that a closed stdout
// shows up as EPIPE. Children restore the original mask and SIGPIPE action before exec.
#pragma once

#include <signal.h>
#include <vector>

#include "launcher/unique_fd.hpp"

namespace oneside::launcher {

class signal_channel {
 public:
  // Blocks the signals and opens the descriptor. Throws error(intern).
  signal_channel();
  // Restores the signal mask and the SIGPIPE action.
  ~signal_channel();
  signal_channel(const signal_channel&) = delete;
  signal_channel& operator=(const signal_channel&) = delete;

  // Readable when a signal is pending.
  int fd() const noexcept { return fd_.get(); }
  // Every pending signal, in arrival order (several SIGCHLD may arrive as one).
  std::vector<int> read_pending();

  // For a child between fork and exec: puts back what the launcher's caller gave us.
  // Async-signal-safe.
  void restore_in_child() const noexcept;

 private:
  sigset_t old_mask_{};
  struct sigaction old_pipe_action_ {};
  unique_fd fd_;
};

}  // namespace oneside::launcher
