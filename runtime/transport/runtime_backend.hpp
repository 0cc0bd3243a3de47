// What the runtime and the router need of a backend beyond the interface the layers use: a
// collective close, a local teardown for a failing rank, and the test of one completion entry
// (the router splits a completion between its two backends by target).
#pragma once

#include "runtime/transport.hpp"

namespace oneside::transport {

class runtime_backend : public backend {
 public:
  // Collective: completes everything this rank issued, waits for every rank, stops the
  // transport's threads and releases its memory. Later calls fail with error(not_open).
  virtual void close() = 0;
  // Local teardown for a rank that is failing: stops the threads and releases this rank's
  // memory without waiting for anyone. Later calls fail with error(not_open).
  virtual void abandon() noexcept = 0;
  // Whether the operation an entry of a completion tracks (made by this backend) is complete;
  // once true, the entry is dropped and never asked about again.
  virtual bool is_complete(const completion::pending& p) = 0;
  // Whether a handle this transport (or a backend it holds) made still exists: a closed
  // transport is destroyed only once none does (runtime.cpp).
  virtual bool in_use() const noexcept { return live_handles() != 0; }

 protected:
  // test() and wait() for backends that track a completion entry by entry (is_complete):
  // drop the entries that are complete; wait sleeps on local_doorbell() meanwhile.
  bool test_entries(completion& c);
  void wait_entries(completion& c);
};

}  // namespace oneside::transport
