// The MPI backend's completion: MPI_Win_flush(_local)(_all) for one-sided operations (and the
// staged copies they free), every acknowledgement of messages sent for active messages and
// transfers by message, MPI_Test for the requests completions track.
#include <algorithm>
#include <atomic>
#include <vector>

#include <oneside/runtime/wait.hpp>

#include "transport/mpi/mpi_backend.hpp"

namespace oneside::transport {

using namespace mpi_detail;

void mpi::release_staged(rank_t target, std::vector<std::unique_ptr<std::byte[]>>& out) {
  peer_state& p = peer_of(target);
  std::lock_guard lock(p.stage_mutex);
  for (auto& b : p.staged) out.push_back(std::move(b));
  p.staged.clear();
}

void mpi::flush_groups(rank_t r, bool local) {
  // Under the peer's reach lock, so a group window being freed (free_group) waits.
  const auto one = [&](rank_t peer) {
    peer_state& p = peer_of(peer);
    const std::lock_guard lock(p.reach_mutex);
    for (const auto& g : p.groups) {
      const std::uint64_t issued = g->issued.load(std::memory_order_acquire);
      std::uint64_t done = g->flushed.load(std::memory_order_relaxed);
      if (issued == done) continue;
      check(on_window([&] {
              return local ? MPI_Win_flush_local(g->rank, g->win) : MPI_Win_flush(g->rank, g->win);
            }),
            local ? "flush_local" : "flush", peer);
      if (local) continue;  // only a flush completes them at the target
      // Everything issued before `issued` was read is complete now (never lower the mark).
      while (done < issued &&
             !g->flushed.compare_exchange_weak(done, issued, std::memory_order_relaxed)) {
      }
    }
  };
  if (r != no_rank) {
    one(r);
    return;
  }
  for (rank_t peer = 0; peer < size_; ++peer) one(peer);
}

namespace {
// Raises `mark` to `through` (never lowers it).
void raise_mark(std::atomic<std::uint64_t>& mark, std::uint64_t through) noexcept {
  std::uint64_t cur = mark.load(std::memory_order_relaxed);
  while (cur < through && !mark.compare_exchange_weak(cur, through, std::memory_order_relaxed)) {
  }
}
}  // namespace

void mpi::flush_dynamic(rank_t r, bool local) {
  if (r != no_rank) {
    peer_state& p = peer_of(r);
    const std::uint64_t issued = p.dynamic_issued.load(std::memory_order_acquire);
    if (issued == p.dynamic_flushed.load(std::memory_order_relaxed)) return;
    check(on_window([&] { return local ? MPI_Win_flush_local(r, win_) : MPI_Win_flush(r, win_); }),
          local ? "flush_local" : "flush", r);
    if (!local) raise_mark(p.dynamic_flushed, issued);
    return;
  }
  const std::uint64_t issued = dynamic_issued_.load(std::memory_order_acquire);
  if (issued == dynamic_flushed_.load(std::memory_order_relaxed)) return;
  // What each peer had issued before the flush: complete once it returns.
  std::vector<std::uint64_t> before(static_cast<std::size_t>(size_));
  for (rank_t q = 0; q < size_; ++q) {
    before[static_cast<std::size_t>(q)] = peer_of(q).dynamic_issued.load(std::memory_order_acquire);
  }
  check(on_window([&] { return local ? MPI_Win_flush_local_all(win_) : MPI_Win_flush_all(win_); }),
        local ? "flush_local_all" : "flush_all");
  if (local) return;
  raise_mark(dynamic_flushed_, issued);
  for (rank_t q = 0; q < size_; ++q) {
    raise_mark(peer_of(q).dynamic_flushed, before[static_cast<std::size_t>(q)]);
  }
}

void mpi::flush(rank_t target) {
  check_rank(target, "flush");
  send_get_batch(target);
  std::vector<std::unique_ptr<std::byte[]>> copies;
  release_staged(target, copies);  // issued before this flush: it completes them
  flush_dynamic(target, false);
  flush_groups(target, false);
  await_acks(target);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void mpi::flush_all() {
  check_rank(rank_, "flush_all");
  send_get_batches();
  std::vector<std::unique_ptr<std::byte[]>> copies;
  for (rank_t r = 0; r < size_; ++r) release_staged(r, copies);
  flush_dynamic(no_rank, false);
  flush_groups(no_rank, false);
  for (rank_t r = 0; r < size_; ++r) await_acks(r);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void mpi::flush_local(rank_t target) {
  check_rank(target, "flush_local");
  send_get_batch(target);
  std::vector<std::unique_ptr<std::byte[]>> copies;
  release_staged(target, copies);
  flush_dynamic(target, true);
  flush_groups(target, true);
  await_acks(target);  // gets by message complete locally when their bytes arrive
}

void mpi::flush_local_all() {
  check_rank(rank_, "flush_local_all");
  send_get_batches();
  std::vector<std::unique_ptr<std::byte[]>> copies;
  for (rank_t r = 0; r < size_; ++r) release_staged(r, copies);
  flush_dynamic(no_rank, true);
  flush_groups(no_rank, true);
  for (rank_t r = 0; r < size_; ++r) await_acks(r);
}

bool mpi::is_complete(const completion::pending& e) {
  const std::uint64_t kind = e.ticket >> kind_shift;
  const std::uint64_t value = e.ticket & ticket_mask;
  if (kind == kind_am) {
    if (peer_of(e.target).acked.load(std::memory_order_acquire) >= value) return true;
    poll();
    return peer_of(e.target).acked.load(std::memory_order_acquire) >= value;
  }
  auto* req = reinterpret_cast<MPI_Request*>(static_cast<std::uintptr_t>(value));
  int done = 0;
  check(on_window([&] { return MPI_Test(req, &done, MPI_STATUS_IGNORE); }), "test", e.target);
  if (done != 0) delete req;
  return done != 0;
}

bool mpi::test(completion& c) {
  return test_entries(c);
}

void mpi::wait(completion& c) {
  wait_entries(c);
}

}  // namespace oneside::transport
