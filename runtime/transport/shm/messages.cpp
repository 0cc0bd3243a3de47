// The shm backend's active messages and wake-ups: a bounded multi-producer queue in each rank
// page (D. Vyukov's ring), drained by the owner's agent thread (or by its waits with
// ONESIDE_AGENT=poll), and the doorbells waiting threads sleep on.
#include <cstring>
#include <ctime>
#include <pthread.h>

#include <oneside/runtime/wait.hpp>

#include "transport/am_registry.hpp"
#include "transport/shm/shm_transport.hpp"

namespace oneside::transport {

using oneside::detail::doorbell;
using namespace shm_detail;

void shm::am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
                  completion* c) {
  const int i = checked_index(dst, "am_send");
  detail::check_am_send(dst, handler, payload.size(), caps_.max_am_payload);
  peer& p = peer_at(i);
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(p.send_mutex);
    ticket = p.issued.load(std::memory_order_relaxed) + 1;
    enqueue(i, handler, payload, ticket);
    p.issued.store(ticket, std::memory_order_release);
  }
  am_sent_.fetch_add(1, std::memory_order_release);
  // The agent sleeps on its own bell; in poll mode the rank's waits do the work.
  oneside::detail::notify(opts_.agent_thread ? p.page.header->agent_bell
                                             : p.page.header->main_bell);
  if (c != nullptr) c->entries().push_back({dst, ticket});
}

void shm::enqueue(int i, am_handler_id handler, std::span<const std::byte> payload,
                  std::uint64_t ticket) {
  const page_view& q = peer_at(i).page;
  page_header& h = *q.header;
  for (;;) {
    std::uint64_t pos = h.am_enqueue.load(std::memory_order_relaxed);
    am_slot_header* s = nullptr;
    for (;;) {
      s = &q.slot(pos);
      const std::uint64_t seq = s->seq.load(std::memory_order_acquire);
      const auto diff = static_cast<std::int64_t>(seq - pos);
      if (diff == 0) {
        if (h.am_enqueue.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        s = nullptr;  // full
        break;
      } else {
        pos = h.am_enqueue.load(std::memory_order_relaxed);
      }
    }
    if (s != nullptr) {
      s->handler = handler;
      s->len = static_cast<std::uint32_t>(payload.size());
      s->source = me_;
      s->ticket = ticket;
      if (!payload.empty()) std::memcpy(q.payload(*s), payload.data(), payload.size());
      oneside::detail::cross_process_release();
      s->seq.store(pos + 1, std::memory_order_release);
      return;
    }
    // Full: wait until the owner frees a slot. Make progress ourselves meanwhile in case
    // the queue is our own and nobody else drains it.
    const std::uint64_t seen = h.am_dequeue.load(std::memory_order_acquire);
    if (i == me_ && !opts_.agent_thread) drain();
    oneside::detail::wait_until(
        h.space_bell, [&] { return h.am_dequeue.load(std::memory_order_acquire) != seen; });
  }
}

bool shm::has_message() const noexcept {
  const std::uint64_t pos = own_.header->am_dequeue.load(std::memory_order_relaxed);
  return own_.slot(pos).seq.load(std::memory_order_acquire) == pos + 1;
}

void shm::apply_message(am_slot_header& s) noexcept {
  detail::run_am_handler(*front_, rank_, job_ranks_[static_cast<std::size_t>(s.source)], s.handler,
                         std::span<const std::byte>(own_.payload(s), s.len));
}

std::size_t shm::drain() noexcept {
  if (consumer_busy_.test_and_set(std::memory_order_acquire)) return 0;
  page_header& h = *own_.header;
  std::size_t n = 0;
  for (;;) {
    const std::uint64_t pos = h.am_dequeue.load(std::memory_order_relaxed);
    am_slot_header& s = own_.slot(pos);
    if (s.seq.load(std::memory_order_acquire) != pos + 1) break;
    oneside::detail::cross_process_acquire();
    apply_message(s);
    const int source = s.source;
    const std::uint64_t ticket = s.ticket;
    s.seq.store(pos + h.am_slots, std::memory_order_release);
    h.am_dequeue.store(pos + 1, std::memory_order_release);
    // Applied: tell the origin (its flush or completion may be waiting).
    peer& origin = peer_at(source);
    origin.page.applied[me_].value.store(ticket, std::memory_order_release);
    oneside::detail::notify(origin.page.header->main_bell);
    ++n;
  }
  consumer_busy_.clear(std::memory_order_release);
  if (n > 0) oneside::detail::notify(h.space_bell);
  return n;
}

void shm::agent_main() noexcept {
  ::pthread_setname_np(::pthread_self(), "oneside-agent");
  oneside::detail::mark_runtime_thread();
  // After a message the agent polls a while (another one often follows), then sleeps on its
  // own doorbell until a sender rings it; it never yields to the rank's threads in between.
  const oneside::detail::wait_policy policy{opts_.agent_spin_ns, 0, 200'000'000};
  while (!stop_.load(std::memory_order_acquire)) {
    if (drain() > 0) continue;
    oneside::detail::wait_until(own_.header->agent_bell, policy, [&] {
      return has_message() || stop_.load(std::memory_order_acquire);
    });
  }
  drain();
}

void shm::stop_agent() noexcept {
  if (!agent_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  own_.header->agent_bell.ring();
  agent_.join();
}

void shm::progress() {
  if (!opts_.agent_thread) drain();
}

void shm::wake(rank_t r) noexcept {
  const int i = index_of(r);
  if (i < 0) return;
  oneside::detail::notify(peer_at(i).page.header->main_bell);
}

void shm::wake(std::span<const rank_t> ranks) noexcept {
  oneside::detail::cross_process_release();
  oneside::detail::waker_fence();
  for (rank_t r : ranks) {
    const int i = index_of(r);
    if (i < 0) continue;
    doorbell& bell = peer_at(i).page.header->main_bell;
    if (bell.has_sleepers()) bell.ring();
  }
}

doorbell& shm::local_doorbell() noexcept {
  return own_.header->main_bell;
}

doorbell* shm::peer_doorbell(rank_t r) noexcept {
  const int i = index_of(r);
  return i < 0 ? nullptr : &peer_at(i).page.header->main_bell;
}

std::int64_t shm::agent_cpu_ns() const noexcept {
  if (!agent_.joinable()) return -1;
  clockid_t cid{};
  if (::pthread_getcpuclockid(const_cast<std::thread&>(agent_).native_handle(), &cid) != 0) {
    return -1;
  }
  timespec ts{};
  ::clock_gettime(cid, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace oneside::transport
