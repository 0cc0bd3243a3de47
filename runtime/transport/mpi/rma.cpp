// The MPI backend's data movement at the origin: put and get (contiguous and iovec, one code
// path per shape for both directions), the transfers by message to memory that is not
// attached, and atomics (shipped to the owner).
#include <cstring>
#include <type_traits>
#include <vector>

#include <oneside/runtime/copy.hpp>

#include "runtime/amo_local.hpp"
#include "transport/iov_match.hpp"
#include "transport/mpi/mpi_backend.hpp"
#include "transport/transport_table.hpp"

namespace oneside::transport {

using namespace mpi_detail;

namespace {

constexpr bool is_put(direction d) noexcept {
  return d == direction::put;
}

// An hindexed layout over byte pieces: absolute addresses (origin, with MPI_BOTTOM) or offsets
// from `origin` (target).
template <class Iov>
void make_layout(std::span<const Iov> pieces, std::uintptr_t origin, byte_layout& out,
                 std::string_view call) {
  std::vector<int> lens;
  std::vector<MPI_Aint> disps;
  for (const auto& p : pieces) {
    std::uintptr_t at;
    if constexpr (std::is_same_v<Iov, remote_iov>) {
      at = p.addr;
    } else {
      at = reinterpret_cast<std::uintptr_t>(p.base);
    }
    for (std::size_t done = 0; done < p.len; done += max_piece) {
      lens.push_back(static_cast<int>(std::min(max_piece, p.len - done)));
      disps.push_back(static_cast<MPI_Aint>(at + done - origin));
    }
  }
  check(MPI_Type_create_hindexed(static_cast<int>(lens.size()), lens.data(), disps.data(), MPI_BYTE,
                                 &out.type),
        call);
  check(MPI_Type_commit(&out.type), call);
}

// The lowest address of the non-empty pieces.
std::uintptr_t lowest_address(std::span<const remote_iov> remote) noexcept {
  std::uintptr_t lowest = UINTPTR_MAX;
  for (const auto& r : remote) {
    if (r.len > 0) lowest = std::min(lowest, r.addr);
  }
  return lowest;
}

// The local and remote pieces of an iovec transfer cut at each other's boundaries: one
// moved_piece per stretch that is contiguous on both sides.
template <class Iov>
std::vector<moved_piece> matched_pieces(std::span<const Iov> local,
                                        std::span<const remote_iov> remote) {
  std::vector<moved_piece> out;
  detail::match_streams(local, remote, [&](auto* l, std::uintptr_t r, std::size_t n) {
    out.push_back({r, const_cast<std::byte*>(l), n});
  });
  return out;
}

// `pieces` cut so that no piece exceeds max_piece, in groups of at most max_piece bytes: one
// message (and, for gets, one acknowledgement) each.
template <class F>
void in_messages(std::span<const moved_piece> pieces, F&& each_group) {
  std::vector<moved_piece> group;
  std::size_t bytes = 0;
  for (const moved_piece& p : pieces) {
    for (std::size_t done = 0; done < p.len; done += max_piece) {
      const std::size_t n = std::min(max_piece, p.len - done);
      if (bytes + n > max_piece && !group.empty()) {
        each_group(std::span<const moved_piece>(group));
        group.clear();
        bytes = 0;
      }
      group.push_back({p.addr + done, p.local + done, n});
      bytes += n;
    }
  }
  if (!group.empty()) each_group(std::span<const moved_piece>(group));
}

}  // namespace

void mpi::mpi_transfer(direction d, std::byte* local, std::size_t n, rank_t peer,
                       const mpi_target& t, std::string_view call) {
  for (std::size_t done = 0; done < n; done += max_piece) {
    const int k = static_cast<int>(std::min(max_piece, n - done));
    const MPI_Aint at = t.disp + static_cast<MPI_Aint>(done);
    check(on_window([&] {
            return is_put(d) ? MPI_Put(local + done, k, MPI_BYTE, t.rank, at, k, MPI_BYTE, t.win)
                             : MPI_Get(local + done, k, MPI_BYTE, t.rank, at, k, MPI_BYTE, t.win);
          }),
          call, peer);
  }
  note_issued(peer, t);
}

void mpi::send_get_batch(rank_t target) {
  peer_state& p = peer_of(target);
  std::vector<std::pair<moved_piece, std::optional<mpi_target>>> batch;
  {
    const std::lock_guard lock(p.batch_mutex);
    if (p.batch.empty()) return;
    batch.swap(p.batch);
    batched_.fetch_sub(batch.size(), std::memory_order_relaxed);
  }
  if (batch.size() == 1 && batch.front().second) {
    const auto& [piece, t] = batch.front();
    mpi_transfer(direction::get, piece.local, piece.len, target, *t, "get");
    return;
  }
  std::vector<moved_piece> pieces;
  pieces.reserve(batch.size());
  for (const auto& b : batch) pieces.push_back(b.first);
  by_message(direction::get, target, pieces, deferred());  // the flush awaits its ticket
  batched_get_messages_for_testing.fetch_add(1, std::memory_order_relaxed);
}

void mpi::note_issued(rank_t peer, const mpi_target& t) noexcept {
  if (t.group != nullptr) {
    t.group->issued.fetch_add(1, std::memory_order_release);
  } else {
    peer_of(peer).dynamic_issued.fetch_add(1, std::memory_order_release);
    dynamic_issued_.fetch_add(1, std::memory_order_release);
  }
}

void mpi::track(completion& c, rank_t target, MPI_Request req) {
  c.entries().push_back(
      {target, make_ticket(kind_request, reinterpret_cast<std::uintptr_t>(new MPI_Request(req)))});
}

bool mpi::capture_reply(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src) {
  reply_capture* cap = t_capture;
  if (cap == nullptr || cap->owner != this) return false;
  if (dst != cap->source) {
    cap->touched_others = true;
    return false;
  }
  const reply_piece p{addr, src.size()};
  const auto* pb = reinterpret_cast<const std::byte*>(&p);
  cap->bytes.insert(cap->bytes.end(), pb, pb + sizeof p);
  cap->bytes.insert(cap->bytes.end(), src.begin(), src.end());
  ++cap->pieces;
  return true;
}

template <direction D>
void mpi::contiguous(rank_t peer, std::uintptr_t addr, std::byte* local, std::size_t n,
                     completion* c, std::string_view call) {
  check_rank(peer, call);
  if (n == 0) return;
  if constexpr (is_put(D)) {
    if (capture_reply(peer, addr, std::span<const std::byte>(local, n))) return;
  }
  const std::optional<mpi_target> t = locate(peer, addr, n);
  if constexpr (!is_put(D)) {
    // Due at the next flush anyway: gathered, so that the many small gets one flush completes
    // (fibers' rgets, a loop of window gets) cost one round trip, not one each.
    if (c == deferred() && opts_.get_batch && n <= batch_piece && !in_handler()) {
      peer_state& p = peer_of(peer);
      std::size_t queued = 0;
      {
        const std::lock_guard lock(p.batch_mutex);
        p.batch.push_back({moved_piece{addr, local, n}, t});
        queued = p.batch.size();
        batched_.fetch_add(1, std::memory_order_release);
      }
      if (queued >= batch_pieces) send_get_batch(peer);  // bounds the message
      return;
    }
  }
  if (!t) {
    const moved_piece one{addr, local, n};
    by_message(D, peer, std::span(&one, 1), c);
    return;
  }
  if (c == deferred()) {
    mpi_transfer(D, local, n, peer, *t, call);
    return;
  }
  if (c != nullptr && n <= max_piece) {
    MPI_Request req = MPI_REQUEST_NULL;
    const int k = static_cast<int>(n);
    check(on_window([&] {
            return is_put(D)
                       ? MPI_Rput(local, k, MPI_BYTE, t->rank, t->disp, k, MPI_BYTE, t->win, &req)
                       : MPI_Rget(local, k, MPI_BYTE, t->rank, t->disp, k, MPI_BYTE, t->win, &req);
          }),
          call, peer);
    note_issued(peer, *t);
    track(*c, peer, req);
    return;
  }
  if (is_put(D) && n <= stage_limit) {
    // Locally complete at once: the bytes travel from a copy, freed at the next flush.
    peer_state& p = peer_of(peer);
    auto copy = std::make_unique<std::byte[]>(n);
    oneside::detail::copy_bytes(copy.get(), local, n);
    std::lock_guard lock(p.stage_mutex);
    mpi_transfer(D, copy.get(), n, peer, *t, call);
    p.staged.push_back(std::move(copy));
    return;
  }
  mpi_transfer(D, local, n, peer, *t, call);
  check(on_window([&] { return MPI_Win_flush_local(t->rank, t->win); }), call, peer);
}

template <direction D, class Iov>
void mpi::scattered(rank_t peer, std::span<const Iov> local, std::span<const remote_iov> remote,
                    completion* c, std::string_view call) {
  check_rank(peer, call);
  const std::size_t n = detail::stream_bytes(local);
  ONESIDE_CHECK(n == detail::stream_bytes(remote), error_class::arg, {.call = call, .target = peer},
                "local and remote byte counts differ");
  if (n == 0) return;
  if (remote.size() == 1 && local.size() == 1) {
    contiguous<D>(peer, remote[0].addr, const_cast<std::byte*>(local[0].base), n, c, call);
    return;
  }
  // Inside a handler, a put to the message's source travels in its acknowledgement.
  const bool reply = is_put(D) && in_handler() && peer == t_capture->source;
  // MPI reaches the pieces through one group window holding them all, or through the
  // dynamic window when each is known to be attached; messages carry them otherwise.
  const std::uintptr_t lowest = lowest_address(remote);
  std::uintptr_t highest = lowest;
  for (const auto& r : remote) {
    if (r.len > 0) highest = std::max(highest, r.addr + r.len);
  }
  std::optional<mpi_target> t;
  if (!reply) {
    t = locate(peer, lowest, highest - lowest);
    if (t && t->group == nullptr && !all_reachable(peer, remote)) t.reset();
    if (!t && all_reachable(peer, remote)) {
      t = mpi_target{win_, peer, static_cast<MPI_Aint>(lowest), nullptr};
    }
    if (!t) {
      by_message(D, peer, matched_pieces(local, remote), c);
      return;
    }
  }
  if (is_put(D) && in_handler() && !reply) t_capture->touched_others = true;
  if (is_put(D) && ((c == nullptr && n <= stage_limit) || reply)) {
    // The bytes gathered into one copy: locally complete at once.
    auto copy = std::make_unique<std::byte[]>(n);
    std::size_t at = 0;
    for (const auto& l : local) {
      oneside::detail::copy_bytes(copy.get() + at, l.base, l.len);
      at += l.len;
    }
    if (reply) {
      at = 0;
      for (const auto& r : remote) {
        capture_reply(peer, r.addr, std::span<const std::byte>(copy.get() + at, r.len));
        at += r.len;
      }
      return;
    }
    byte_layout target;
    make_layout(remote, lowest, target, call);
    peer_state& p = peer_of(peer);
    std::lock_guard lock(p.stage_mutex);
    check(on_window([&] {
            return MPI_Put(copy.get(), static_cast<int>(n), MPI_BYTE, t->rank, t->disp, 1,
                           target.type, t->win);
          }),
          call, peer);
    note_issued(peer, *t);
    p.staged.push_back(std::move(copy));
    return;
  }
  byte_layout target;
  make_layout(remote, lowest, target, call);
  byte_layout origin;
  make_layout(local, 0, origin, call);
  transfer_layouts(D, peer, *t, origin, target, c, call);
}

template void mpi::contiguous<direction::put>(rank_t, std::uintptr_t, std::byte*, std::size_t,
                                              completion*, std::string_view);
template void mpi::contiguous<direction::get>(rank_t, std::uintptr_t, std::byte*, std::size_t,
                                              completion*, std::string_view);
template void mpi::scattered<direction::put>(rank_t, std::span<const const_iov>,
                                             std::span<const remote_iov>, completion*,
                                             std::string_view);
template void mpi::scattered<direction::get>(rank_t, std::span<const mutable_iov>,
                                             std::span<const remote_iov>, completion*,
                                             std::string_view);

void mpi::transfer_layouts(direction d, rank_t peer, const mpi_target& t, const byte_layout& origin,
                           const byte_layout& target, completion* c, std::string_view call) {
  note_issued(peer, t);
  if (c != nullptr && c != deferred()) {
    MPI_Request req = MPI_REQUEST_NULL;
    check(on_window([&] {
            return is_put(d) ? MPI_Rput(MPI_BOTTOM, 1, origin.type, t.rank, t.disp, 1, target.type,
                                        t.win, &req)
                             : MPI_Rget(MPI_BOTTOM, 1, origin.type, t.rank, t.disp, 1, target.type,
                                        t.win, &req);
          }),
          call, peer);
    track(*c, peer, req);
    return;
  }
  check(on_window([&] {
          return is_put(d)
                     ? MPI_Put(MPI_BOTTOM, 1, origin.type, t.rank, t.disp, 1, target.type, t.win)
                     : MPI_Get(MPI_BOTTOM, 1, origin.type, t.rank, t.disp, 1, target.type, t.win);
        }),
        call, peer);
  if (c == nullptr) {
    check(on_window([&] { return MPI_Win_flush_local(t.rank, t.win); }), call, peer);
  }
}

// ---- memory served by messages ----------------------------------------------------------
//
// Memory that is not attached to the job's window (every exposure of memory the runtime did
// not allocate, and chunks the engine would not attach) is reached by messages: the owner's
// progress thread (or its waits) copies the bytes in, or sends them back in the
// acknowledgement. A transfer goes this way until the target says, in an acknowledgement,
// that the range is attached; from then on MPI_Put/MPI_Get reach it.

void mpi::by_message(direction d, rank_t peer, std::span<const moved_piece> pieces, completion* c) {
  if (in_handler()) {
    if (is_put(d)) t_capture->touched_others = true;
    t_capture->messaged.push_back(peer);
  }
  std::uint64_t ticket = 0;
  in_messages(pieces, [&](std::span<const moved_piece> group) {
    // A put carries (address, length) of each piece, then their bytes; a get carries
    // (address, length, where the bytes go here) of each.
    const std::uint64_t count = group.size();
    std::size_t bytes = sizeof(am_header) + sizeof count;
    for (const moved_piece& p : group) {
      bytes += is_put(d) ? sizeof(put_piece) + p.len : sizeof(get_piece);
    }
    auto buf = std::make_unique<std::byte[]>(bytes);
    std::byte* at = buf.get() + sizeof(am_header);
    std::memcpy(at, &count, sizeof count);
    at += sizeof count;
    for (const moved_piece& p : group) {
      if (is_put(d)) {
        const put_piece head{p.addr, p.len};
        std::memcpy(at, &head, sizeof head);
        at += sizeof head;
      } else {
        const get_piece head{p.addr, p.len, reinterpret_cast<std::uintptr_t>(p.local)};
        std::memcpy(at, &head, sizeof head);
        at += sizeof head;
      }
    }
    if (is_put(d)) {
      for (const moved_piece& p : group) {
        oneside::detail::copy_bytes(at, p.local, p.len);
        at += p.len;
      }
    }
    ticket = send_numbered(peer, 0, is_put(d) ? kind_put : kind_get, std::move(buf), bytes);
  });
  // A put's bytes travel in copies: it is locally complete already. A get is complete once its
  // acknowledgement brought the bytes.
  if (c == nullptr) {
    if (!is_put(d)) await_ticket(peer, ticket, in_handler());
  } else if (c != deferred()) {
    c->entries().push_back({peer, make_ticket(kind_am, ticket)});
  }
}

void mpi::amo(rank_t dst, std::uintptr_t addr, const amo_args& args, void* result, completion* c) {
  check_rank(dst, "amo");
  detail::check_amo(dst, addr, args);
  // The owner applies it with a CPU atomic, like every other path to that memory.
  detail::send_amo(*this, dst, addr, args, result, c);
}

}  // namespace oneside::transport
