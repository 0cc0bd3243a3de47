// Running one job: N rank processes on this node, supervised until the last one is gone.
// The launcher's main loop blocks in poll() on a signalfd (SIGCHLD and the signals that end
// the job) and, with --tag-output, on the ranks' output pipes; timeouts come from the
// deadlines of the job, never from spinning.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "topology/binding.hpp"

namespace oneside::launcher {

// Exit statuses of oneside-run besides a failed rank's own (documented in --help).
inline constexpr int exit_internal = 1;    // oneside-run itself failed
inline constexpr int exit_unclosed = 3;    // a rank exited 0 with its runtime still open
inline constexpr int exit_usage = 2;       // bad usage; nothing started
inline constexpr int exit_timeout = 124;   // --timeout expired, as timeout(1)
inline constexpr int exit_hang = 125;      // no rank made progress for ONESIDE_HANG_TIMEOUT
inline constexpr int exit_no_start = 127;  // a rank could not be started (exec or bind failed)

struct job_spec {
  std::string program;                         // the path to execute (already resolved)
  std::vector<std::string> argv;               // argv of every rank; argv[0] as the user typed it
  std::vector<detail::rank_binding> bindings;  // one per rank: their number is the job's size
  std::chrono::seconds timeout{0};             // 0: no limit
  std::chrono::milliseconds kill_grace{300};   // SIGTERM to SIGKILL
  std::chrono::seconds hang_timeout{0};        // ONESIDE_HANG_TIMEOUT; 0: no hang check
  bool tag_output = false;
};

// Starts the ranks, waits for them and cleans up whatever happens: every rank (and anything
// it forked into the job's process group) is gone and the job's shared-memory objects are
// removed before this returns. Returns oneside-run's exit status.
int run_job(const job_spec& spec);

}  // namespace oneside::launcher
