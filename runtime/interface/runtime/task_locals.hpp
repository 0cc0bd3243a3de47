// Thread-local state of a layer above that belongs to the code running on a thread rather than
// to the thread: the pgas layer's continuation frames (how deep the running stack is in
// continuations, and what they deferred until the outermost returns). A task of the rank's
// arena that waits is suspended and may be resumed on another thread (runtime/task): it takes
// this state along, and the thread it leaves gets its own back. Each task starts with none.
#pragma once

namespace oneside::detail {

// Installs `next` (null: none) as the calling thread's state and returns the state it replaces
// (null: none). Runs around every task and every suspension of one; must not block or wait.
using task_locals_fn = void* (*)(void* next) noexcept;

// Registers the exchange (once, from a static initializer of the layer's library).
void set_task_locals(task_locals_fn fn) noexcept;

}  // namespace oneside::detail
