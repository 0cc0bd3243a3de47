// What every transport shares: the active-message handler registry, the memory handles and
// access to the open runtime's transport.
#include "runtime/transport.hpp"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

#include <oneside/runtime/wait.hpp>

#include "context/context.hpp"
#include "runtime/check.hpp"
#include "runtime/name_registry.hpp"
#include "transport/am_registry.hpp"
#include "transport/runtime_backend.hpp"

namespace oneside::transport {
namespace {

oneside::detail::name_registry<am_handler>& registry() {
  static oneside::detail::name_registry<am_handler> r;
  return r;
}

}  // namespace

am_handler_id register_am_handler(std::string_view name, am_handler fn) {
  return registry().add(name, fn, "register_am_handler", "active-message handler");
}

namespace detail {
am_handler find_am_handler(am_handler_id id) noexcept {
  return registry().find(id);
}

void check_am_send(rank_t dst, am_handler_id handler, std::size_t bytes, std::size_t max_payload) {
  ONESIDE_CHECK(find_am_handler(handler) != nullptr, error_class::arg,
                {.call = "am_send", .target = dst}, "unknown active-message handler");
  check_am_payload(dst, bytes, max_payload);
}

void run_am_handler(backend& front, rank_t self, rank_t source, am_handler_id id,
                    std::span<const std::byte> payload) noexcept {
  const am_handler fn = find_am_handler(id);
  if (fn == nullptr) {
    std::fprintf(stderr,
                 "oneside: rank %d: active message from rank %d names handler %08x, which this "
                 "rank has not registered; aborting\n",
                 self, source, id);
    std::abort();
  }
  try {
    fn(front, source, payload);
  } catch (const std::exception& e) {
    // Origins check arguments before sending, so a failing handler is a broken invariant.
    std::fprintf(stderr, "oneside: rank %d: active message from rank %d failed: %s; aborting\n",
                 self, source, e.what());
    std::abort();
  }
}

void check_am_payload(rank_t dst, std::size_t bytes, std::size_t max_payload) {
  ONESIDE_CHECK(
      bytes <= max_payload, error_class::arg, {.call = "am_send", .target = dst, .bytes = bytes},
      "payload larger than the largest active message (" + std::to_string(max_payload) + " bytes)");
}
}  // namespace detail

bool runtime_backend::test_entries(completion& c) {
  auto& entries = c.entries();
  std::erase_if(entries, [&](const completion::pending& p) { return is_complete(p); });
  if (!entries.empty()) return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  oneside::detail::cross_process_acquire();
  return true;
}

void runtime_backend::wait_entries(completion& c) {
  if (test_entries(c)) return;
  oneside::detail::wait_until(local_doorbell(), [&] { return test_entries(c); });
}

segment::segment(backend* owner, void* base, std::size_t size, std::uint64_t id) noexcept
    : memory_handle(owner, base, size, id) {
  if (owner != nullptr && base != nullptr) {
    owner->live_handles_.fetch_add(1, std::memory_order_relaxed);
  }
}

segment::~segment() {
  if (owner() != nullptr && base() != nullptr) {
    owner()->release(*this);
    owner()->live_handles_.fetch_sub(1, std::memory_order_release);
  }
}

exposure::exposure(backend* owner, void* base, std::size_t size, std::uint64_t id) noexcept
    : memory_handle(owner, base, size, id) {
  if (owner != nullptr) owner->live_handles_.fetch_add(1, std::memory_order_relaxed);
}

exposure::~exposure() {
  if (owner() != nullptr) {
    owner()->release(*this);
    owner()->live_handles_.fetch_sub(1, std::memory_order_release);
  }
}

std::optional<reach_table::entry> reach_table::find(rank_t r, std::uintptr_t addr,
                                                    std::size_t len) noexcept {
  if (r < 0 || r >= ranks_) return std::nullopt;
  rank_view& s = slots_[static_cast<std::size_t>(r)];
  if (s.version == nullptr) return std::nullopt;
  const table::reader t(s.entries);
  if (t.tag() == s.version->load(std::memory_order_acquire)) {
    const std::optional<entry> e = look_up(s, t, addr, len);
    if (t.valid()) return e;
  }
  return find_current(r, addr, len);  // stale, or rewritten while we read it
}

void* reach_table::local_slow(rank_t r, std::uintptr_t addr, std::size_t len) noexcept {
  const std::optional<entry> e = find(r, addr, len);
  return e && e->local != nullptr ? e->local + (addr - e->base) : nullptr;
}

std::optional<reach_table::entry> reach_table::look_up(rank_view& s, const table::reader& t,
                                                       std::uintptr_t addr,
                                                       std::size_t len) noexcept {
  const auto covers = [&](const entry& e) {
    return addr - e.base <= e.len && len <= e.len - (addr - e.base);
  };
  const std::size_t n = t.size();
  if (const std::size_t h = s.hint.load(std::memory_order_relaxed); h < n) {
    const entry e = t[h];
    if (e.local != nullptr && covers(e)) return e;  // only mapped entries are hints
  }
  std::optional<entry> exposed;
  for (std::size_t i = 0; i < n; ++i) {
    const entry e = t[i];
    if (e.base > addr) break;
    if (covers(e)) {
      if (e.local != nullptr) {
        s.hint.store(static_cast<std::uint32_t>(i), std::memory_order_relaxed);
        return e;
      }
      exposed = e;
    }
  }
  return exposed;
}

completion* deferred() noexcept {
  static completion none;
  return &none;
}

backend& current(std::string_view call) {
  return *oneside::detail::require_context(call).transport;
}

backend* current_if_open() noexcept {
  oneside::detail::context* c = oneside::detail::current_context();
  return c != nullptr ? c->transport.get() : nullptr;
}

}  // namespace oneside::transport
