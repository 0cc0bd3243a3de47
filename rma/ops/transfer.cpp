// put and get (COM-6 … COM-9) and their request forms (REQ-3, REQ-4). Contiguous data to a
// load/store-reachable target is one memcpy; other layouts move as matched byte runs (memcpy
// per run when reachable, iovecs through the transport otherwise: cross-memory attach on shm),
// never element by element.
#include <cstring>
#include <string>
#include <vector>

#include <oneside/rma/window.hpp>
#include <oneside/runtime/copy.hpp>

#include "ops/request_state.hpp"
#include "ops/resolve.hpp"
#include "rma/access.hpp"
#include "runtime/layout.hpp"
#include "runtime/transport.hpp"

namespace oneside::rma {
namespace {

using detail::resolved;
using detail::window_impl;

void check_signature(window_impl& w, std::string_view call, count_t origin_count,
                     const datatype& origin_type, rank_t target, disp_t disp, count_t target_count,
                     const datatype& target_type) {
  if (origin_count < 0 || target_count < 0) [[unlikely]] {
    w.fail(error_class::count, w.where(call, "COM-10", target, disp),
           origin_count < 0 ? "the origin count is negative" : "the target count is negative");
  }
  // The common case (one type, equal counts) needs no signature walk.
  if (origin_type == target_type && origin_count == target_count) return;
  if (!oneside::detail::signatures_match(origin_count, origin_type, target_count, target_type))
      [[unlikely]] {
    w.fail(error_class::type, w.where(call, "COM-6", target, disp),
           "the origin (" + std::to_string(origin_count) + " x " + std::string(origin_type.name()) +
               ") and target (" + std::to_string(target_count) + " x " +
               std::string(target_type.name()) + ") type signatures differ");
  }
}

// The common case checked and done inline: one contiguous type and equal counts, to memory of
// the target this process reaches directly. Anything else (or anything wrong) returns false
// and takes the general path, which also raises the errors.
bool transfer_fast(window_impl& w, bool write, std::byte* origin, count_t count,
                   const datatype& type, rank_t target, disp_t disp) noexcept {
  if (!type.is_contiguous() || origin == nullptr || count <= 0 || target < 0 || target >= w.size) {
    return false;
  }
  detail::epoch_state& e = w.epoch;
  if (!e.covers(target)) return false;
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(count), type.size(), &bytes)) return false;
  const detail::direct_span d = detail::find_direct(w, w.target(target), disp, bytes);
  if (d.pointer == nullptr) return false;
  if (e.fence_open && !e.fence_used.load(std::memory_order_relaxed)) {
    e.fence_used.store(true, std::memory_order_relaxed);
  }
  std::byte* to = write ? d.pointer : origin;
  const std::byte* from = write ? origin : d.pointer;
  // A word is one load and one store, not a call.
  if (bytes == 8) {
    std::memcpy(to, from, 8);
  } else {
    oneside::detail::copy_bytes(to, from, bytes);
  }
  return true;
}

// put (write) or get, every case and every check; the origin buffer is `origin`. put and get
// complete at the next flush, unlock, complete or fence (MPI's rule, COM-2): the transport
// may keep them in flight until its flush of the target (transport::deferred()); rput and rget
// hand back requests that are complete, so their transfers complete before returning.
[[gnu::noinline]] void transfer_general(window_impl& w, std::string_view call, bool write,
                                        std::byte* origin, count_t origin_count,
                                        const datatype& origin_type, rank_t target, disp_t disp,
                                        count_t target_count, const datatype& target_type,
                                        bool until_flush) {
  check_signature(w, call, origin_count, origin_type, target, disp, target_count, target_type);
  const resolved r = detail::resolve_target(w, call, target, disp, target_count, target_type);
  if (r.is_null) return;
  const std::size_t bytes = static_cast<std::size_t>(origin_count) * origin_type.size();
  if (bytes == 0) return;
  if (origin == nullptr) [[unlikely]] {
    w.fail(error_class::arg, w.where(call, "COM-10", target, disp, bytes),
           "the origin buffer is null");
  }
  // The bytes move through the access interface, as the pgas layer's do; what goes through
  // the transport is counted for the target's flush after it was issued (a flush begun before
  // must not count it complete).
  const detail::access_target at{r.target->world, r.address, r.direct};
  transport::backend& tp = *w.transport;
  const bool contiguous = origin_type.is_contiguous() && target_type.is_contiguous();
  const char* const name = call.data();  // the window's calls are string literals
  bool in_flight = false;
  if (contiguous) {
    in_flight = write ? detail::put(tp, at, origin, bytes, until_flush)
                      : detail::get(tp, at, origin, bytes, until_flush);
  } else if (write) {
    in_flight = detail::put_layout(tp, at, origin, origin_count, origin_type, target_count,
                                   target_type, name, until_flush);
  } else {
    in_flight = detail::get_layout(tp, at, origin, origin_count, origin_type, target_count,
                                   target_type, name, until_flush);
  }
  if (in_flight) detail::note_transport_op(*r.target);
}

// The fast path inline, the rest behind one call.
inline void transfer(window_impl& w, std::string_view call, bool write, std::byte* origin,
                     count_t origin_count, const datatype& origin_type, rank_t target, disp_t disp,
                     count_t target_count, const datatype& target_type, bool until_flush = true) {
  if (origin_count == target_count && origin_type == target_type &&
      transfer_fast(w, write, origin, origin_count, origin_type, target, disp)) {
    return;
  }
  transfer_general(w, call, write, origin, origin_count, origin_type, target, disp, target_count,
                   target_type, until_flush);
}

std::byte* as_bytes(const void* p) {
  return static_cast<std::byte*>(const_cast<void*>(p));
}

}  // namespace

void window::put(const void* origin, count_t origin_count, const datatype& origin_type,
                 rank_t target, disp_t target_disp, count_t target_count,
                 const datatype& target_type) const {
  transfer(checked("window::put"), "window::put", true, as_bytes(origin), origin_count, origin_type,
           target, target_disp, target_count, target_type);
}

void window::get(void* origin, count_t origin_count, const datatype& origin_type, rank_t target,
                 disp_t target_disp, count_t target_count, const datatype& target_type) const {
  transfer(checked("window::get"), "window::get", false, static_cast<std::byte*>(origin),
           origin_count, origin_type, target, target_disp, target_count, target_type);
}

// On shm every transfer is complete when the call returns, so the requests are born complete
// (their wait returns at once); a transport with deferred completion will hand back pending
// ones.
request window::rput(const void* origin, count_t origin_count, const datatype& origin_type,
                     rank_t target, disp_t target_disp, count_t target_count,
                     const datatype& target_type) const {
  detail::window_impl& w = checked("window::rput");
  detail::require_passive_epoch(w, "window::rput", target);
  transfer(w, "window::rput", true, as_bytes(origin), origin_count, origin_type, target,
           target_disp, target_count, target_type, false);
  return request(nullptr);
}

request window::rget(void* origin, count_t origin_count, const datatype& origin_type, rank_t target,
                     disp_t target_disp, count_t target_count, const datatype& target_type) const {
  detail::window_impl& w = checked("window::rget");
  detail::require_passive_epoch(w, "window::rget", target);
  transfer(w, "window::rget", false, static_cast<std::byte*>(origin), origin_count, origin_type,
           target, target_disp, target_count, target_type, false);
  return request(nullptr);
}

}  // namespace oneside::rma
