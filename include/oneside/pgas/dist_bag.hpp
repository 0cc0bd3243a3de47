// dist_bag<T>: a distributed work queue for frontier-style algorithms (Bale's and YGM's
// mailbox loops, Grappa's global task pool): any rank pushes items to any member's part
// through an aggregator; each member drains its own part; a collective tells when the work is
// over everywhere.
//
//   oneside::dist_bag<node> bag;                       // collective, over world()
//   if (rank == 0) bag.push_local(root);
//   bag.process_all([&](node n) {                     // until nothing is left anywhere
//     for (node c : children(n)) bag.push(owner(c), c);
//   });
//
// push(r, v) serializes v into the bag's own aggregator (one buffer per destination, shipped
// when full, on flush(), and by the collectives below); the record is applied by the
// aggregator's handler in r's message progress, which appends it to r's part. push to this
// rank, and push_local, append at once. pop_local() takes an item of this rank's part (oldest
// first), drain(fn) pops and runs fn(T) until this rank's part is empty (fn may push more).
//
// Termination (is_done()): collective over the team, true on every member at once when every
// member's part is empty and no push is in flight; false on every member otherwise. It is exact
// (Mattern's four counters, not a timeout or a guess): each member counts items pushed (at the
// call, to any rank) and items that arrived in its part (at the append). is_done() flushes the
// bag's aggregator, then sums (pushed, arrived, part sizes) over the team twice; the work is
// over when both waves saw pushed == arrived, the same sums, and empty parts. Since the
// counters only grow, equal sums mean nothing was pushed or arrived between the waves, and
// pushed == arrived means no item was in flight then. The rule it relies on: items are pushed
// only by the processing of items (or before the first is_done()), and an item popped is
// processed (its pushes issued) before its rank calls is_done() again, as drain() and
// process_all() do. process_all(fn) is the loop { drain(fn); if (is_done()) break; }.
//
// Ordering: none between items (records from one rank to one member arrive in push order, but
// nothing promises pop order). Thread safety: every call except the collectives may be made
// from any thread. T: serializable (serialization.hpp) and movable.
//
// Errors (oneside::error; a rejected call changes nothing): a rank outside the team → rank; an
// item larger than the aggregator's max_message_bytes() (less the record's 8 bytes) → arg;
// the runtime closed → not_open; a null team → comm.
#pragma once

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <oneside/pgas/aggregator.hpp>
#include <oneside/pgas/container/registry.hpp>
#include <oneside/pgas/rpc.hpp>
#include <oneside/pgas/serialization.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/op.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

template <class T>
class dist_bag {
  static_assert(serializable<T> && std::is_move_constructible_v<T>,
                "dist_bag<T>: T must be serializable (serialization.hpp) and movable");

 public:
  using value_type = T;

  // Collective over `t`; `options` are the bag's aggregator's. Errors: comm (null team),
  // not_open, and the aggregator's (arg for bad options).
  explicit dist_bag(const oneside::team& t = oneside::world(),
                    const aggregator_options& options = {})
      : team_(t), agg_(options) {
    id_ = pgas::detail::register_container(team_, this, &apply_record, "dist_bag");
    me_ = team_.rank();
    world_of_.resize(static_cast<std::size_t>(team_.size()));
    for (rank_t r = 0; r < team_.size(); ++r) {
      world_of_[static_cast<std::size_t>(r)] = team_.to_world(r);
    }
  }
  dist_bag(const dist_bag&) = delete;
  dist_bag& operator=(const dist_bag&) = delete;
  // Collective over the team: flushes the bag's pushes, then a barrier, then this member's part
  // (with whatever is left in it) goes. Local only when the scope is left by an exception.
  ~dist_bag() {
    try {
      if (std::uncaught_exceptions() <= uncaught_) {
        agg_.flush();
        barrier(team_);
      }
    } catch (...) {
      // The runtime closed or a peer failed.
    }
    pgas::detail::unregister_container(id_);
  }

  const oneside::team& team() const noexcept { return team_; }

  // Appends v to the part of team rank r (through the aggregator unless r is this rank).
  void push(rank_t r, const T& v) {
    constexpr const char* call = "dist_bag::push";
    if (r < 0 || static_cast<std::size_t>(r) >= world_of_.size()) [[unlikely]] {
      oneside::detail::raise(error_class::rank, {.call = call, .target = r},
                             "rank " + std::to_string(r) + " is not in the bag's team [0, " +
                                 std::to_string(world_of_.size()) + ")");
    }
    const rank_t w = world_of_[static_cast<std::size_t>(r)];
    pgas::detail::check_rpc_target(w, call);
    if (r == me_) {
      push_local(v);
      return;
    }
    thread_local std::vector<std::byte> rec;  // reused: no allocation per push
    rec.resize(sizeof id_);
    std::memcpy(rec.data(), &id_, sizeof id_);
    serial_writer(rec).write(v);
    if (rec.size() > agg_.max_message_bytes()) [[unlikely]] {
      oneside::detail::raise(error_class::arg, {.call = call, .target = w, .bytes = rec.size()},
                             "an item takes " + std::to_string(rec.size() - sizeof id_) +
                                 " bytes; the bag's aggregator carries at most " +
                                 std::to_string(agg_.max_message_bytes() - sizeof id_));
    }
    pushed_.fetch_add(1, std::memory_order_relaxed);
    try {
      agg_.send(w, pgas::detail::container_handler(), rec);
    } catch (...) {
      pushed_.fetch_sub(1, std::memory_order_relaxed);
      throw;
    }
  }
  // Appends v to this rank's part.
  void push_local(T v) {
    pgas::detail::check_rpc_target(world_of_[static_cast<std::size_t>(me_)],
                                   "dist_bag::push_local");
    pushed_.fetch_add(1, std::memory_order_relaxed);
    append(std::move(v));
  }

  // The oldest item of this rank's part, or nothing when it is empty.
  std::optional<T> pop_local() {
    const std::lock_guard lock(mutex_);
    if (items_.empty()) return std::nullopt;
    std::optional<T> v(std::move(items_.front()));
    items_.pop_front();
    return v;
  }
  // Pops and runs fn(T) until this rank's part is empty (including what fn pushes here); the
  // number of items it ran fn on.
  template <class Fn>
  requires std::invocable<Fn&, T> std::size_t drain(Fn&& fn) {
    std::size_t n = 0;
    while (std::optional<T> v = pop_local()) {
      fn(std::move(*v));
      ++n;
    }
    return n;
  }
  std::size_t local_size() const {
    const std::lock_guard lock(mutex_);
    return items_.size();
  }

  // Ships the pushes buffered in the bag's aggregator and returns once they are in their
  // targets' parts.
  void flush() { agg_.flush(); }

  // Collective over the team: whether the work is over everywhere (see the file comment).
  bool is_done() {
    const std::array<std::uint64_t, 3> first = wave();
    if (first[0] != first[1] || first[2] != 0) return false;
    const std::array<std::uint64_t, 3> second = wave();
    return second == first;
  }
  // Collective over the team: drains this rank's part with fn until is_done(); the number of
  // items this rank ran fn on.
  template <class Fn>
  requires std::invocable<Fn&, T> std::size_t process_all(Fn&& fn) {
    std::size_t n = 0;
    do {
      n += drain(fn);
    } while (!is_done());
    return n;
  }

 private:
  void append(T&& v) {
    {
      const std::lock_guard lock(mutex_);
      items_.push_back(std::move(v));
    }
    arrived_.fetch_add(1, std::memory_order_release);
  }
  // Flushes, then sums (pushed, arrived, part size) over the team.
  std::array<std::uint64_t, 3> wave() {
    agg_.flush();
    std::array<std::uint64_t, 3> mine{pushed_.load(std::memory_order_acquire),
                                      arrived_.load(std::memory_order_acquire),
                                      static_cast<std::uint64_t>(local_size())};
    std::array<std::uint64_t, 3> all{};
    allreduce(team_, mine, all, op::sum);
    return all;
  }
  // The handler's side (container_apply).
  static void apply_record(void* container, rank_t, std::span<const std::byte> bytes) {
    auto& b = *static_cast<dist_bag*>(container);
    serial_reader r(bytes);
    b.append(r.read<T>());
  }

  oneside::team team_;
  aggregator agg_;
  mutable std::mutex mutex_;
  std::deque<T> items_;
  std::atomic<std::uint64_t> pushed_{0};
  std::atomic<std::uint64_t> arrived_{0};
  std::uint64_t id_ = 0;
  rank_t me_ = 0;
  std::vector<rank_t> world_of_;  // by team rank
  int uncaught_ = std::uncaught_exceptions();
};

}  // namespace oneside
