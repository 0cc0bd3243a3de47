// The shm backend's completion: load/store and cross-memory attach complete when the call
// returns, so only active messages are ever outstanding; they are complete once the target's
// agent stored their ticket in our page (applied[target]).
#include <oneside/runtime/wait.hpp>

#include "transport/shm/shm_transport.hpp"

namespace oneside::transport {

bool shm::is_applied(int i, std::uint64_t ticket) const noexcept {
  return own_.applied[i].value.load(std::memory_order_acquire) >= ticket;
}

void shm::flush(rank_t target) {
  const int i = index_of(target);
  if (i < 0 || closed_.load(std::memory_order_relaxed)) [[unlikely]] {
    (void)checked_index(target, "flush");
  }
  const std::uint64_t issued = peer_at(i).issued.load(std::memory_order_acquire);
  // Only active messages can be outstanding: nothing to wait for unless some were sent.
  if (issued != 0 && !is_applied(i, issued)) {
    oneside::detail::wait_until(own_.header->main_bell, [&] { return is_applied(i, issued); });
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  oneside::detail::cross_process_sync();
}

void shm::flush_all() {
  check_open("flush_all");
  const std::uint64_t sent = am_sent_.load(std::memory_order_acquire);
  if (sent != am_flushed_.load(std::memory_order_relaxed)) {
    for (int i = 0; i < count_; ++i) {
      const std::uint64_t issued = peer_at(i).issued.load(std::memory_order_acquire);
      if (!is_applied(i, issued)) {
        oneside::detail::wait_until(own_.header->main_bell, [&] { return is_applied(i, issued); });
      }
    }
    // Everything sent before `sent` was read is applied now (never lower the mark).
    std::uint64_t seen = am_flushed_.load(std::memory_order_relaxed);
    while (seen < sent &&
           !am_flushed_.compare_exchange_weak(seen, sent, std::memory_order_relaxed)) {
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  oneside::detail::cross_process_sync();
}

// Everything shm does is locally complete when the call returns (payloads are copied).
void shm::flush_local(rank_t target) {
  (void)checked_index(target, "flush_local");
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void shm::flush_local_all() {
  check_open("flush_local_all");
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool shm::is_complete(const completion::pending& p) {
  return is_applied(index_of(p.target), p.ticket);
}

bool shm::test(completion& c) {
  return test_entries(c);
}

void shm::wait(completion& c) {
  wait_entries(c);
}

}  // namespace oneside::transport
