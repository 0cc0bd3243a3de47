// What the sanitizers must be told of a fiber switch (runtime/fiber/): ASan that the stack
// changes (else it takes the other stack's frames for overflows and its fake stacks leak), TSan
// that the thread runs another logical thread (else the happens-before of one fiber is taken
// for the other's). Boost 1.74's fcontext tells neither, so the scheduler does at each switch;
// in other builds every call is empty and inlined away.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace oneside::detail {

// A context's side of the annotations.
struct switch_marks {
  const void* stack_bottom = nullptr;  // lowest address of its stack (learnt on leaving it)
  std::size_t stack_size = 0;
  void* fake_stack = nullptr;  // ASan's fake stack of the context while it does not run
  void* tsan_fiber = nullptr;  // TSan's fiber of the context
};

// A fiber's marks at its creation, on a stack of `size` bytes below `top`.
inline void marks_for_new_fiber(switch_marks& m, void* top, std::size_t size) noexcept {
  m.stack_bottom = static_cast<const char*>(top) - size;
  m.stack_size = size;
#if defined(__SANITIZE_ADDRESS__)
  // A pooled stack still carries the poisoned redzones of the frames of its last fiber.
  __asan_unpoison_memory_region(m.stack_bottom, size);
#endif
#if defined(__SANITIZE_THREAD__)
  m.tsan_fiber = __tsan_create_fiber(0);
#endif
}

// A thread's own context (or a task's, which may have moved to another thread) about to
// switch to a fiber: its marks are the running thread's.
inline void marks_of_this_thread([[maybe_unused]] switch_marks& m) noexcept {
#if defined(__SANITIZE_THREAD__)
  m.tsan_fiber = __tsan_get_current_fiber();
#endif
}

// Just before `from` switches to `to`; `from_ends` when `from` will never run again.
inline void before_switch([[maybe_unused]] switch_marks& from, [[maybe_unused]] bool from_ends,
                          [[maybe_unused]] const switch_marks& to) noexcept {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(from_ends ? nullptr : &from.fake_stack, to.stack_bottom,
                                 to.stack_size);
#endif
#if defined(__SANITIZE_THREAD__)
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
}

// First thing in `now` after a switch arrived there; `from` (null when it ended) learns where
// its stack is.
inline void after_switch([[maybe_unused]] switch_marks& now,
                         [[maybe_unused]] switch_marks* from) noexcept {
#if defined(__SANITIZE_ADDRESS__)
  const void* bottom = nullptr;
  std::size_t size = 0;
  __sanitizer_finish_switch_fiber(now.fake_stack, &bottom, &size);
  if (from != nullptr) {
    from->stack_bottom = bottom;
    from->stack_size = size;
  }
#endif
}

// A fiber that ended (after the switch away from it).
inline void marks_released([[maybe_unused]] switch_marks& m) noexcept {
#if defined(__SANITIZE_THREAD__)
  if (m.tsan_fiber != nullptr) __tsan_destroy_fiber(m.tsan_fiber);
  m.tsan_fiber = nullptr;
#endif
}

}  // namespace oneside::detail
