// The runtime object: opened once per process in main, closed at scope end. Opening and
// closing are collective over every rank of the job. A program started without oneside-run
// is a job of one rank.
#pragma once

#include <oneside/runtime/types.hpp>

namespace oneside {

class runtime {
 public:
  // Collective open. First checks every ONESIDE_* variable of the environment against the
  // settings registry, before anything is created: an invalid value, a misspelt setting name or
  // launcher variables that describe no rank end the process with exit status 2 after one line
  // per problem on stderr ("oneside: ONESIDE_AM_SLOTS='0' is out of range; valid: 2 to 65536";
  // under an MPI launcher from its rank 0 only), as oneside-run does before it starts a job.
  // Other unknown ONESIDE_* names are a warning. Throws error(arg) if a runtime is already open
  // in this process (that one stays open) or a setting cannot serve this job (the message
  // names it, e.g. ONESIDE_TRANSPORT=shm across nodes), and error(intern) if the job cannot be
  // joined (e.g. the launcher's job is gone).
  runtime();
  runtime(int argc, char** argv);
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
  // Closes if close() was not called. When the scope is left by an exception, the close is
  // local (no barrier): this rank fails, and the launcher ends the job.
  ~runtime();

  // Collective close: waits for every rank, stops the agent, releases shared memory.
  // Calling it twice is harmless.
  void close();

  rank_t rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

 private:
  rank_t rank_ = 0;
  int size_ = 1;
  bool open_ = false;
};

// True between a runtime's open and its close.
bool is_open() noexcept;

}  // namespace oneside
