// dist_lock: mutual exclusion across the whole job (OpenSHMEM's shmem_set_lock family), an MCS
// queue lock over global memory. The lock word (the queue's tail) lives on one home rank;
// each rank has one queue node in its own heap. A rank that finds the lock taken links its
// node behind the tail and sleeps on its own node's flag (wait_until, no spinning across the
// network); the holder hands the lock to its successor by storing to that flag (an atomic
// store, which wakes the successor). Waiters are served in the order they queued. Threads of
// one rank first serialize on a local mutex, so a rank has at most one node in the queue.
//
// Memory ordering: unlock() completes the holder's puts and atomics (quiet()) before handing
// the lock on, so the next holder sees everything written in the critical section. quiet()
// also waits for the rpc_ff the holder's rank issued to run (rpc.hpp): the body of such a call
// must not wait for this lock (it would wait for the unlock that waits for it).
//
// dist_lock meets the standard's Lockable requirements (std::lock_guard, std::unique_lock,
// std::scoped_lock work). It is not recursive.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

#include <oneside/pgas/global_ptr.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

class dist_lock {
 public:
  // Collective over the world: every rank constructs the job's dist_locks in the same order
  // (with the same home). The lock word lives on rank `home`. Errors (raised on every rank,
  // nothing left allocated): rank (home outside the world); no_mem (a heap is full); intern (a
  // queue node's address does not fit the 64-bit lock word, which packs (rank + 1) in 21 bits
  // and the 16-byte-aligned address in 43: addresses below 2^47).
  explicit dist_lock(rank_t home = 0);
  dist_lock(const dist_lock&) = delete;
  dist_lock& operator=(const dist_lock&) = delete;
  // Collective: a barrier (no rank frees its node while another may still reach it), then each
  // rank frees its memory. Nobody may hold or wait for the lock. Local only (no barrier) when
  // the scope is left by an exception.
  ~dist_lock();

  // Returns once this thread holds the lock. Error arg when this thread holds it already.
  void lock();
  // Takes the lock when it is free (no thread anywhere holds or waits for it) and returns
  // true; false at once otherwise (also when another thread of this rank holds it). One round
  // trip to the home rank. Error arg when this thread holds it already.
  bool try_lock();
  // Releases the lock; the next queued rank (if any) gets it. Error arg (nothing changes) when
  // this thread does not hold it.
  void unlock();

  rank_t home() const noexcept { return tail_.where(); }

 private:
  void acquire();
  void release();
  [[noreturn]] void misuse(const char* call, const char* what) const;

  std::mutex local_;                      // this rank's threads, one at a time
  std::atomic<std::thread::id> owner_{};  // the thread holding the lock on this rank
  global_ptr<std::uint64_t> tail_;        // on home: the packed node of the last in line, or 0
  global_ptr<std::uint64_t> node_;        // this rank's node: [0] successor, [1] waiting flag
  std::uint64_t me_ = 0;                  // node_, packed
  int uncaught_ = 0;                      // std::uncaught_exceptions() at construction
};

}  // namespace oneside
