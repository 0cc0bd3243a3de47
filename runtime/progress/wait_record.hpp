// What a rank tells whoever watches its job about its long waits: how many of its threads
// wait, whether the rank has been quiet (nothing ended, nothing computed) and since when, and
// for each thread that has waited a while, what it waits for, as text. Under oneside-run the
// record lives in the job's boot object (boot_segment.hpp), where the launcher reads it for
// its hang check (ONESIDE_HANG_TIMEOUT) and for `oneside-run --dump`; otherwise it is the
// process's own. Written by the rank's waiting threads only after they slept (so never on
// the fast path), read by other processes without locks: a reader takes what it sees.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace oneside::detail {

inline constexpr int wait_record_threads = 4;         // threads of a rank described at once
inline constexpr std::size_t wait_text_bytes = 1000;  // of each description, with its NUL

// One thread's description. The thread claims the slot (owner = its thread id) when it starts
// describing its wait and frees it (owner = 0) when the wait ends; the text changes under the
// sequence lock `seq` (odd while it changes).
struct waiter_slot {
  std::atomic<std::int32_t> owner{0};
  std::atomic<std::uint32_t> seq{0};
  std::atomic<std::int64_t> since_ns{0};  // CLOCK_MONOTONIC when the wait began
  char text[wait_text_bytes] = {};
};

struct wait_record {
  // Threads of the rank in a wait that went to sleep (its long waits), the runtime's own
  // threads (agent, progress thread) not counted.
  std::atomic<std::uint32_t> waiting{0};
  // Long waits that ended: each is progress.
  std::atomic<std::uint64_t> progress{0};
  // CLOCK_MONOTONIC since which the rank has been quiet: some thread waits, no wait ended and
  // the rank's other threads used almost no CPU. 0: not quiet.
  std::atomic<std::int64_t> quiet_since_ns{0};
  waiter_slot slots[wait_record_threads];
};

// A description read consistently from a slot of another process (false: free, or changing
// all the time).
inline bool read_waiter(const waiter_slot& s, char (&text)[wait_text_bytes], std::int32_t& owner,
                        std::int64_t& since_ns) noexcept {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::uint32_t before = s.seq.load(std::memory_order_acquire);
    if ((before & 1U) != 0) continue;
    owner = s.owner.load(std::memory_order_relaxed);
    since_ns = s.since_ns.load(std::memory_order_relaxed);
    std::memcpy(text, s.text, wait_text_bytes);  // another process's bytes: checked by seq
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) == before) {
      text[wait_text_bytes - 1] = '\0';
      return owner != 0 && text[0] != '\0';
    }
  }
  return false;
}

// How many of the record's waiting threads (as many as it has slots, at most) have not
// described their wait yet: a thread does so itself, a second into its wait, when it next
// wakes, which a loaded machine or a sanitizer may delay by seconds.
inline int undescribed_waits(const wait_record& rec) noexcept {
  int described = 0;
  for (const waiter_slot& slot : rec.slots) {
    char text[wait_text_bytes];
    std::int32_t owner = 0;
    std::int64_t since = 0;
    if (read_waiter(slot, text, owner, since)) ++described;
  }
  const auto waiting = static_cast<int>(rec.waiting.load(std::memory_order_relaxed));
  const int describable = waiting < wait_record_threads ? waiting : wait_record_threads;
  return describable > described ? describable - described : 0;
}

}  // namespace oneside::detail
