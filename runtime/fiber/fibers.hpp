// What the rest of the runtime asks of the fibers of runtime/fiber/ (no Boost type here).
#pragma once

namespace oneside::detail {

// Runs the calling thread's fibers until none is left (the end of a task of the rank's arena,
// the runtime's close). Waits the one way meanwhile; rethrows nothing (a fiber's exception
// goes to whoever joins it, or ends the process when it is detached).
void drain_fibers();

// A task of the rank's arena has fibers of its own, which move with it when it is suspended
// and resumed on another thread: the task's scheduler replaces the thread's while the task runs
// there (runtime/task/). Null: none yet (one is made at the first spawn).
class scheduler;
scheduler* exchange_scheduler(scheduler* s) noexcept;
// Deletes a scheduler whose fibers have all ended.
void delete_scheduler(scheduler* s) noexcept;

}  // namespace oneside::detail
