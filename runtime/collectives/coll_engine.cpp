// The step protocol and the barriers of coll_engine.hpp, in pull and push mode.
#include "collectives/coll_engine.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include <oneside/runtime/copy.hpp>
#include <oneside/runtime/wait.hpp>

#include "runtime/check.hpp"

namespace oneside::detail {
namespace {

// Push mode keeps every producer's ring at every member: slots of at most this size ...
constexpr std::size_t push_slot_max = std::size_t{64} << 10;
// ... and rings of at most this size in all (n × K slots), but slots of at least 4 KiB.
constexpr std::size_t push_ring_budget = std::size_t{8} << 20;
constexpr std::size_t slot_min = 4096;

// Push mode iff some member's memory is not load/store reachable from here. node_ranks() is
// the same set on each of its ranks, so every member comes to the same answer.
bool needs_push(transport::backend& t, const std::vector<rank_t>& members) {
  const std::span<const rank_t> node = t.node_ranks();
  return std::any_of(members.begin(), members.end(),
                     [&](rank_t w) { return !std::binary_search(node.begin(), node.end(), w); });
}

// A step pushed to a member this process cannot reach, as one active message: the payload
// bytes, then the step word (release), then a wake-up of the member's waiters — what put,
// flush, amo store, flush and wake do in three round trips.
struct push_header {
  std::uint64_t data_addr;
  std::uint64_t word_addr;
  std::uint64_t step;
  std::uint64_t bytes;
};

void apply_push(transport::backend& t, rank_t, std::span<const std::byte> payload) {
  push_header h;
  std::memcpy(&h, payload.data(), sizeof h);
  if (h.bytes > 0) {
    std::memcpy(reinterpret_cast<void*>(h.data_addr), payload.data() + sizeof h, h.bytes);
  }
  std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(h.word_addr))
      .store(h.step, std::memory_order_release);
  t.wake(t.rank());
}

transport::am_handler_id push_handler() {
  static const transport::am_handler_id id =
      transport::register_am_handler("oneside.coll.push", &apply_push);
  return id;
}

}  // namespace

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
  if (size_ == 1) return;
  push_ = needs_push(transport_, world_ranks_);
  if (push_) {
    const std::size_t ring = static_cast<std::size_t>(size_) * slots_;
    const std::size_t fit = std::max(slot_min, push_ring_budget / ring);
    slot_bytes_ = std::min({slot_bytes_, push_slot_max, fit}) & ~std::size_t{63};
    const auto n = static_cast<std::size_t>(size_);
    remote_.assign(n, 0);
    written_.assign(n * slots_, 0);
    pushed_.assign(n, 0);
    read_.assign(n, 0);
    reported_.assign(n, 0);
    staged_.assign(slots_, 0);
    dirty_.assign(n, 0);
    targets_.reserve(n);
    dirty_world_.reserve(n);
  }
  if (push_) (void)push_handler();  // registered before any member may push to this one
  own_ = transport_.allocate_segment(area_bytes());
  new (own_.base()) area{};
  if (push_) {
    for (rank_t q = 0; q < size_; ++q) new (&consumed_by(q)) std::atomic<std::uint64_t>(0);
  }
}

coll_engine::~coll_engine() {
  if (!push_) return;
  // Readers report at the end of every step they read, and may do so after this member left
  // the collective: wait for the last reports before the area goes.
  wait_until([&] {
    for (rank_t q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      if (consumed_by(q).load(std::memory_order_acquire) < pushed_[static_cast<std::size_t>(q)]) {
        return false;
      }
    }
    return true;
  });
}

std::uintptr_t coll_engine::area_address() const noexcept {
  return own_.address();
}

void coll_engine::connect(std::span<const std::uint64_t> areas) {
  peers_.clear();
  if (size_ == 1) return;
  if (push_) {
    remote_.assign(areas.begin(), areas.end());
    // Words of members this process cannot reach are updated by their owner, which wakes
    // its own waiters (transport::backend::amo): nothing to flush or wake for them.
    owner_wakes_.assign(static_cast<std::size_t>(size_), 0);
    for (rank_t q = 0; q < size_; ++q) {
      const auto i = static_cast<std::size_t>(q);
      owner_wakes_[i] = q != rank_ && transport_.direct(world_of(q), remote_[i],
                                                        sizeof(std::uint64_t)) == nullptr;
    }
    return;
  }
  const std::size_t bytes = area_bytes();
  for (int q = 0; q < size_; ++q) {
    const rank_t w = world_ranks_[static_cast<std::size_t>(q)];
    transport::pinned p =
        transport_.pin(w, static_cast<std::uintptr_t>(areas[static_cast<std::size_t>(q)]), bytes);
    ONESIDE_CHECK(static_cast<bool>(p), error_class::intern, {.call = "team", .target = w},
                  "the collective area of world rank " + std::to_string(w) +
                      " cannot be pinned, though the transport lists it as load/store reachable");
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
  if (push_) {
    settle();
    if (barrier_kind_ == barrier_kind::central) {
      push_central_barrier(epoch);
    } else {
      push_dissemination_barrier(epoch);
    }
    return;
  }
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
  if (push_) {
    // The own ring is local: its last use (step s-K) ended with that step's publish (the
    // puts from it are flushed) and finish (this member's reads of it).
    staged_[s % slots_] = bytes;
    return own_base() + mirror_slot_offset(rank_, s) + data_offset(bytes);
  }
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
  if (push_) {
    targets_.clear();
    for (rank_t q = 0; q < size_; ++q) {
      if (q != rank_) targets_.push_back({q, whole});
    }
    push_step(s);
    return;
  }
  cross_process_release();
  step_word(rank_, s).store(s, std::memory_order_release);
  wake_due_ = true;
}

void coll_engine::publish(std::uint64_t s, const void* data, std::size_t bytes) {
  stage(s, data, bytes);
  publish(s);
}

void coll_engine::stage(std::uint64_t s, const void* data, std::size_t bytes) {
  std::byte* slot = acquire_slot(s, bytes);
  oneside::detail::copy_bytes(slot, data, bytes);
}

const std::byte* coll_engine::peer_slot(rank_t q, std::uint64_t s, std::size_t bytes) {
  if (push_) {
    if (q == rank_) return own_base() + mirror_slot_offset(q, s) + data_offset(bytes);
    std::atomic<std::uint64_t>& w = mirror_word(q, s);
    if (w.load(std::memory_order_acquire) < s) {
      settle();  // whoever waits for this member must not sleep through our wait
      wait_until([&] { return w.load(std::memory_order_acquire) >= s; });
    }
    std::uint64_t& r = read_[static_cast<std::size_t>(q)];
    r = std::max(r, s);
    return own_base() + mirror_slot_offset(q, s) + data_offset(bytes);
  }
  std::atomic<std::uint64_t>& w = step_word(q, s);
  if (w.load(std::memory_order_acquire) < s) {
    flush_wake();  // whoever waits for this member must not sleep through our wait
    wait_until([&] { return w.load(std::memory_order_acquire) >= s; });
  }
  return slot_of(q, s) + data_offset(bytes);
}

void coll_engine::finish(std::uint64_t s) {
  if (push_) {
    // Report to every producer read since the last report: it may reuse its slots at us.
    const std::size_t at = offset_in_area(&consumed_by(rank_));
    for (rank_t q = 0; q < size_; ++q) {
      const auto i = static_cast<std::size_t>(q);
      if (q == rank_ || read_[i] <= reported_[i]) continue;
      push_word(q, at, transport::amo_op::store, s);
      reported_[i] = s;
    }
    settle();
    return;
  }
  area_of(rank_).consumed.value.store(s, std::memory_order_release);
  wake_due_ = true;
  flush_wake();
}

// ---- push mode ------------------------------------------------------------------------

void coll_engine::mark_dirty(rank_t q) {
  char& d = dirty_[static_cast<std::size_t>(q)];
  if (d == 0) {
    d = 1;
    dirty_world_.push_back(world_of(q));
  }
}

void coll_engine::push_word(rank_t q, std::size_t offset, transport::amo_op op,
                            std::uint64_t value) {
  transport_.amo(world_of(q), remote_[static_cast<std::size_t>(q)] + offset,
                 {op, transport::amo_type::u64, value}, nullptr);
  if (owner_wakes_[static_cast<std::size_t>(q)] == 0) mark_dirty(q);
}

void coll_engine::settle() {
  if (dirty_world_.empty()) return;
  for (rank_t w : dirty_world_) transport_.flush(w);
  transport_.wake(std::span<const rank_t>(dirty_world_));
  for (rank_t q = 0; q < size_; ++q) dirty_[static_cast<std::size_t>(q)] = 0;
  dirty_world_.clear();
}

void coll_engine::push_step(std::uint64_t s) {
  cross_process_release();
  const std::size_t j = s % slots_;
  // Each reader must be done with what was last put into our slot j at its place.
  auto slot_free = [&](rank_t q) {
    return consumed_by(q).load(std::memory_order_acquire) >=
           written_[static_cast<std::size_t>(q) * slots_ + j];
  };
  auto all_free = [&] {
    return std::all_of(targets_.begin(), targets_.end(),
                       [&](const target& t) { return slot_free(t.member); });
  };
  if (!all_free()) {
    settle();
    wait_until(all_free);
  }
  // Data first, flushed (puts are unordered and invisible until then), then the step words.
  const std::size_t payload = staged_[j];
  const std::size_t at = data_offset(payload);
  const std::byte* src = own_base() + mirror_slot_offset(rank_, s) + at;
  const std::size_t mirror = mirror_slot_offset(rank_, s);
  auto clip = [&](const part& p) {
    const std::size_t off = std::min(p.offset, payload);
    return part{off, std::min(p.bytes, payload - off)};
  };
  // Members that cannot be reached directly get data and step word in one message when
  // they fit; they need no flush or wake afterwards.
  const std::size_t max_inline = transport_.caps().max_am_payload - sizeof(push_header);
  auto by_message = [&](const target& t) {
    return owner_wakes_[static_cast<std::size_t>(t.member)] != 0 &&
           clip(t.what).bytes <= max_inline;
  };
  std::vector<std::byte>& msg = push_buffer_;
  for (const target& t : targets_) {
    if (!by_message(t)) continue;
    const part p = clip(t.what);
    const std::uintptr_t base = remote_[static_cast<std::size_t>(t.member)] + mirror;
    const push_header h{base + at + p.offset, base, s, p.bytes};
    msg.resize(sizeof h + p.bytes);
    std::memcpy(msg.data(), &h, sizeof h);
    if (p.bytes > 0) std::memcpy(msg.data() + sizeof h, src + p.offset, p.bytes);
    transport_.am_send(world_of(t.member), push_handler(), msg);
  }
  for (const target& t : targets_) {
    const part p = clip(t.what);
    if (p.bytes == 0 || by_message(t)) continue;
    transport_.put(world_of(t.member),
                   remote_[static_cast<std::size_t>(t.member)] + mirror + at + p.offset,
                   std::span<const std::byte>(src + p.offset, p.bytes), transport::deferred());
  }
  // The staging slot stays untouched until these flushes complete the puts.
  for (const target& t : targets_) {
    if (clip(t.what).bytes > 0 && !by_message(t)) transport_.flush(world_of(t.member));
  }
  for (const target& t : targets_) {
    const auto q = static_cast<std::size_t>(t.member);
    if (!by_message(t)) push_word(t.member, mirror, transport::amo_op::store, s);
    written_[q * slots_ + j] = s;
    pushed_[q] = s;
  }
}

void coll_engine::push_dissemination_barrier(std::uint64_t epoch) {
  area& mine = own_area();
  for (int k = 0, dist = 1; dist < size_; ++k, dist *= 2) {
    const rank_t partner = (rank_ + dist) % size_;
    push_word(partner, offset_in_area(&mine.barrier[k]), transport::amo_op::store, epoch);
    settle();
    std::atomic<std::uint64_t>& f = mine.barrier[k].value;
    wait_until([&] { return f.load(std::memory_order_acquire) >= epoch; });
  }
}

void coll_engine::push_central_barrier(std::uint64_t epoch) {
  area& mine = own_area();
  if (rank_ == 0) {
    // Member 0 counts the others' arrivals (epoch e is complete at e*(n-1)), then stores the
    // epoch in everyone's release flag.
    const std::uint64_t all = epoch * static_cast<std::uint64_t>(size_ - 1);
    std::atomic<std::uint64_t>& a = mine.arrived.value;
    wait_until([&] { return a.load(std::memory_order_acquire) >= all; });
    const std::size_t at = offset_in_area(&mine.release);
    for (rank_t q = 1; q < size_; ++q) push_word(q, at, transport::amo_op::store, epoch);
    settle();
    return;
  }
  push_word(0, offset_in_area(&mine.arrived), transport::amo_op::add, 1);
  settle();
  std::atomic<std::uint64_t>& r = mine.release.value;
  wait_until([&] { return r.load(std::memory_order_acquire) >= epoch; });
}

}  // namespace oneside::detail
