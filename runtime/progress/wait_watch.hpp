// Watching long waits, for hang diagnosis (ONESIDE_HANG_TIMEOUT, oneside-run --dump). Every wait
// that goes to sleep (backoff's sleep phase) counts itself in this process's wait record,
// describes its open wait scopes once it has lasted a second (and every second after), and
// judges whether the process is quiet: some thread waits, no wait has ended and the program's
// threads (the runtime's own agent and progress threads left out) use almost no CPU.
// Under oneside-run the record is the rank's entry in the job's boot object and the launcher
// decides, across ranks, that the job hangs; alone or under mpirun, a process that stays quiet
// for the hang timeout says what it waits for and exits with hang_exit_status.
#pragma once

#include <cstdint>
#include <string>

#include "progress/wait_record.hpp"

namespace oneside::detail {

// The exit status of a job (oneside-run) or a process (alone, mpirun) ended by the hang check.
inline constexpr int hang_exit_status = 125;

// Where this process's waits report from now on: `record` (the boot object's entry, read by
// the launcher, which then judges hangs when `launcher_judges`), or null for the process's own.
void set_wait_record(wait_record* record, bool launcher_judges) noexcept;
// Stops reporting into `record` (a boot object about to be unmapped): switches to the process's
// own and waits, at most `patience_ns`, until no wait uses `record` any more. False when some
// wait still does (the caller must then keep the memory mapped).
bool retire_wait_record(wait_record& record, std::int64_t patience_ns) noexcept;
// The quiet time after which a process nobody watches ends itself (0: never).
void set_hang_timeout(std::int64_t ns) noexcept;
// The described waits of `record`, one paragraph per thread, indented, as of `now_ns`
// (CLOCK_MONOTONIC); empty when nothing waits.
std::string describe_waits(const wait_record& record, std::int64_t now_ns);

}  // namespace oneside::detail
