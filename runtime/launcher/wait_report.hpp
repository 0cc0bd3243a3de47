// What the ranks of a job wait for, read from the job's boot object (the records their long
// waits keep, progress/wait_record.hpp): the launcher's hang report (ONESIDE_HANG_TIMEOUT), its
// answer to SIGUSR1, and `oneside-run --dump` for jobs of other launchers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace oneside::launcher {

// How the caller sees rank r's process: empty while it runs, else what became of it
// ("exited with status 0").
using process_state_fn = std::function<std::string(int rank)>;

// One paragraph per rank of the job whose boot object of `size` ranks is mapped at `boot`.
std::string describe_ranks(const void* boot, int size, const process_state_fn& state);

// CLOCK_MONOTONIC now, in nanoseconds (the clock of the records).
std::int64_t monotonic_ns() noexcept;

// When every rank is quiet (progress/wait_watch.hpp) or gone, how long the most recently
// active of them has been so: `ended_ns(r)` gives when rank r's process ended, or 0 while it
// runs. 0 when some running rank is not quiet.
std::int64_t job_quiet_ns(const void* boot, int size,
                          const std::function<std::int64_t(int rank)>& ended_ns,
                          std::int64_t now_ns);

// Whether some running rank (`running(r)`) has a waiting thread that has not described its
// wait yet.
bool waits_undescribed(const void* boot, int size, const std::function<bool(int rank)>& running);

// oneside-run --dump [JOB]: prints what the ranks of every live job of this user on this node
// (or of the job whose id or launcher pid is JOB) wait for. Returns the exit status: 0, or 1
// when no such job runs.
int dump_jobs(const std::string& which);

}  // namespace oneside::launcher
