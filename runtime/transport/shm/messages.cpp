// The shm backend's active messages and wake-ups: a bounded multi-producer queue in each rank
// page (D. Vyukov's ring), drained by the owner's agent thread (or by its waits with
// ONESIDE_AGENT=poll), and the doorbells waiting threads sleep on.
#include <bit>
#include <cstring>
#include <ctime>
#include <pthread.h>

#include <oneside/runtime/wait.hpp>

#include "runtime/amo_local.hpp"
#include "transport/am_registry.hpp"
#include "transport/piece_copy.hpp"
#include "transport/shm/shm_transport.hpp"

namespace oneside::transport {

using oneside::detail::doorbell;
using namespace shm_detail;

std::atomic<void (*)()> queue_full_hook_for_testing{nullptr};

template <class Write>
std::uint64_t shm::send(int i, message_kind kind, am_handler_id handler, std::size_t bytes,
                        Write&& write) {
  peer& p = peer_at(i);
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(p.send_mutex);
    ticket = p.issued.load(std::memory_order_relaxed) + 1;
    enqueue(i, kind, handler, bytes, ticket, write);
    p.issued.store(ticket, std::memory_order_release);
  }
  am_sent_.fetch_add(1, std::memory_order_release);
  // The agent sleeps on its own bell; in poll mode the rank's waits do the work.
  oneside::detail::notify(opts_.agent_thread ? p.page.header->agent_bell
                                             : p.page.header->main_bell);
  return ticket;
}

void shm::am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
                  completion* c) {
  const int i = checked_index(dst, "am_send");
  detail::check_am_send(dst, handler, payload.size(), caps_.max_am_payload);
  const std::uint64_t ticket = send(i, kind_handler, handler, payload.size(), [&](std::byte* at) {
    if (!payload.empty()) std::memcpy(at, payload.data(), payload.size());
  });
  if (c != nullptr) c->entries().push_back({dst, ticket});
}

template <class Write>
void shm::enqueue(int i, message_kind kind, am_handler_id handler, std::size_t bytes,
                  std::uint64_t ticket, Write&& write) {
  const page_view& q = peer_at(i).page;
  page_header& h = *q.header;
  for (;;) {
    // Read before looking for a slot: a queue found full may be drained completely before a
    // later read, which would then wait for a change that never comes (a sender holding the
    // peer's send mutex hung so, with the rank's rpc replies queued behind it).
    const std::uint64_t seen = h.am_dequeue.load(std::memory_order_acquire);
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
      s->len = static_cast<std::uint32_t>(bytes);
      s->source = me_;
      s->kind = kind;
      s->ticket = ticket;
      write(q.payload(*s));
      oneside::detail::cross_process_release();
      s->seq.store(pos + 1, std::memory_order_release);
      return;
    }
    // Full: wait until the owner frees a slot. Make progress ourselves meanwhile in case
    // the queue is our own and nobody else drains it.
    if (void (*hook)() = queue_full_hook_for_testing.load(std::memory_order_relaxed)) hook();
    if (i == me_ && !opts_.agent_thread) drain();
    // The caller holds the peer's send mutex: wait on this thread, never through its wait
    // host. A task of the arena suspended here would keep the mutex while its worker ran
    // other tasks that block on it (an rpc's reply, sent from a task, deadlocked so), and
    // could resume on a thread that does not own it.
    auto has_space = [&] { return h.am_dequeue.load(std::memory_order_acquire) != seen; };
    oneside::detail::backoff b(h.space_bell);
    oneside::detail::wait_with(b, has_space);
  }
}

// ---- inline operations ----------------------------------------------------------------
//
// Small transfers to memory this process does not load and store cost a cross-memory attach
// (a system call of about 1.6 us here, with the kernel's access checks) on this path; as a
// message they cost two copies through the target's queue and its agent's turn (about 0.2 us
// for a message and its completion while the agent polls). Atomics always travel this way;
// the replies of gets and fetching atomics come back in this rank's page.

namespace {
// The head of a kind_put or kind_get message: its count, reply slot and pieces. Returns where
// what follows goes.
std::byte* write_head(std::byte* at, std::uint32_t reply, std::span<const remote_iov> remote) {
  const inline_head head{static_cast<std::uint32_t>(remote.size()), reply};
  std::memcpy(at, &head, sizeof head);
  at += sizeof head;
  for (const remote_iov& r : remote) {
    const inline_piece piece{r.addr, r.len};
    std::memcpy(at, &piece, sizeof piece);
    at += sizeof piece;
  }
  return at;
}

}  // namespace

std::uint64_t shm::put_inline(int i, std::span<const const_iov> local,
                              std::span<const remote_iov> remote) {
  std::size_t data = 0;
  for (const remote_iov& r : remote) data += r.len;
  const std::size_t bytes = sizeof(inline_head) + remote.size() * sizeof(inline_piece) + data;
  return send(i, kind_put, 0, bytes, [&](std::byte* at) {
    at = write_head(at, no_reply, remote);
    for (const const_iov& l : local) {
      std::memcpy(at, l.base, l.len);
      at += l.len;
    }
  });
}

void shm::get_inline(int i, std::span<const mutable_iov> local,
                     std::span<const remote_iov> remote) {
  const std::uint32_t slot = take_reply_slot();
  const std::size_t bytes = sizeof(inline_head) + remote.size() * sizeof(inline_piece);
  const std::uint64_t ticket =
      send(i, kind_get, 0, bytes, [&](std::byte* at) { write_head(at, slot, remote); });
  await_applied(i, ticket);
  const std::byte* from = own_.replies[slot].data;
  for (const mutable_iov& l : local) {
    std::memcpy(l.base, from, l.len);
    from += l.len;
  }
  give_reply_slot(slot);
}

void shm::amo_inline(int i, std::uintptr_t addr, const amo_args& args, void* result, completion* c,
                     rank_t target) {
  const std::uint32_t slot = result != nullptr ? take_reply_slot() : no_reply;
  const std::uint64_t ticket = send(i, kind_amo, 0, sizeof(inline_amo), [&](std::byte* at) {
    const inline_amo a{addr, args, slot};
    std::memcpy(at, &a, sizeof a);
  });
  if (result == nullptr) {
    if (c != nullptr) c->entries().push_back({target, ticket});
    return;
  }
  // A fetching atomic returns with its result in place, whatever `c` asks.
  await_applied(i, ticket);
  std::memcpy(result, own_.replies[slot].data, amo_type_size(args.type));
  give_reply_slot(slot);
}

// Runs an inline message on this rank's memory (the agent, or a poll-mode wait). Returns
// whether an atomic changed that memory: drain then wakes this rank's waiting threads (as the
// atomics of every path do), after telling the origin, which need not wait for that wake (a
// system call when somebody sleeps). Puts wake nobody, as cross-memory attach does not.
bool shm::serve_inline(am_slot_header& s) noexcept {
  const std::byte* at = own_.payload(s);
  reply_slot* replies = peer_at(s.source).page.replies;
  if (s.kind == kind_amo) {
    inline_amo a;
    std::memcpy(&a, at, sizeof a);
    std::uint64_t old = 0;
    detail::amo_apply(reinterpret_cast<void*>(a.addr), a.args, &old);
    if (a.reply != no_reply) std::memcpy(replies[a.reply].data, &old, sizeof old);
    return a.args.op != amo_op::load;
  }
  inline_head head;
  std::memcpy(&head, at, sizeof head);
  const std::byte* pieces = at + sizeof head;
  const std::byte* data = pieces + head.count * sizeof(inline_piece);
  std::byte* reply = head.reply != no_reply ? replies[head.reply].data : nullptr;
  for (std::uint32_t k = 0; k < head.count; ++k) {
    inline_piece piece;
    std::memcpy(&piece, pieces + k * sizeof piece, sizeof piece);
    auto* mine = reinterpret_cast<std::byte*>(piece.addr);
    if (s.kind == kind_put) {
      detail::copy_in(mine, data, piece.len);
      data += piece.len;
    } else {
      detail::copy_out(reply, mine, piece.len);
      reply += piece.len;
    }
  }
  return false;
}

std::uint32_t shm::take_reply_slot() {
  for (;;) {
    std::uint64_t free = replies_free_.load(std::memory_order_relaxed);
    while (free != 0) {
      const auto slot = static_cast<std::uint32_t>(std::countr_zero(free));
      if (replies_free_.compare_exchange_weak(free, free & (free - 1), std::memory_order_acquire)) {
        return slot;
      }
    }
    // Every slot waits for a reply (64 threads in gets or fetching atomics at once).
    oneside::detail::wait_until([&] { return replies_free_.load(std::memory_order_relaxed) != 0; });
  }
}

void shm::give_reply_slot(std::uint32_t slot) noexcept {
  replies_free_.fetch_or(std::uint64_t{1} << slot, std::memory_order_release);
}

void shm::await_applied(int i, std::uint64_t ticket) {
  if (is_applied(i, ticket)) return;
  oneside::detail::wait_until(own_.header->main_bell, [&] { return is_applied(i, ticket); });
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
  bool changed = false;  // inline messages changed this rank's memory: wake its waiters
  for (;;) {
    const std::uint64_t pos = h.am_dequeue.load(std::memory_order_relaxed);
    am_slot_header& s = own_.slot(pos);
    if (s.seq.load(std::memory_order_acquire) != pos + 1) break;
    oneside::detail::cross_process_acquire();
    if (s.kind == kind_handler) {
      t_serving = true;
      apply_message(s);
      t_serving = false;
    } else {
      changed = serve_inline(s) || changed;
    }
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
  // Whoever sleeps here waiting for a word an inline message changed learns of it.
  if (changed) oneside::detail::notify(h.main_bell);
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
