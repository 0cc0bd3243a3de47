// Point-to-point synchronization, as OpenSHMEM has it: put-with-signal updates a 64-bit signal
// word at the target after the data has landed there, and a rank waits on words of its own
// memory with wait_until (and its any/all/some forms) or polls them with test_until. Waiting
// goes through oneside's waiting primitive (spin, then yield, then sleep until a writer wakes
// this process), so ranks outnumbering cores do not burn each other's time.
//
// Which writes wake a sleeping waiter at once: put-with-signal, single-value put/rput, and
// the atomics of atomic.hpp. Other writes (span puts, a peer's plain stores) are seen when the
// waiter next looks, within the waiting primitive's longest sleep (ONESIDE_WAIT_SLEEP_MAX_US).
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/future.hpp>
#include <oneside/pgas/global_ptr.hpp>
#include <oneside/runtime/wait.hpp>

namespace oneside {

// How the signal word changes: set to the value, or the value added to it (atomically).
enum class signal_op : std::uint8_t { set, add };

// Comparisons of wait_until and test_until: `*ivar cmp value`.
enum class cmp : std::uint8_t { eq, ne, gt, ge, lt, le };

namespace pgas::detail {

// The word types a rank waits on.
template <class T>
concept wait_word = std::same_as<T, std::int32_t> || std::same_as<T, std::uint32_t> ||
    std::same_as<T, std::int64_t> || std::same_as<T, std::uint64_t> || std::same_as<T, long long> ||
    std::same_as<T, unsigned long long>;

// Puts `bytes` from src at (r, addr), then updates the signal at (sig_rank, sig_addr) once
// the data is visible there.
future<> put_with_signal(const void* src, std::size_t bytes, rank_t r, std::uintptr_t addr,
                         rank_t sig_rank, std::uintptr_t sig_addr, std::uint64_t value,
                         signal_op op);
// error(arg) for a null or misaligned word.
void check_word(const void* ivar, std::size_t align, const char* call);
// error(arg) naming `call` and what is wrong with its spans.
[[noreturn]] void bad_words(const char* call, const char* why);
// For hang diagnosis: "the word at 0x… of this rank" (a wait_scope's describe).
void describe_words(const void* words, rank_t, std::string& out) noexcept;
// The local pointer of a global_ptr a rank waits on: error(arg) unless load/store reachable.
void* wait_address(rank_t r, std::uintptr_t addr, std::size_t bytes, const char* call);

template <class T>
bool compare(T v, cmp c, T value) noexcept {
  switch (c) {
    case cmp::eq:
      return v == value;
    case cmp::ne:
      return v != value;
    case cmp::gt:
      return v > value;
    case cmp::ge:
      return v >= value;
    case cmp::lt:
      return v < value;
    case cmp::le:
      return v <= value;
  }
  return false;
}

template <class T>
T load_word(const T* ivar) noexcept {
  return std::atomic_ref<T>(*const_cast<T*>(ivar)).load(std::memory_order_acquire);
}

}  // namespace pgas::detail

// ---- put-with-signal ---------------------------------------------------------------------

// Writes src to dst[0, src.size()), then — once the data is visible at dst's rank — sets
// *signal to `value` or adds `value` to it (atomically, as the atomics of atomic.hpp), and
// wakes the signal's rank. The future is ready when both are visible. src must stay unchanged
// until then. The signal may live on any rank (usually dst's).
template <pgas::detail::transferable T>
future<> rput(std::span<const T> src, global_ptr<T> dst, global_ptr<std::uint64_t> signal,
              std::uint64_t value, signal_op op = signal_op::set) {
  return pgas::detail::put_with_signal(
      src.data(), pgas::detail::span_bytes(src.size(), sizeof(T), "rput"), dst.where(),
      dst.address(), signal.where(), signal.address(), value, op);
}
template <pgas::detail::transferable T>
future<> rput(std::span<T> src, global_ptr<T> dst, global_ptr<std::uint64_t> signal,
              std::uint64_t value, signal_op op = signal_op::set) {
  return rput(std::span<const T>(src), dst, signal, value, op);
}
// A single value with a signal.
template <pgas::detail::transferable T>
future<> rput(const T& value, global_ptr<T> dst, global_ptr<std::uint64_t> signal,
              std::uint64_t signal_value, signal_op op = signal_op::set) {
  return pgas::detail::put_with_signal(&value, sizeof(T), dst.where(), dst.address(),
                                       signal.where(), signal.address(), signal_value, op);
}

// The signal word's current value (an atomic load; shmem_signal_fetch).
inline std::uint64_t signal_fetch(const std::uint64_t* signal) {
  pgas::detail::check_word(signal, alignof(std::uint64_t), "signal_fetch");
  return pgas::detail::load_word(signal);
}

// ---- waiting on local words --------------------------------------------------------------

// Whether `*ivar cmp value` holds now.
template <pgas::detail::wait_word T>
bool test_until(const T* ivar, cmp c, T value) {
  pgas::detail::check_word(ivar, alignof(T), "test_until");
  return pgas::detail::compare(pgas::detail::load_word(ivar), c, value);
}

// Returns once `*ivar cmp value` holds. ivar is this process's memory.
template <pgas::detail::wait_word T>
void wait_until(const T* ivar, cmp c, T value) {
  pgas::detail::check_word(ivar, alignof(T), "wait_until");
  const oneside::detail::wait_scope waiting("wait_until", -1, pgas::detail::describe_words, ivar);
  oneside::detail::wait_until(
      [&] { return pgas::detail::compare(pgas::detail::load_word(ivar), c, value); });
}
// The same for a word named by a global pointer this process can load and store.
template <pgas::detail::wait_word T>
void wait_until(global_ptr<T> ivar, cmp c, T value) {
  wait_until(static_cast<const T*>(
                 pgas::detail::wait_address(ivar.where(), ivar.address(), sizeof(T), "wait_until")),
             c, value);
}

// Waits until the signal satisfies `cmp value` and returns its value then
// (shmem_signal_wait_until).
inline std::uint64_t signal_wait_until(const std::uint64_t* signal, cmp c, std::uint64_t value) {
  pgas::detail::check_word(signal, alignof(std::uint64_t), "signal_wait_until");
  const oneside::detail::wait_scope waiting("signal_wait_until", -1, pgas::detail::describe_words,
                                            signal);
  std::uint64_t seen = 0;
  oneside::detail::wait_until([&] {
    seen = pgas::detail::load_word(signal);
    return pgas::detail::compare(seen, c, value);
  });
  return seen;
}

// The forms over arrays of words (shmem_wait_until_any/all/some, shmem_test_*). `status`, when
// not empty, has one entry per word: a nonzero entry excludes that word.
namespace pgas::detail {
template <class T>
void check_words(std::span<const T> ivars, std::span<const int> status, const char* call) {
  if (!status.empty() && status.size() != ivars.size()) {
    bad_words(call, "status must be empty or have one entry per word");
  }
  for (const T& w : ivars) check_word(&w, alignof(T), call);
}
template <class T>
bool included(std::span<const int> status, std::size_t i) noexcept {
  return status.empty() || status[i] == 0;
}
// One look at the words: the included ones that satisfy the comparison, in order, as indices
// (at most `indices.size()`, none written when it is empty). Returns how many there are; with
// `first_only`, stops at the first.
template <class T>
std::size_t matching(std::span<const T> ivars, std::span<const int> status, cmp c, T value,
                     std::span<std::size_t> indices, bool first_only) noexcept {
  std::size_t n = 0;
  for (std::size_t i = 0; i < ivars.size(); ++i) {
    if (included<T>(status, i) && compare(load_word(&ivars[i]), c, value)) {
      if (n < indices.size()) indices[n] = i;
      ++n;
      if (first_only) break;
    }
  }
  return n;
}
template <class T>
bool all_hold(std::span<const T> ivars, std::span<const int> status, cmp c, T value) noexcept {
  for (std::size_t i = 0; i < ivars.size(); ++i) {
    if (included<T>(status, i) && !compare(load_word(&ivars[i]), c, value)) return false;
  }
  return true;
}
template <class T>
bool any_included(std::span<const T> ivars, std::span<const int> status) noexcept {
  for (std::size_t i = 0; i < ivars.size(); ++i) {
    if (included<T>(status, i)) return true;
  }
  return false;
}
}  // namespace pgas::detail

// Waits until all included words satisfy the comparison.
template <pgas::detail::wait_word T>
void wait_until_all(std::span<const T> ivars, cmp c, T value, std::span<const int> status = {}) {
  pgas::detail::check_words(ivars, status, "wait_until_all");
  const oneside::detail::wait_scope waiting("wait_until_all", -1, pgas::detail::describe_words,
                                            ivars.data());
  oneside::detail::wait_until([&] { return pgas::detail::all_hold(ivars, status, c, value); });
}

// Waits until one included word satisfies the comparison and returns its index (the lowest
// such); ivars.size() when no word is included.
template <pgas::detail::wait_word T>
std::size_t wait_until_any(std::span<const T> ivars, cmp c, T value,
                           std::span<const int> status = {}) {
  pgas::detail::check_words(ivars, status, "wait_until_any");
  if (!pgas::detail::any_included(ivars, status)) return ivars.size();
  std::size_t found = ivars.size();
  const oneside::detail::wait_scope waiting("wait_until_any", -1, pgas::detail::describe_words,
                                            ivars.data());
  oneside::detail::wait_until([&] {
    return pgas::detail::matching(ivars, status, c, value, std::span<std::size_t>(&found, 1),
                                  true) != 0;
  });
  return found;
}

// Waits until at least one included word satisfies the comparison; writes the indices of all
// that do (ascending) to `indices` (at least ivars.size() long) and returns their count (0
// when no word is included).
template <pgas::detail::wait_word T>
std::size_t wait_until_some(std::span<const T> ivars, std::span<std::size_t> indices, cmp c,
                            T value, std::span<const int> status = {}) {
  pgas::detail::check_words(ivars, status, "wait_until_some");
  if (indices.size() < ivars.size()) {
    pgas::detail::bad_words("wait_until_some", "indices must have room for every word");
  }
  if (!pgas::detail::any_included(ivars, status)) return 0;
  std::size_t n = 0;
  const oneside::detail::wait_scope waiting("wait_until_some", -1, pgas::detail::describe_words,
                                            ivars.data());
  oneside::detail::wait_until([&] {
    n = pgas::detail::matching(ivars, status, c, value, indices, false);
    return n != 0;
  });
  return n;
}

// Non-waiting forms: whether the condition holds now (any: the index or ivars.size(); some:
// the count written to indices).
template <pgas::detail::wait_word T>
bool test_until_all(std::span<const T> ivars, cmp c, T value, std::span<const int> status = {}) {
  pgas::detail::check_words(ivars, status, "test_until_all");
  return pgas::detail::all_hold(ivars, status, c, value);
}
template <pgas::detail::wait_word T>
std::size_t test_until_any(std::span<const T> ivars, cmp c, T value,
                           std::span<const int> status = {}) {
  pgas::detail::check_words(ivars, status, "test_until_any");
  std::size_t found = ivars.size();
  pgas::detail::matching(ivars, status, c, value, std::span<std::size_t>(&found, 1), true);
  return found;
}
template <pgas::detail::wait_word T>
std::size_t test_until_some(std::span<const T> ivars, std::span<std::size_t> indices, cmp c,
                            T value, std::span<const int> status = {}) {
  pgas::detail::check_words(ivars, status, "test_until_some");
  if (indices.size() < ivars.size()) {
    pgas::detail::bad_words("test_until_some", "indices must have room for every word");
  }
  return pgas::detail::matching(ivars, status, c, value, indices, false);
}

}  // namespace oneside
