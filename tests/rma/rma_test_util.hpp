// Helpers of the rma conformance tests (with support/expect_error.hpp re-exported): windows
// of every flavour behind one interface (user memory, attached regions and
// their addresses handled here), access epochs of each synchronization mode, the phase
// boundary that makes remote updates and local stores visible, and a compute loop that makes
// no oneside call (for progress tests).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/oneside.hpp>
#include <oneside/runtime/wait.hpp>

#include "expect_error.hpp"
#include "runtime/transport.hpp"

namespace oneside::test {

namespace rma = oneside::rma;
using rma::disp_t;

// Runs f, which must not throw; reports at the caller's line.
template <class F>
bool expect_ok(std::string_view what, F&& f,
               const std::source_location& loc = std::source_location::current()) {
  try {
    std::forward<F>(f)();
    return true;
  } catch (const std::exception& e) {
    ADD_FAILURE_AT(loc.file_name(), static_cast<int>(loc.line()))
        << what << ": unexpected exception: " << e.what();
    return false;
  }
}

// ---- flavours and windows -----------------------------------------------------------------

inline constexpr rma::flavor all_flavors[] = {rma::flavor::create, rma::flavor::allocate,
                                              rma::flavor::allocate_shared, rma::flavor::dynamic};

// Whether every member of `t` shares this node's memory, as allocate_shared over `t` and
// load/store between its members need. Not so when the transport reaches some ranks only
// through the network (or with ONESIDE_SHM_LOAD_STORE=0: local_team() is then each rank
// alone). The same answer on every member of `t`, so tests may skip on it without a
// collective.
inline bool shares_memory(const team& t) {
  const team& local = local_team();
  for (rank_t w : t.group().world_ranks()) {
    if (local.from_world(w) == no_rank) return false;
  }
  return true;
}
inline bool world_shares_memory() {
  return shares_memory(world());
}

// Whether a window of flavour `f` can be made over `t` here (allocate_shared needs shared
// memory: error(rma_shared) otherwise, which window_test checks).
inline bool flavor_available(rma::flavor f, const team& t) {
  return f != rma::flavor::allocate_shared || shares_memory(t);
}
inline bool flavor_available(rma::flavor f) {
  return flavor_available(f, world());
}

// all_flavors without those flavor_available() rules out for `t`.
inline std::vector<rma::flavor> flavors_for(const team& t) {
  std::vector<rma::flavor> v;
  for (rma::flavor f : all_flavors) {
    if (flavor_available(f, t)) v.push_back(f);
  }
  return v;
}
inline std::vector<rma::flavor> world_flavors() {
  return flavors_for(world());
}

// The memory model windows report on this transport (MEM-1, MEM-5).
inline rma::memory_model expected_model() {
  return transport::current().caps().unified_memory ? rma::memory_model::unified
                                                    : rma::memory_model::separate;
}

inline std::string flavor_name(rma::flavor f) {
  switch (f) {
    case rma::flavor::create:
      return "create";
    case rma::flavor::allocate:
      return "allocate";
    case rma::flavor::allocate_shared:
      return "shared";
    case rma::flavor::dynamic:
      return "dynamic";
  }
  return "unknown";
}

// A window of any flavour with `bytes` of memory per member, addressed in units of `unit`
// bytes whatever the flavour: create exposes a std::vector (plus `guard` bytes after the
// window that no RMA may touch), dynamic attaches one region of a std::vector (the guard bytes
// stay unattached) and exchanges its address. disp(target, k) is the target_disp of unit k at
// `target`; local() is this member's memory. (Collective over `t`, like window creation.)
class test_window {
 public:
  test_window(rma::flavor f, const team& t, std::size_t bytes_, std::ptrdiff_t unit_,
              const info& hints = {}, std::size_t guard_ = 0)
      : kind(f),
        unit(unit_),
        bytes(bytes_),
        guard(guard_),
        memory(f == rma::flavor::create || f == rma::flavor::dynamic ? bytes_ + guard_ : 0),
        win(make(f, t, hints)) {
    if (f == rma::flavor::dynamic) {
      std::uint64_t mine = 0;
      if (bytes > 0) {
        win.attach(memory.data(), bytes);
        mine = reinterpret_cast<std::uintptr_t>(memory.data());
      }
      addresses = allgather(t, mine);
    }
  }

  std::byte* local() {
    if (kind == rma::flavor::create || kind == rma::flavor::dynamic) return memory.data();
    return static_cast<std::byte*>(win.base());
  }
  template <class T>
  T* local_as() {
    return reinterpret_cast<T*>(local());
  }
  disp_t disp(rank_t target, disp_t k) const {
    if (kind != rma::flavor::dynamic) return k;
    return static_cast<disp_t>(addresses[static_cast<std::size_t>(target)]) + k * unit;
  }

  rma::flavor kind;
  std::ptrdiff_t unit;
  std::size_t bytes;
  std::size_t guard;
  std::vector<std::byte> memory;         // create, dynamic: bytes + guard, zeroed
  std::vector<std::uint64_t> addresses;  // dynamic: each member's region
  rma::window win;                       // last: freed before the memory goes

 private:
  rma::window make(rma::flavor f, const team& t, const info& hints) {
    switch (f) {
      case rma::flavor::create:
        return rma::window::create(t, memory.data(), bytes, unit, hints);
      case rma::flavor::allocate:
        return rma::window::allocate(t, bytes, unit, hints);
      case rma::flavor::allocate_shared:
        return rma::window::allocate_shared(t, bytes, unit, hints);
      case rma::flavor::dynamic:
        break;
    }
    return rma::window::create_dynamic(t, hints);
  }
};

inline test_window make_window(rma::flavor f, const team& t, std::size_t bytes, std::ptrdiff_t unit,
                               const info& hints = {}, std::size_t guard = 0) {
  return test_window(f, t, bytes, unit, hints, guard);
}

// ---- epochs --------------------------------------------------------------------------------

// The synchronization modes this issue exercises operations under.
enum class sync_mode { fence, lock, lock_all };

inline std::string sync_name(sync_mode s) {
  switch (s) {
    case sync_mode::fence:
      return "fence";
    case sync_mode::lock:
      return "lock";
    case sync_mode::lock_all:
      return "lockall";
  }
  return "unknown";
}

// The ring neighbours in the world team: the next rank (its target) and the previous one.
inline rank_t right() {
  return (world().rank() + 1) % world().size();
}
inline rank_t left() {
  return (world().rank() + world().size() - 1) % world().size();
}

// A phase boundary, collective over the window's members, called when every member has closed
// its access epochs: afterwards every update made by RMA is visible to its owner's loads and
// every store made before it is visible to RMA (the owner's fence publishes both ways in the
// unified model: MEM-8, MEM-11, MEM-12).
inline void settle(rma::window& w) {
  barrier(w.team());
  w.fence(rma::mode::noprecede | rma::mode::nosucceed);
  barrier(w.team());
}

// Runs body(target) for every target in `targets` inside an access epoch of mode `s`:
//   fence:    fence(); body for every target; fence()            (collective)
//   lock:     for each target: lock(type, target); body; unlock(target)
//   lock_all: lock_all(); body for every target; flush_all(); unlock_all()
// Every operation is complete at origin and target when it returns.
template <class F>
void in_epoch(rma::window& w, sync_mode s, std::span<const rank_t> targets, F&& body,
              rma::lock_type type = rma::lock_type::shared) {
  switch (s) {
    case sync_mode::fence:
      w.fence();
      for (rank_t t : targets) body(t);
      w.fence();
      break;
    case sync_mode::lock:
      for (rank_t t : targets) {
        w.lock(type, t);
        body(t);
        w.unlock(t);
      }
      break;
    case sync_mode::lock_all:
      w.lock_all();
      for (rank_t t : targets) body(t);
      w.flush_all();
      w.unlock_all();
      break;
  }
}

inline std::vector<rank_t> all_ranks(const team& t) {
  std::vector<rank_t> v(static_cast<std::size_t>(t.size()));
  for (rank_t r = 0; r < t.size(); ++r) v[static_cast<std::size_t>(r)] = r;
  return v;
}

// ---- time ----------------------------------------------------------------------------------

// steady_clock is CLOCK_MONOTONIC: one clock for every process of the node, so time points
// can be compared across ranks.
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What a target that computes without calling oneside saw: when it started and stopped, and
// whether it stopped because every origin said it was done (not because `limit` ran out).
struct computed {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool origins_done = false;
};

// Computes without any oneside call until flags[1], ..., flags[n - 1] (local memory the other
// ranks put 1 into once they finished) are all set, at most `limit`. Progress tests use it
// instead of a fixed busy time: origins that need the target's help cannot finish (nor say
// so) before the limit, whatever the machine's load, so the test fails then and only then.
inline computed compute_until_origins_done(const std::int64_t* flags, std::size_t n,
                                           std::chrono::nanoseconds limit) {
  computed c;
  c.start_ns = now_ns();
  const std::int64_t end = c.start_ns + static_cast<std::int64_t>(limit.count());
  double x = 1.0;
  while (!c.origins_done && now_ns() < end) {
    for (int i = 0; i < 2000; ++i) x = x * 0.999999 + 1e-6;
    c.origins_done = true;
    for (std::size_t r = 1; r < n; ++r) {
      c.origins_done = c.origins_done && std::atomic_ref<const std::int64_t>(flags[r]).load(
                                             std::memory_order_acquire) != 0;
    }
  }
  c.end_ns = now_ns();
  if (x <= 0.0) c.origins_done = false;  // keeps the loop's work
  return c;
}

// ---- waiting on local memory and a side channel (the spec's figures use send/recv) ------

template <class T>
T load(const T& x) {
  return std::atomic_ref<const T>(x).load(std::memory_order_acquire);
}
template <class T>
void store(T& x, T v) {
  std::atomic_ref<T>(x).store(v, std::memory_order_release);
}

// Waits through oneside::wait_until until done() holds, at most `limit`: false on timeout, so a
// lost update fails the test instead of hanging the job.
template <class Pred>
bool wait_for(Pred&& done, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  bool ok = false;
  oneside::wait_until([&] {
    ok = done();
    return ok || std::chrono::steady_clock::now() > end;
  });
  return ok;
}

// A side channel for "I got this far" messages standing in for the figures' send/recv: `slots`
// int64 per rank, under lock_all for the board's life. send() puts and flushes; await() polls
// the local slot with wait_until (MEM-3: unified, no call needed).
class notice_board {
 public:
  explicit notice_board(std::size_t slots = 2)
      : win_(rma::window::allocate(world(), slots * sizeof(std::int64_t), 8)) {
    std::fill_n(static_cast<std::int64_t*>(win_.base()), slots, std::int64_t{0});
    settle(win_);
    win_.lock_all();
  }
  notice_board(const notice_board&) = delete;
  notice_board& operator=(const notice_board&) = delete;
  ~notice_board() {
    win_.unlock_all();
    barrier(world());
    win_.free();
  }
  void send(rank_t to, disp_t slot, std::int64_t value) {
    win_.put(value, to, slot);
    win_.flush(to);
  }
  bool await(disp_t slot, std::int64_t value) {
    const std::int64_t* s = static_cast<std::int64_t*>(win_.base()) + slot;
    return wait_for([&] { return load(*s) >= value; });
  }

 private:
  rma::window win_;
};

}  // namespace oneside::test
