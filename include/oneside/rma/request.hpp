// Requests of the request-based RMA calls (rput, rget, raccumulate, rget_accumulate). Their
// completion is local: an rput/raccumulate request completes when the origin buffer may be
// reused, an rget/rget_accumulate request when the data is in the origin/result buffer
// (REQ-3 … REQ-6); remote completion still needs flush or unlock. Every wait goes through the
// waiting primitive and progresses without the target's help (REQ-11). Move-only.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>

namespace oneside::rma {

namespace detail {
struct request_state;
}

class request {
 public:
  request() noexcept;  // a null request: complete, wait() returns at once
  request(request&&) noexcept;
  request& operator=(request&&) noexcept;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  ~request();

  // True when the operation is locally complete (after which the request is null).
  bool test();
  void wait();
  // Null: default-made, or completed by test/wait. A request an r-call returns is active
  // until then, even when its operation is complete already (as in MPI).
  bool is_null() const noexcept { return !active_; }

  // An active request; `s` is null when the operation is complete already.
  explicit request(std::unique_ptr<detail::request_state> s) noexcept;

 private:
  std::unique_ptr<detail::request_state> state_;
  bool active_ = false;
};

// Multiple completion (REQ-8), over any mix of request kinds. Completed requests become null.
void wait_all(std::span<request> requests);
// Index of a request that completed (null requests are skipped); nullopt if all are null.
std::optional<std::size_t> wait_any(std::span<request> requests);
// Indices of the requests that completed (at least one unless all are null).
std::size_t wait_some(std::span<request> requests, std::span<std::size_t> indices);
bool test_all(std::span<request> requests);
std::optional<std::size_t> test_any(std::span<request> requests);
std::size_t test_some(std::span<request> requests, std::span<std::size_t> indices);

}  // namespace oneside::rma
