// What the runtime needs of a transport beyond the interface the layers use: a collective
// close and a local teardown for a failing rank.
#pragma once

#include <oneside/runtime/transport.hpp>

namespace oneside::transport {

class runtime_backend : public backend {
 public:
  // Collective: completes everything this rank issued, waits for every rank, stops the
  // transport's threads and releases its memory. Later calls fail with error(not_open).
  virtual void close() = 0;
  // Local teardown for a rank that is failing: stops the threads and releases this rank's
  // memory without waiting for anyone. Later calls fail with error(not_open).
  virtual void abandon() noexcept = 0;
};

}  // namespace oneside::transport
