// The MPI backend's messages: active messages and their acknowledgements (which carry small
// results back), the target side of transfers by message, wake-ups, and the dispatch loop the
// progress thread and the rank's waits run.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include <oneside/runtime/copy.hpp>
#include <oneside/runtime/wait.hpp>

#include "transport/am_registry.hpp"
#include "transport/mpi/mpi_backend.hpp"
#include "transport/piece_copy.hpp"

namespace oneside::transport {

using namespace mpi_detail;

void mpi::send(rank_t dst, int tag, std::unique_ptr<std::byte[]> buf, std::size_t bytes) {
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Isend(buf.get(), static_cast<int>(bytes), MPI_BYTE, dst, tag, am_comm_, &req),
        "am_send", dst);
  std::lock_guard lock(sends_mutex_);
  send_requests_.push_back(req);
  send_buffers_.push_back(std::move(buf));
}

void mpi::reap_sends() {
  std::lock_guard lock(sends_mutex_);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < send_requests_.size(); ++i) {
    int done = 0;
    MPI_Test(&send_requests_[i], &done, MPI_STATUS_IGNORE);
    if (done == 0) {
      send_requests_[kept] = send_requests_[i];
      send_buffers_[kept] = std::move(send_buffers_[i]);
      ++kept;
    }
  }
  send_requests_.resize(kept);
  send_buffers_.resize(kept);
}

void mpi::am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
                  completion* c) {
  check_rank(dst, "am_send");
  detail::check_am_send(dst, handler, payload.size(), caps_.max_am_payload);
  const std::size_t bytes = sizeof(am_header) + payload.size();
  auto buf = std::make_unique<std::byte[]>(bytes);
  oneside::detail::copy_bytes(buf.get() + sizeof(am_header), payload.data(), payload.size());
  const std::uint64_t ticket = send_numbered(dst, handler, kind_handler, std::move(buf), bytes);
  if (c != nullptr) c->entries().push_back({dst, make_ticket(kind_am, ticket)});
}

std::uint64_t mpi::send_numbered(rank_t dst, std::uint32_t handler, message_kind kind,
                                 std::unique_ptr<std::byte[]> buf, std::size_t bytes) {
  peer_state& p = peer_of(dst);
  const std::lock_guard lock(p.send_mutex);
  const std::uint64_t ticket = p.issued.load(std::memory_order_relaxed) + 1;
  const am_header h{handler, kind, ticket};
  std::memcpy(buf.get(), &h, sizeof h);
  send(dst, tag_am, std::move(buf), bytes);
  p.issued.store(ticket, std::memory_order_release);
  return ticket;
}

range mpi::serve_put(std::span<const std::byte> payload) {
  range hint;
  std::uint64_t count = 0;
  std::memcpy(&count, payload.data(), sizeof count);
  const std::byte* head = payload.data() + sizeof count;
  const std::byte* data = head + count * sizeof(put_piece);
  for (std::uint64_t i = 0; i < count; ++i) {
    put_piece p;
    std::memcpy(&p, head + i * sizeof p, sizeof p);
    detail::copy_in(reinterpret_cast<void*>(p.addr), data, p.len);
    data += p.len;
    if (i == 0) hint = attached_range(p.addr, p.len);
  }
  // The rank's threads waiting on this memory need not wait for their next look.
  oneside::detail::notify(local_doorbell());
  return hint;
}

void mpi::serve_get(rank_t source, std::uint64_t ticket, std::span<const std::byte> payload) {
  std::uint64_t count = 0;
  std::memcpy(&count, payload.data(), sizeof count);
  const auto piece_at = [&](std::uint64_t i) {
    get_piece g;
    std::memcpy(&g, payload.data() + sizeof count + i * sizeof g, sizeof g);
    return g;
  };
  std::size_t reply_bytes = 0;
  for (std::uint64_t i = 0; i < count; ++i) reply_bytes += sizeof(reply_piece) + piece_at(i).len;
  const range hint = count > 0 ? attached_range(piece_at(0).addr, piece_at(0).len) : range{};
  send_ack(source, ticket, static_cast<std::uint32_t>(count), reply_bytes, hint,
           [&](std::byte* at) {
             for (std::uint64_t i = 0; i < count; ++i) {
               const get_piece g = piece_at(i);
               const reply_piece rp{g.origin, g.len};
               std::memcpy(at, &rp, sizeof rp);
               at += sizeof rp;
               detail::copy_out(at, reinterpret_cast<const void*>(g.addr), g.len);
               at += g.len;
             }
           });
}

void mpi::serve_table(rank_t source, std::uint64_t ticket, std::span<const std::byte> payload) {
  table_request req;
  std::memcpy(&req, payload.data(), sizeof req);
  const std::vector<range> mine = exposed_ranges();
  const std::uint64_t count = mine.size();
  const std::size_t shown = std::min<std::size_t>(mine.size(), req.capacity);
  const std::size_t bytes = 2 * sizeof(reply_piece) + sizeof count + shown * sizeof(range);
  send_ack(source, ticket, 2, bytes, range{}, [&](std::byte* at) {
    const reply_piece c{req.count_at, sizeof count};
    std::memcpy(at, &c, sizeof c);
    at += sizeof c;
    std::memcpy(at, &count, sizeof count);
    at += sizeof count;
    const reply_piece r{req.origin, shown * sizeof(range)};
    std::memcpy(at, &r, sizeof r);
    at += sizeof r;
    if (shown > 0) std::memcpy(at, mine.data(), shown * sizeof(range));
  });
}

template <class WriteReplies>
void mpi::send_ack(rank_t source, std::uint64_t ticket, std::uint32_t pieces,
                   std::size_t reply_bytes, range hint, WriteReplies&& write_replies) {
  const bool reach = hint.hi != 0;
  const std::size_t bytes = sizeof(ack_header) + reply_bytes + (reach ? sizeof hint : 0);
  auto buf = std::make_unique<std::byte[]>(bytes);
  const ack_header ack{ticket, pieces, reach ? ack_reach : 0};
  std::memcpy(buf.get(), &ack, sizeof ack);
  write_replies(buf.get() + sizeof ack);
  if (reach) std::memcpy(buf.get() + sizeof ack + reply_bytes, &hint, sizeof hint);
  send(source, tag_ack, std::move(buf), bytes);
}

void mpi::take_ack(rank_t source, std::span<const std::byte> msg) {
  ack_header h;
  std::memcpy(&h, msg.data(), sizeof h);
  const std::byte* at = msg.data() + sizeof h;
  for (std::uint32_t i = 0; i < h.pieces; ++i) {
    reply_piece rp;
    std::memcpy(&rp, at, sizeof rp);
    at += sizeof rp;
    oneside::detail::copy_bytes(reinterpret_cast<void*>(rp.addr), at, rp.len);
    at += rp.len;
  }
  if ((h.flags & ack_reach) != 0) {
    range r;
    std::memcpy(&r, at, sizeof r);
    peer_state& p = peer_of(source);
    const std::lock_guard lock(p.reach_mutex);
    p.reachable.insert(r);
  }
  peer_of(source).acked.store(h.ticket, std::memory_order_release);
  oneside::detail::notify(local_doorbell());
}

void mpi::await_ticket(rank_t target, std::uint64_t ticket, bool from_handler) {
  peer_state& p = peer_of(target);
  if (p.acked.load(std::memory_order_acquire) >= ticket) return;
  if (!from_handler) {
    oneside::detail::wait_until(local_doorbell(), [&] {
      poll();
      return p.acked.load(std::memory_order_acquire) >= ticket;
    });
    return;
  }
  std::vector<std::byte> rx;
  oneside::detail::backoff pause;
  while (p.acked.load(std::memory_order_acquire) < ticket) {
    MPI_Status st;
    std::size_t bytes = 0;
    if (receive(target, tag_ack, rx, st, bytes)) {
      take_ack(target, std::span<const std::byte>(rx.data(), bytes));
    } else {
      pause.pause();
    }
  }
}

bool mpi::receive(int source, int tag, std::vector<std::byte>& into, MPI_Status& st,
                  std::size_t& bytes) {
  int flag = 0;
  MPI_Message msg = MPI_MESSAGE_NULL;
  check(MPI_Improbe(source, tag, am_comm_, &flag, &msg, &st), "progress", source);
  if (flag == 0) return false;
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  bytes = static_cast<std::size_t>(count);
  into.resize(std::max<std::size_t>(bytes, 1));
  check(MPI_Mrecv(into.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "progress", source);
  return true;
}

void mpi::handle(rank_t source, int tag, std::span<const std::byte> msg) {
  if (tag == tag_wake) {
    oneside::detail::notify(local_doorbell());
    return;
  }
  if (tag == tag_ack) {
    take_ack(source, msg);
    return;
  }
  am_header h;
  std::memcpy(&h, msg.data(), sizeof h);
  const std::span<const std::byte> payload = msg.subspan(sizeof h);
  if (h.kind == kind_get) {
    serve_get(source, h.ticket, payload);
    return;
  }
  if (h.kind == kind_table) {
    serve_table(source, h.ticket, payload);
    return;
  }
  reply_capture cap{this, source, {}, 0, false, {}};
  range hint;
  if (h.kind == kind_put) {
    hint = serve_put(payload);
  } else {
    t_capture = &cap;
    detail::run_am_handler(front_, rank_, source, h.handler, payload);
    t_capture = nullptr;
    // What the handler moved elsewhere is visible before the sender learns it ran.
    if (cap.touched_others) check(on_window([&] { return MPI_Win_flush_all(win_); }), "am_send");
    for (rank_t r : cap.messaged)
      await_ticket(r, peer_of(r).issued.load(std::memory_order_acquire), true);
  }
  send_ack(source, h.ticket, cap.pieces, cap.bytes.size(), hint, [&](std::byte* at) {
    oneside::detail::copy_bytes(at, cap.bytes.data(), cap.bytes.size());
  });
}

bool mpi::poll() noexcept {
  std::unique_lock lock(poll_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  bool any = false;
  try {
    for (int i = 0; i < 64; ++i) {
      MPI_Status st;
      std::size_t bytes = 0;
      {
        const std::unique_lock quiet(window_mutex_, std::try_to_lock);
        if (!quiet.owns_lock()) return any;
        if (!receive(MPI_ANY_SOURCE, MPI_ANY_TAG, rx_, st, bytes)) break;
      }
      handle(st.MPI_SOURCE, st.MPI_TAG, std::span<const std::byte>(rx_.data(), bytes));
      any = true;
    }
    const std::unique_lock quiet(window_mutex_, std::try_to_lock);
    if (!quiet.owns_lock()) return any;
    reap_sends();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oneside: rank %d: MPI progress failed: %s; aborting\n", rank_, e.what());
    std::abort();
  }
  return any;
}

void mpi::wake(rank_t r) noexcept {
  if (r < 0 || r >= size_ || closed_.load(std::memory_order_relaxed)) return;
  try {
    send(r, tag_wake, nullptr, 0);
  } catch (const std::exception&) {
    // A lost wake-up only delays the sleeper until its next timeout.
  }
}

void mpi::wake(std::span<const rank_t> ranks) noexcept {
  for (rank_t r : ranks) wake(r);
}

}  // namespace oneside::transport
