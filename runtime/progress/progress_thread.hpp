// The rank's progress thread: resumes waits that were parked (a task of the rank's arena that
// waits is suspended and its wait parked here, runtime/task/) once their predicate holds, and,
// with ONESIDE_PROGRESS_THREAD=1, drives the transport's progress while the program computes.
// It exists from the first parked wait (or the runtime's open with the setting) until the
// process ends, and sleeps on the process's doorbell when there is nothing to do: spin, yield,
// then sleep, as every wait.
#pragma once

#include <exception>

#include <oneside/runtime/wait.hpp>

namespace oneside::detail {

// A wait whose caller is suspended. The progress thread calls request.test (never
// concurrently) until it returns true or throws, stores what it threw in `error`, then calls
// resume(resume_arg) once; the parked_wait must stay valid until then.
struct parked_wait {
  wait_request request;
  void (*resume)(void* arg) noexcept;
  void* resume_arg;
  const wait_site* scopes;  // the caller's open wait scopes, for hang descriptions
  std::exception_ptr error;
  parked_wait* next = nullptr;
};

// Starts the progress thread when none runs (before a caller parks: park() cannot fail).
void start_progress_thread();
// Hands `w` to the progress thread.
void park(parked_wait& w) noexcept;

// ONESIDE_PROGRESS_THREAD: from the runtime's open to its close, the progress thread also
// runs the transport's progress. Off returns once the thread no longer touches the transport.
void set_progress_thread(bool on);

// Whether the calling thread's long waits are watched (counted and described for hang
// diagnosis); the progress thread's are only while waits are parked.
void set_waits_watched(bool watched) noexcept;

}  // namespace oneside::detail
