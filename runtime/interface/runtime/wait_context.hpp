// What the layers above add to every long wait's description (hang diagnosis,
// ONESIDE_HANG_TIMEOUT and oneside-run --dump): state of the process that is not the waiting
// call's own but often the other half of a hang, such as the rma layer's open epochs (a lock
// held on one window while waiting in a barrier). Process-wide; the functions run on a waiting
// thread, at most once a second per long wait, and must not block.
#pragma once

#include <string>

namespace oneside::detail {

// Appends what `object` wants reported to `out` (nothing when there is nothing to say).
using wait_context_fn = void (*)(const void* object, std::string& out) noexcept;

// Adds `fn` on `object` to every description from now on.
void add_wait_context(wait_context_fn fn, const void* object);
// Removes what was added for `object`; once this returns, `fn` no longer runs on it.
void remove_wait_context(const void* object) noexcept;

}  // namespace oneside::detail
