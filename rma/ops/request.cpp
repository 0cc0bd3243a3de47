// rma::request and the multiple-completion calls (REQ-*). Waits go through the waiting
// primitive and need nothing from the targets (their agents answer).
#include <utility>

#include <oneside/rma/request.hpp>
#include <oneside/runtime/runtime.hpp>
#include <oneside/runtime/wait.hpp>

#include "ops/request_state.hpp"
#include "runtime/transport.hpp"

namespace oneside::rma {

request::request(std::unique_ptr<detail::request_state> s) noexcept
    : state_(std::move(s)), active_(true) {}
request::request() noexcept = default;
request::request(request&& o) noexcept
    : state_(std::move(o.state_)), active_(std::exchange(o.active_, false)) {}
request& request::operator=(request&& o) noexcept {
  if (this != &o) {
    if (state_ != nullptr && oneside::is_open()) wait();  // pending work completes first
    state_ = std::move(o.state_);
    active_ = std::exchange(o.active_, false);
  }
  return *this;
}
request::~request() {
  if (state_ != nullptr && oneside::is_open()) wait();
}

bool request::test() {
  if (state_ != nullptr) {
    if (!transport::current().test(state_->completion)) return false;
    if (state_->finish) state_->finish();
    state_.reset();
  }
  active_ = false;
  return true;
}

void request::wait() {
  if (state_ != nullptr) {
    const oneside::detail::wait_scope waiting("request::wait");
    transport::current().wait(state_->completion);
    if (state_->finish) state_->finish();
    state_.reset();
  }
  active_ = false;
}

void wait_all(std::span<request> requests) {
  for (request& r : requests) r.wait();
}

bool test_all(std::span<request> requests) {
  bool all = true;
  for (request& r : requests) all = r.test() && all;
  return all;
}

std::optional<std::size_t> test_any(std::span<request> requests) {
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].is_null() && requests[i].test()) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> wait_any(std::span<request> requests) {
  bool any_pending = false;
  for (const request& r : requests) any_pending = any_pending || !r.is_null();
  if (!any_pending) return std::nullopt;
  std::optional<std::size_t> done;
  const oneside::detail::wait_scope waiting("wait_any");
  oneside::wait_until([&] { return (done = test_any(requests)).has_value(); });
  return done;
}

std::size_t test_some(std::span<request> requests, std::span<std::size_t> indices) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < requests.size() && n < indices.size(); ++i) {
    if (!requests[i].is_null() && requests[i].test()) indices[n++] = i;
  }
  return n;
}

std::size_t wait_some(std::span<request> requests, std::span<std::size_t> indices) {
  bool any_pending = false;
  for (const request& r : requests) any_pending = any_pending || !r.is_null();
  if (!any_pending) return 0;
  std::size_t n = 0;
  const oneside::detail::wait_scope waiting("wait_some");
  oneside::wait_until([&] { return (n = test_some(requests, indices)) > 0; });
  return n;
}

}  // namespace oneside::rma
