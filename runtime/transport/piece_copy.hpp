// How a backend's message handler moves one piece of a put into this rank's memory, or of a get
// out of it, on a thread of the owner (the shm agent, the MPI progress thread). An aligned 4- or
// 8-byte word moves as one relaxed atomic access, as the load/store path's single-word stores
// do: a word this rank's threads wait on (wait_until, signals) is never torn, and their atomic
// loads and the handler's write are not a data race. Anything else is a byte copy.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <oneside/runtime/copy.hpp>

namespace oneside::transport::detail {

template <class Word>
bool is_word(const void* mine, std::size_t len) noexcept {
  return len == sizeof(Word) && reinterpret_cast<std::uintptr_t>(mine) % alignof(Word) == 0;
}

template <class Word>
void store_word(void* mine, const void* data) noexcept {
  Word w;
  std::memcpy(&w, data, sizeof w);
  std::atomic_ref<Word>(*static_cast<Word*>(mine)).store(w, std::memory_order_relaxed);
}

template <class Word>
void load_word(void* out, const void* mine) noexcept {
  const Word w = std::atomic_ref<Word>(*static_cast<Word*>(const_cast<void*>(mine)))
                     .load(std::memory_order_relaxed);
  std::memcpy(out, &w, sizeof w);
}

// Copies len bytes from `data` (a message) into `mine` (this rank's memory).
inline void copy_in(void* mine, const void* data, std::size_t len) noexcept {
  if (is_word<std::uint64_t>(mine, len)) {
    store_word<std::uint64_t>(mine, data);
  } else if (is_word<std::uint32_t>(mine, len)) {
    store_word<std::uint32_t>(mine, data);
  } else {
    oneside::detail::copy_bytes(mine, data, len);
  }
}

// Copies len bytes from `mine` (this rank's memory) to `out` (a reply).
inline void copy_out(void* out, const void* mine, std::size_t len) noexcept {
  if (is_word<std::uint64_t>(mine, len)) {
    load_word<std::uint64_t>(out, mine);
  } else if (is_word<std::uint32_t>(mine, len)) {
    load_word<std::uint32_t>(out, mine);
  } else {
    oneside::detail::copy_bytes(out, mine, len);
  }
}

}  // namespace oneside::transport::detail
