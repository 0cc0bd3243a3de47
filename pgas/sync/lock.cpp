// dist_lock (lock.hpp): the MCS queue lock of Mellor-Crummey and Scott over global memory.
// Words are 64-bit, updated with the atomics of atomic.hpp (so CPU atomics on one node, the
// window's atomics otherwise); a rank only ever waits on words of its own node.
//
//   lock:    node = {next 0, waiting 1}; pred = exchange(tail, me)
//            pred != 0: store(pred.next, me); wait until node.waiting == 0
//   unlock:  node.next == 0: compare_exchange(tail, me, 0) == me → free, done
//                            else wait until node.next != 0 (the successor is linking in)
//            store(next.waiting, 0)
#include <atomic>
#include <cstdint>
#include <exception>
#include <string>

#include <oneside/pgas/atomic.hpp>
#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/heap.hpp>
#include <oneside/pgas/lock.hpp>
#include <oneside/pgas/signal.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/op.hpp>

#include "context/pgas_context.hpp"
#include "runtime/check.hpp"
#include "runtime/hex.hpp"

namespace oneside {
namespace {

using oneside::detail::hex;
using oneside::detail::raise;

// A node as one 64-bit word: (rank + 1) above a 43-bit address field that holds the address
// divided by 16 (nodes are 16-byte aligned), so 0 is "no node".
constexpr unsigned node_align_shift = 4;
constexpr unsigned address_field_bits = 43;
constexpr std::uint64_t address_field_mask = (std::uint64_t{1} << address_field_bits) - 1;
constexpr std::uint64_t max_rank_field = (std::uint64_t{1} << (64 - address_field_bits)) - 1;
constexpr std::size_t next_word = 0;
constexpr std::size_t waiting_word = 1;

std::uint64_t pack(rank_t r, std::uintptr_t addr) {
  const auto rank_field = static_cast<std::uint64_t>(r) + 1;
  const std::uint64_t address_field = static_cast<std::uint64_t>(addr) >> node_align_shift;
  if (addr % (std::uintptr_t{1} << node_align_shift) != 0 || address_field > address_field_mask ||
      rank_field > max_rank_field) {
    raise(error_class::intern, {.call = "dist_lock", .target = r},
          "the queue node at " + hex(addr) + " of rank " + std::to_string(r) +
              " does not fit the 64-bit lock word (it holds 16-byte-aligned addresses below "
              "2^47 and ranks below 2^21 - 1)");
  }
  return (rank_field << address_field_bits) | address_field;
}

// The word `which` of the node a packed value names.
global_ptr<std::uint64_t> node_word(std::uint64_t packed, std::size_t which) {
  const auto r = static_cast<rank_t>((packed >> address_field_bits) - 1);
  const auto addr = static_cast<std::uintptr_t>((packed & address_field_mask) << node_align_shift);
  return global_ptr<std::uint64_t>(r, addr) + static_cast<std::ptrdiff_t>(which);
}

std::uint64_t load_local(const std::uint64_t* w) noexcept {
  return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(w)).load();
}

void store_local(std::uint64_t* w, std::uint64_t v) noexcept {
  std::atomic_ref<std::uint64_t>(*w).store(v);
}

}  // namespace

dist_lock::dist_lock(rank_t home) : uncaught_(std::uncaught_exceptions()) {
  pgas::detail::pgas_context& s = pgas::detail::get_context("dist_lock");
  const team& world = s.world();
  ONESIDE_CHECK(home >= 0 && home < world.size(), error_class::rank,
                {.call = "dist_lock", .target = home},
                "the home rank " + std::to_string(home) + " is not in [0, " +
                    std::to_string(world.size()) + ")");
  // Allocate, then agree: when some rank failed, every rank frees what it has and raises.
  std::exception_ptr failed;
  int code = 0;  // 1 + the error class of this rank's failure, 0 when none
  try {
    node_ = allocate<std::uint64_t>(2, std::size_t{1} << node_align_shift);
    store_local(node_.local() + next_word, 0);
    store_local(node_.local() + waiting_word, 0);
    me_ = pack(s.rank(), node_.address());
    if (s.rank() == home) {
      tail_ = allocate<std::uint64_t>(1);
      store_local(tail_.local(), 0);
    }
  } catch (const oneside::error& e) {
    failed = std::current_exception();
    code = 1 + static_cast<int>(e.error_class());
  }
  const std::uint64_t tail_address =
      broadcast(world, static_cast<std::uint64_t>(tail_.address()), home);
  const int worst = allreduce(world, code, op::max);
  if (worst != 0) {
    deallocate(node_);
    if (s.rank() == home) deallocate(tail_);
    if (failed) std::rethrow_exception(failed);
    raise(static_cast<error_class>(worst - 1), {.call = "dist_lock"},
          "another rank could not set up its part of the lock (see its error)");
  }
  tail_ = global_ptr<std::uint64_t>(home, static_cast<std::uintptr_t>(tail_address));
}

dist_lock::~dist_lock() {
  pgas::detail::pgas_context* s = pgas::detail::get_context_if_open();
  if (s == nullptr) return;  // the runtime closed: the heaps are gone
  try {
    if (std::uncaught_exceptions() <= uncaught_) barrier(s->world());
    deallocate(node_);
    if (tail_.where() == s->rank()) deallocate(tail_);
  } catch (...) {
    // A failed peer during the barrier: the job is ending; the heap goes with the runtime.
  }
}

void dist_lock::misuse(const char* call, const char* what) const {
  raise(error_class::arg, {.call = call, .target = home()}, what);
}

void dist_lock::lock() {
  if (owner_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    misuse("dist_lock::lock", "this thread holds the lock already (dist_lock is not recursive)");
  }
  local_.lock();
  try {
    const detail::wait_scope waiting("dist_lock::lock", home());
    acquire();
  } catch (...) {
    local_.unlock();
    throw;
  }
  owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
}

bool dist_lock::try_lock() {
  if (owner_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    misuse("dist_lock::try_lock",
           "this thread holds the lock already (dist_lock is not recursive)");
  }
  if (!local_.try_lock()) return false;
  bool taken = false;
  try {
    // Nobody reaches this node until it is published by the compare-exchange.
    store_local(node_.local() + next_word, 0);
    store_local(node_.local() + waiting_word, 1);
    taken = compare_exchange(tail_, 0, me_).wait() == 0;
  } catch (...) {
    local_.unlock();
    throw;
  }
  if (!taken) {
    local_.unlock();
    return false;
  }
  owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  return true;
}

void dist_lock::unlock() {
  if (owner_.load(std::memory_order_relaxed) != std::this_thread::get_id()) {
    misuse("dist_lock::unlock", "this thread does not hold the lock");
  }
  owner_.store(std::thread::id(), std::memory_order_relaxed);
  try {
    release();
  } catch (...) {
    local_.unlock();
    throw;
  }
  local_.unlock();
}

void dist_lock::acquire() {
  std::uint64_t* node = node_.local();
  // Nobody reaches this node until the exchange publishes it.
  store_local(node + next_word, 0);
  store_local(node + waiting_word, 1);
  const std::uint64_t pred = exchange(tail_, me_).wait();
  if (pred == 0) return;  // the lock was free
  store(node_word(pred, next_word), me_).wait();
  wait_until(static_cast<const std::uint64_t*>(node + waiting_word), cmp::eq, std::uint64_t{0});
}

void dist_lock::release() {
  quiet();  // what the critical section wrote is visible before the next holder enters
  std::uint64_t* node = node_.local();
  std::uint64_t next = load_local(node + next_word);
  if (next == 0) {
    if (compare_exchange(tail_, me_, 0).wait() == me_) return;  // nobody waits: free now
    // A successor swapped itself into the tail and is linking in.
    wait_until(static_cast<const std::uint64_t*>(node + next_word), cmp::ne, std::uint64_t{0});
    next = load_local(node + next_word);
  }
  store(node_word(next, waiting_word), 0).wait();
}

}  // namespace oneside
