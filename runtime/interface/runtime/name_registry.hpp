// A table of functions registered by name, for handlers that run when a message names them
// (the transport's active-message handlers, the pgas layer's aggregated handlers). The id is a
// hash of the name, so ranks agree on ids whatever the order of registration. Append-only:
// entries are written before the count is published, so lookups take no lock (the agent thread
// dispatches with them). Filled by static initializers, before any runtime opens: that is why
// such tables live in function-local statics, not in the runtime's context. Layer API.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "runtime/check.hpp"

namespace oneside::detail {

// FNV-1a of the name, never 0.
constexpr std::uint32_t hash_registered_name(std::string_view name) noexcept {
  std::uint32_t h = 2166136261U;
  for (char c : name) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 16777619U;
  }
  return h == 0 ? 1 : h;
}

template <class Fn, std::size_t Capacity = 256>
class name_registry {
 public:
  // Registers `fn` under `name` and returns its id; the same name and function again return
  // the same id. error(arg) naming `call` on a colliding name; error(intern) when full.
  // `what` names the kind of handler in messages.
  std::uint32_t add(std::string_view name, Fn fn, std::string_view call, std::string_view what) {
    const std::uint32_t id = hash_registered_name(name);
    const std::lock_guard lock(write_mutex_);
    const std::size_t n = count_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      if (entries_[i].id != id) continue;
      if (entries_[i].name == name && entries_[i].fn == fn) return id;  // registered again
      raise(error_class::arg, {.call = call},
            std::string(what) + " name '" + std::string(name) + "' collides with '" +
                entries_[i].name + "'");
    }
    ONESIDE_CHECK(n < Capacity, error_class::intern, {.call = call},
                  "too many " + std::string(what) + "s");
    entries_[n] = entry{id, fn, std::string(name)};
    count_.store(n + 1, std::memory_order_release);
    return id;
  }

  // The function registered under `id`, or null. Lock-free.
  Fn find(std::uint32_t id) const noexcept {
    const std::size_t n = count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      if (entries_[i].id == id) return entries_[i].fn;
    }
    return nullptr;
  }

 private:
  struct entry {
    std::uint32_t id = 0;
    Fn fn = nullptr;
    std::string name;
  };
  std::array<entry, Capacity> entries_;
  std::atomic<std::size_t> count_{0};
  std::mutex write_mutex_;
};

}  // namespace oneside::detail
