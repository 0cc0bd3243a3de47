// The step protocol and the dissemination barrier of coll_engine.hpp.
#include "collectives/coll_engine.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <oneside/runtime/wait.hpp>

#include "error/check.hpp"

namespace oneside::detail {

coll_engine::coll_engine(transport::backend& t, std::size_t slot_bytes, std::size_t slots,
                         rank_t rank, std::vector<rank_t> world_ranks, barrier_kind barrier)
    : transport_(t),
      slot_bytes_((std::max<std::size_t>(slot_bytes, 4096) + 63) & ~std::size_t{63}),
      slots_(std::max<std::size_t>(slots, 2)),
      rank_(rank),
      size_(static_cast<int>(world_ranks.size())),
      world_ranks_(std::move(world_ranks)),
      barrier_kind_(barrier) {
  for (int q = 0; q < size_; ++q) {
    if (q != rank_) others_.push_back(world_ranks_[static_cast<std::size_t>(q)]);
  }
  // A one-member team needs no area at all.
  if (size_ > 1) {
    own_ = transport_.allocate_segment(area_bytes());
    new (own_.base()) area{};
  }
}

coll_engine::~coll_engine() = default;

std::uintptr_t coll_engine::area_address() const noexcept {
  return own_.address();
}

void coll_engine::connect(std::span<const std::uint64_t> areas) {
  peers_.clear();
  if (size_ == 1) return;
  const std::size_t bytes = area_bytes();
  for (int q = 0; q < size_; ++q) {
    const rank_t w = world_ranks_[static_cast<std::size_t>(q)];
    transport::pinned p =
        transport_.pin(w, static_cast<std::uintptr_t>(areas[static_cast<std::size_t>(q)]), bytes);
    ONESIDE_CHECK(static_cast<bool>(p), error_class::intern, {.call = "team", .target = w},
                  "collectives need load/store access to every member's memory; world rank " +
                      std::to_string(w) + " is not reachable from here");
    peers_.push_back(std::move(p));
  }
}

void coll_engine::wake_others() noexcept {
  transport_.wake(std::span<const rank_t>(others_));
}

void coll_engine::barrier() {
  cross_process_release();  // what this thread did before is published by arriving
  if (size_ == 1) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  const std::uint64_t epoch = ++barrier_epoch_;
  if (barrier_kind_ == barrier_kind::central) {
    central_barrier(epoch);
  } else {
    dissemination_barrier(epoch);
  }
}

void coll_engine::central_barrier(std::uint64_t epoch) {
  area& root = area_of(0);
  const auto n = static_cast<std::uint64_t>(size_);
  // Counters only grow: epoch e is complete once e*n arrivals happened.
  if (root.arrived.value.fetch_add(1, std::memory_order_acq_rel) + 1 == epoch * n) {
    cross_process_acquire();  // the last to arrive has seen everyone arrive
    root.release.value.store(epoch, std::memory_order_release);
    wake_others();
    return;
  }
  std::atomic<std::uint64_t>& r = root.release.value;
  wait_until([&] { return r.load(std::memory_order_acquire) >= epoch; });
}

void coll_engine::dissemination_barrier(std::uint64_t epoch) {
  area& mine = area_of(rank_);
  for (int k = 0, dist = 1; dist < size_; ++k, dist *= 2) {
    const rank_t partner = (rank_ + dist) % size_;
    area_of(partner).barrier[k].value.store(epoch, std::memory_order_release);
    transport_.wake(world_ranks_[static_cast<std::size_t>(partner)]);
    std::atomic<std::uint64_t>& f = mine.barrier[k].value;
    wait_until([&] { return f.load(std::memory_order_acquire) >= epoch; });
  }
}

std::byte* coll_engine::acquire_slot(std::uint64_t s, std::size_t bytes) {
  if (s >= slots_ && all_consumed_ < s - slots_) {
    const std::uint64_t need = s - slots_;
    auto everyone_done = [&] {
      for (int q = 0; q < size_; ++q) {
        if (area_of(q).consumed.value.load(std::memory_order_acquire) < need) return false;
      }
      return true;
    };
    if (!everyone_done()) {
      flush_wake();
      wait_until(everyone_done);
    }
    std::uint64_t least = UINT64_MAX;
    for (int q = 0; q < size_; ++q) {
      least = std::min(least, area_of(q).consumed.value.load(std::memory_order_acquire));
    }
    all_consumed_ = least;
  }
  return slot_of(rank_, s) + data_offset(bytes);
}

void coll_engine::publish(std::uint64_t s) {
  cross_process_release();
  step_word(rank_, s).store(s, std::memory_order_release);
  wake_due_ = true;
}

void coll_engine::publish(std::uint64_t s, const void* data, std::size_t bytes) {
  std::byte* slot = acquire_slot(s, bytes);
  if (bytes > 0) std::memcpy(slot, data, bytes);
  publish(s);
}

const std::byte* coll_engine::peer_slot(rank_t q, std::uint64_t s, std::size_t bytes) {
  std::atomic<std::uint64_t>& w = step_word(q, s);
  if (w.load(std::memory_order_acquire) < s) {
    flush_wake();  // whoever waits for this member must not sleep through our wait
    wait_until([&] { return w.load(std::memory_order_acquire) >= s; });
  }
  return slot_of(q, s) + data_offset(bytes);
}

void coll_engine::finish(std::uint64_t s) {
  area_of(rank_).consumed.value.store(s, std::memory_order_release);
  wake_due_ = true;
  flush_wake();
}

}  // namespace oneside::detail
