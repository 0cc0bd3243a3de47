// The rma layer's access interface: one-sided operations on memory named by (rank, address in
// the owner's address space), with no window around it. The pgas layer's remote path is
// this; a window operation, once its window checks passed, moves its bytes the same way.
//
//   resolve   once per operation: the rank is in the job and every byte lies in memory that
//             rank exposed (transport::backend::exposes: segments, exposures), else an error
//             of the right class naming the user's call (rank, rma_range); the result says
//             whether this process loads and stores that memory (then it is copied here)
//   put/get   contiguous or any datatype layout on either side (moved as iovecs, never
//             element by element); atomics (fetching: blocking; updates: in flight)
//   complete  each mover says whether its operation is in flight; the caller counts it in a
//             counter it owns (a completion_counter: the pgas layer's; a window keeps one per
//             target), whose complete() finishes what it counted with one transport flush per
//             target (or one flush_all) and runs the waiters registered for it
//
// No allocation and no lock per operation on the contiguous paths (a transport may copy a
// small put: shm into the target's queue, MPI into a staging buffer). Errors are raised before
// anything moves: a rejected call changes nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/types.hpp>

#include "runtime/transport.hpp"

namespace oneside::rma::detail {

// A resolved target: where the bytes are, and their mapping here when this process loads and
// stores them (null: the transport moves them).
struct access_target {
  rank_t rank;
  std::uintptr_t addr;
  std::byte* local;
};

// Something to run when the operations to `rank` are complete through `ticket`
// (completion_counter::when_complete). Owned by whoever registers it; run once.
class completion_waiter {
 public:
  completion_waiter() = default;
  completion_waiter(const completion_waiter&) = delete;
  completion_waiter& operator=(const completion_waiter&) = delete;
  virtual void completed() noexcept = 0;

 protected:
  virtual ~completion_waiter() = default;

 private:
  friend class completion_counter;
  rank_t rank_ = 0;
  std::uint64_t ticket_ = 0;
};

// Operations issued through the access interface and how far they are complete. Tickets come
// from one sequence over all targets: an operation to rank r with ticket k is complete once a
// flush of r (or a flush_all) began after it was issued. Thread-safe.
class completion_counter {
 public:
  explicit completion_counter(int ranks);
  completion_counter(const completion_counter&) = delete;
  completion_counter& operator=(const completion_counter&) = delete;

  // A ticket for an operation just issued.
  std::uint64_t issue() noexcept { return issued_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  bool is_complete(rank_t r, std::uint64_t ticket) const noexcept {
    return all_.load(std::memory_order_acquire) >= ticket ||
           done_[static_cast<std::size_t>(r)].load(std::memory_order_acquire) >= ticket;
  }
  // Whether everything issued is complete (quiet() with nothing to do).
  bool is_idle() const noexcept {
    return all_.load(std::memory_order_acquire) >= issued_.load(std::memory_order_acquire);
  }
  // Completes what was issued to `r` through `ticket` (one transport flush of r, unless a
  // flush since did it), then runs the waiters that are due.
  void complete(transport::backend& t, rank_t r, std::uint64_t ticket);
  // Completes everything issued, to every rank (one transport flush_all).
  void complete_all(transport::backend& t);
  // Runs `w` once the operations to `r` are complete through `ticket`: at once when they
  // are, else from the complete() or complete_all() that completes them; drive() completes
  // the targets that have waiters.
  void when_complete(rank_t r, std::uint64_t ticket, completion_waiter& w);
  // Completes every target some waiter waits for (progress).
  void drive(transport::backend& t);
  bool has_waiters() const noexcept { return waiting_.load(std::memory_order_acquire) != 0; }

 private:
  void run_due() noexcept;

  std::atomic<std::uint64_t> issued_{0};
  std::atomic<std::uint64_t> all_{0};                   // complete_all() through
  std::unique_ptr<std::atomic<std::uint64_t>[]> done_;  // per rank: complete() through
  std::atomic<std::size_t> waiting_{0};                 // waiters_.size()
  std::mutex waiters_mutex_;
  std::vector<completion_waiter*> waiters_;
};

// Checks `rank` (error(rank) outside [0, size)) and that every byte of [addr, addr + bytes)
// lies in memory `rank` exposed (error(rma_range) otherwise), naming `call`.
access_target resolve(transport::backend& t, rank_t rank, std::uintptr_t addr, std::size_t bytes,
                      const char* call);
// The same for the bytes a datatype layout touches: `count` elements of `type` at addr.
access_target resolve(transport::backend& t, rank_t rank, std::uintptr_t addr, count_t count,
                      const datatype& type, const char* call);

// Every mover below returns whether the operation is in flight: true when it went through the
// transport and is complete at the target only once the target is flushed (the caller counts
// it in its completion counter: issue(), after this returns), false when it is done (memory
// mapped here, or a transport that completed it). With `defer`, the local buffer belongs to
// the operation until that flush (MPI_Put's and MPI_Get's rule: nothing copied, a get's bytes
// arrive with the flush); without, the call returns locally complete (a put's source may be
// reused, a get's bytes are in place).
//
// Writes `bytes` from `src` to the target.
bool put(transport::backend& t, const access_target& to, const void* src, std::size_t bytes,
         bool defer = false);
// Reads `bytes` of the target into `dst`.
bool get(transport::backend& t, const access_target& from, void* dst, std::size_t bytes,
         bool defer = false);

// Layouts: `local_count` elements of `local_type` at `local` to `remote_count` of
// `remote_type` at the target (put) or back (get), the type signatures matching (error(type)
// naming `call` otherwise). Moved as byte runs: copies here, one iovec transfer through the
// transport otherwise.
bool put_layout(transport::backend& t, const access_target& to, const void* local,
                count_t local_count, const datatype& local_type, count_t remote_count,
                const datatype& remote_type, const char* call, bool defer = false);
bool get_layout(transport::backend& t, const access_target& from, void* local, count_t local_count,
                const datatype& local_type, count_t remote_count, const datatype& remote_type,
                const char* call, bool defer = false);

// An atomic on the naturally aligned 4- or 8-byte word at the target, atomic with every other
// atomic of this interface and of the transport on that word. fetch: returns the previous
// value's bits once the operation ran. update: in flight as above.
std::uint64_t fetch(transport::backend& t, const access_target& at, const transport::amo_args& a);
bool update(transport::backend& t, const access_target& at, const transport::amo_args& a);

}  // namespace oneside::rma::detail
