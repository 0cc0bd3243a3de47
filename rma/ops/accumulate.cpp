// accumulate, get_accumulate, fetch_and_op, compare_and_swap and their request forms
// (COM-11 … COM-19, SEM-3 … SEM-6). Checks come first (op and type rules, signatures, the
// target range). Then the operation is applied under the target's stripe locks — directly
// when node memory makes the target and its stripe table reachable, otherwise (user memory
// that did not move into shared memory, a rank on another node) by the target's agent from
// an active message (chunked to the message size, applied in the order sent, so ordering from
// one origin holds: SEM-6), with CPU operations under the same stripes. So node peers and
// remote ranks update a location atomically with respect to each other. See
// ops/stripe_lock.hpp for why every path takes the locks.
#include "ops/accumulate.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <oneside/rma/window.hpp>

#include "context/rma_context.hpp"
#include "ops/request_state.hpp"
#include "ops/resolve.hpp"
#include "ops/stripe_lock.hpp"
#include "runtime/check.hpp"
#include "runtime/layout.hpp"
#include "runtime/op_rules.hpp"
#include "runtime/reduce.hpp"

namespace oneside::rma {
namespace detail {
namespace {

enum class acc_kind : std::uint8_t { accumulate, get_accumulate, compare_and_swap };

struct acc_call {
  std::string_view call;
  acc_kind kind;
  op o;
  const std::byte* origin;
  count_t origin_count;
  const datatype* origin_type;
  std::byte* result;
  count_t result_count;
  const datatype* result_type;
  const std::byte* compare;
  rank_t target;
  disp_t disp;
  count_t target_count;
  const datatype* target_type;
};

// The message header; then `runs` × {address, elements}, then the origin elements (packed as a
// C array of the basic type), then for compare_and_swap the compare value.
struct acc_message {
  std::uint8_t kind;
  std::uint8_t op;
  std::uint8_t basic;
  std::uint8_t reserved;
  std::uint32_t runs;
  std::uint64_t elements;
  std::uint64_t result_address;  // where the old values go in the origin, 0 for none
};
struct element_run {
  std::uint64_t address;
  std::uint64_t elements;
};

std::size_t elements_of(const datatype& t, count_t count) {
  return static_cast<std::size_t>(count) * t.basic_count();
}

// True when count elements of t are a plain C array of the basic type from offset 0.
bool is_packed(const datatype& t, count_t count) {
  if (t.is_predefined()) return true;
  std::size_t runs = 0;
  bool at_zero = false;
  oneside::detail::for_each_element_run(t, count, [&](std::ptrdiff_t off, std::size_t) {
    at_zero = runs == 0 && off == 0;
    ++runs;
  });
  return runs <= 1 && (runs == 0 || at_zero);
}

void pack_elements(const datatype& t, count_t count, const std::byte* src, std::byte* dst,
                   std::size_t ext) {
  oneside::detail::for_each_element_run(t, count, [&](std::ptrdiff_t off, std::size_t k) {
    std::memcpy(dst, src + off, k * ext);
    dst += k * ext;
  });
}

void unpack_elements(const datatype& t, count_t count, const std::byte* src, std::byte* dst,
                     std::size_t ext) {
  oneside::detail::for_each_element_run(t, count, [&](std::ptrdiff_t off, std::size_t k) {
    std::memcpy(dst + off, src, k * ext);
    src += k * ext;
  });
}

void check(window_impl& w, const acc_call& a) {
  const auto fail = [&](error_class ec, std::string_view rule, const std::string& what) {
    w.fail(ec, w.where(a.call, rule, a.target, a.disp), what);
  };
  if (a.target_count < 0 || a.origin_count < 0 || a.result_count < 0) {
    fail(error_class::count, "COM-10", "a count is negative");
  }
  const datatype& tt = *a.target_type;
  if (tt.is_mixed()) {
    fail(error_class::type, "COM-12",
         "accumulate-family calls need datatypes of one basic type, not " + std::string(tt.name()));
  }
  const basic_type b = tt.basic();
  if (a.kind == acc_kind::compare_and_swap) {
    if (!oneside::detail::cas_defined_for(b)) {
      fail(error_class::type, "COM-18",
           "compare_and_swap takes integer, logical and byte types, not " + std::string(tt.name()));
    }
  } else if (a.kind == acc_kind::accumulate && a.o == op::no_op) {
    fail(error_class::op, "COM-15", "no_op is not allowed in accumulate (use get_accumulate)");
  } else {
    const op_use use = a.kind == acc_kind::accumulate ? op_use::accumulate : op_use::get_accumulate;
    if (!op_is_valid(a.o, b, use)) {
      fail(error_class::op, "COM-13",
           std::string(op_name(a.o)) + " is not defined for " + std::string(basic_type_name(b)));
    }
  }
  const std::size_t n = elements_of(tt, a.target_count);
  if (a.o != op::no_op) {
    const datatype& ot = *a.origin_type;
    if (ot.is_mixed() || ot.basic() != b) {
      fail(error_class::type, "COM-12",
           "origin datatype " + std::string(ot.name()) + " is not made of " +
               std::string(basic_type_name(b)));
    }
    if (elements_of(ot, a.origin_count) != n) {
      fail(error_class::type, "COM-6",
           "the origin holds " + std::to_string(elements_of(ot, a.origin_count)) +
               " elements, the target " + std::to_string(n));
    }
    if (a.origin == nullptr && n > 0) fail(error_class::arg, "COM-10", "the origin buffer is null");
  }
  if (a.kind != acc_kind::accumulate) {
    const datatype& rt = *a.result_type;
    if (rt.is_mixed() || rt.basic() != b) {
      fail(error_class::type, "COM-16",
           "result datatype " + std::string(rt.name()) + " is not made of " +
               std::string(basic_type_name(b)));
    }
    if (elements_of(rt, a.result_count) != n) {
      fail(error_class::type, "COM-16",
           "the result holds " + std::to_string(elements_of(rt, a.result_count)) +
               " elements, the target " + std::to_string(n));
    }
    if (a.result == nullptr && n > 0) fail(error_class::arg, "COM-10", "the result buffer is null");
  }
}

// Applies one run of k elements at t (in this process) and records the old values in `old`.
void apply_run(acc_kind kind, op o, basic_type b, std::byte* t, const std::byte* src,
               const std::byte* compare, std::byte* old, std::size_t k, std::size_t ext) {
  if (old != nullptr) std::memcpy(old, t, k * ext);
  if (kind == acc_kind::compare_and_swap) {
    // Bitwise comparison of the data bytes (COM-18); k is 1.
    if (std::memcmp(t, compare, basic_type_size(b)) == 0) std::memcpy(t, src, basic_type_size(b));
    return;
  }
  if (o != op::no_op) oneside::detail::reduce_apply(o, b, t, src, k);
}

void apply_direct(const acc_call& a, const resolved& r, const std::byte* src, std::byte* old) {
  const datatype& tt = *a.target_type;
  const basic_type b = tt.basic();
  const std::size_t ext = oneside::detail::basic_type_extent(b);
  stripe_guard guard(*r.target->stripes);
  oneside::detail::for_each_element_run(tt, a.target_count, [&](std::ptrdiff_t off, std::size_t k) {
    guard.cover(r.address + static_cast<std::uintptr_t>(off), k * ext);
  });
  guard.acquire();
  std::size_t done = 0;
  oneside::detail::for_each_element_run(tt, a.target_count, [&](std::ptrdiff_t off, std::size_t k) {
    apply_run(a.kind, a.o, b, r.direct + off, src != nullptr ? src + done * ext : nullptr,
              a.compare, old != nullptr ? old + done * ext : nullptr, k, ext);
    done += k;
  });
  guard.release();
}

// Ships the operation to the target's agent in messages of at most the transport's size.
void apply_remote(const rma_context& state, const acc_call& a, const resolved& r,
                  const std::byte* src, std::byte* old, transport::completion* done) {
  transport::backend& tp = transport::current();
  const datatype& tt = *a.target_type;
  const basic_type b = tt.basic();
  const std::size_t ext = oneside::detail::basic_type_extent(b);
  const std::size_t limit = tp.caps().max_am_payload;
  const bool carries_origin = a.o != op::no_op;
  const std::size_t per_element = carries_origin ? ext : 0;
  const std::size_t fixed = sizeof(acc_message) + (a.kind == acc_kind::compare_and_swap ? ext : 0);
  // Every message carries at least one element (a network transport's messages may be small).
  ONESIDE_CHECK(limit >= fixed + sizeof(element_run) + std::max<std::size_t>(per_element, 1),
                error_class::intern, {.call = a.call, .target = a.target},
                "the transport's active messages (" + std::to_string(limit) +
                    " bytes) cannot carry one accumulate element");
  std::vector<element_run> runs;
  oneside::detail::for_each_element_run(tt, a.target_count, [&](std::ptrdiff_t off, std::size_t k) {
    runs.push_back({r.address + static_cast<std::uintptr_t>(off), k});
  });
  std::vector<std::byte> payload;
  std::size_t sent = 0;  // elements shipped so far
  std::size_t i = 0;
  std::size_t within = 0;  // elements of runs[i] already shipped
  while (i < runs.size()) {
    // Fill one message with as many (pieces of) runs as fit.
    std::vector<element_run> chunk;
    std::size_t elements = 0;
    while (i < runs.size()) {
      const std::size_t used =
          fixed + (chunk.size() + 1) * sizeof(element_run) + elements * per_element;
      if (used >= limit) break;
      const std::size_t room = limit - used;
      const std::size_t left = runs[i].elements - within;
      const std::size_t take = per_element == 0 ? left : std::min(left, room / per_element);
      if (take == 0) break;
      chunk.push_back({runs[i].address + within * ext, take});
      elements += take;
      within += take;
      if (within == runs[i].elements) {
        ++i;
        within = 0;
      }
    }
    acc_message h{static_cast<std::uint8_t>(a.kind),
                  static_cast<std::uint8_t>(a.o),
                  static_cast<std::uint8_t>(b),
                  0,
                  static_cast<std::uint32_t>(chunk.size()),
                  elements,
                  old != nullptr ? reinterpret_cast<std::uintptr_t>(old + sent * ext) : 0};
    payload.resize(sizeof h + chunk.size() * sizeof(element_run) + elements * per_element +
                   (a.kind == acc_kind::compare_and_swap ? ext : 0));
    std::byte* p = payload.data();
    std::memcpy(p, &h, sizeof h);
    p += sizeof h;
    std::memcpy(p, chunk.data(), chunk.size() * sizeof(element_run));
    p += chunk.size() * sizeof(element_run);
    if (carries_origin) {
      std::memcpy(p, src + sent * ext, elements * ext);
      p += elements * ext;
    }
    if (a.kind == acc_kind::compare_and_swap) std::memcpy(p, a.compare, ext);
    note_transport_op(*r.target);
    tp.am_send(r.target->world, state.accumulate_handler(), payload, done);
    sent += elements;
  }
}

// Before applying directly: complete the accumulates this process sent to the target's agent
// earlier (on another part of the window), so they are not overtaken (SEM-6).
inline void order_after_agent(window_impl& w, target_view& tv) {
  if (tv.agent_pending.load(std::memory_order_relaxed) && w.ordered) {
    w.transport->flush(tv.world);
    tv.agent_pending.store(false, std::memory_order_relaxed);
  }
}

// `count` elements of one contiguous predefined type (origin, result and target alike) at
// memory of the target this process reaches directly: fetch_and_op, compare_and_swap and the
// everyday accumulate and get_accumulate, checked and done inline. Anything else (or anything
// wrong) returns false and takes the general path, which also raises the errors. `origin` is
// null for no_op.
inline bool contiguous_fast(window_impl& w, acc_kind kind, op o, const std::byte* origin,
                            std::byte* result, const std::byte* compare, const datatype& type,
                            count_t count, rank_t target, disp_t disp) noexcept {
  if (!type.is_predefined() || !type.is_contiguous() || target < 0 || target >= w.size ||
      count < 1 || (kind == acc_kind::compare_and_swap && count != 1)) {
    return false;
  }
  const bool carries_origin = o != op::no_op;
  const bool fetching = kind != acc_kind::accumulate;
  if ((carries_origin && origin == nullptr) || (fetching && result == nullptr)) return false;
  const basic_type b = type.basic();
  oneside::detail::reduce_fn fn = nullptr;
  if (kind == acc_kind::compare_and_swap) {
    if (!oneside::detail::cas_defined_for(b) || compare == nullptr) return false;
  } else {
    // The kernel table holds exactly the pairs get_accumulate allows (COM-13 … COM-15).
    fn = oneside::detail::reduce_function(o, b);
    if (fn == nullptr || (kind == acc_kind::accumulate && o == op::no_op)) return false;
  }
  epoch_state& e = w.epoch;
  if (!e.covers(target)) return false;
  target_view& tv = w.target(target);
  std::uint64_t size = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(count), type.size(), &size)) return false;
  const direct_span d = find_direct(w, tv, disp, size);
  if (d.pointer == nullptr) return false;
  if (e.fence_open && !e.fence_used.load(std::memory_order_relaxed)) {
    e.fence_used.store(true, std::memory_order_relaxed);
  }
  order_after_agent(w, tv);
  std::byte* t = d.pointer;
  const std::uintptr_t key = d.address;  // the owner's address: the stripe key
  // Elements [first, first + n): their old values to `result`, then the operation.
  const std::size_t esize = type.size();
  const auto apply = [&](std::size_t first, std::size_t n) {
    const std::size_t at = first * esize;
    if (fetching) std::memcpy(result + at, t + at, n * esize);
    if (kind == acc_kind::compare_and_swap) {
      if (std::memcmp(t, compare, size) == 0) std::memcpy(t, origin, size);
    } else if (carries_origin) {
      fn(t + at, origin + at, n);
    }
  };
  // Stripe by stripe, each element under the lock of the stripe of its first byte (every other
  // path locks every stripe an element touches, so they exclude each other). Accumulates are
  // atomic per element, not as a whole (SEM-4), so holding one stripe at a time is enough,
  // and origins updating neighbouring blocks that share an edge stripe (blocks not aligned to
  // stripes, as in a std::vector) take turns on that stripe only, not on the whole operation.
  const auto elements = static_cast<std::size_t>(count);
  std::size_t first = 0;
  while (first < elements) {
    const std::uintptr_t at = key + first * esize;
    const std::uintptr_t stripe_end = ((at >> stripe_shift) + 1) << stripe_shift;
    const std::size_t n = std::min(elements - first, (stripe_end - at + esize - 1) / esize);
    std::atomic<std::uint32_t>& word = tv.stripes->stripes[stripe_of(at)].word;
    lock_stripe(word);
    apply(first, n);
    unlock_stripe(word);
    first += n;
  }
  return true;
}

// Runs a checked operation. Returns the request of the r-forms.
request run(window_impl& w, const acc_call& a, bool as_request) {
  // r-calls hand back an active request even when the operation is complete already (REQ-12).
  const auto done_request = [as_request] { return as_request ? request(nullptr) : request(); };
  check(w, a);
  const resolved r = resolve_target(w, a.call, a.target, a.disp, a.target_count, *a.target_type);
  if (r.is_null) return done_request();
  const datatype& tt = *a.target_type;
  const std::size_t n = elements_of(tt, a.target_count);
  if (n == 0) return done_request();
  const std::size_t ext = oneside::detail::basic_type_extent(tt.basic());

  // Origin elements as a C array of the basic type.
  const std::byte* src = nullptr;
  std::vector<std::byte> packed;
  if (a.o != op::no_op) {
    src = a.origin;
    if (!is_packed(*a.origin_type, a.origin_count)) {
      packed.resize(n * ext);
      pack_elements(*a.origin_type, a.origin_count, a.origin, packed.data(), ext);
      src = packed.data();
    }
  }
  // Old values: straight into the result buffer when it is a C array and applied here, else
  // through a copy: from the target's agent into a fetch slot when they fit one (exposed
  // memory, which node peers' agents store to directly), else into memory of this call.
  const bool fetching = a.kind != acc_kind::accumulate;
  const bool here = r.direct != nullptr && r.target->stripes != nullptr;
  std::vector<std::byte> old_copy;
  std::byte* old = nullptr;
  rma_context& ctx = rma_context::get(a.call);
  struct slot_guard {
    rma_context& ctx;
    std::byte* slot;
    ~slot_guard() {
      if (slot != nullptr) ctx.give_fetch_slot(slot);
    }
  } slot{ctx, fetching && !here && n * ext <= rma_context::fetch_slot_bytes ? ctx.take_fetch_slot()
                                                                            : nullptr};
  if (fetching) {
    old = a.result;
    if (slot.slot != nullptr) {
      old = slot.slot;
    } else if (!is_packed(*a.result_type, a.result_count) || !here) {
      old_copy.resize(n * ext);
      old = old_copy.data();
    }
  }
  if (here) {
    order_after_agent(w, *r.target);
    apply_direct(a, r, src, old);
  } else {
    // Fetching operations wait for their values (the target's agent answers without the
    // target's help); the others are complete locally once sent (payloads are copied) and
    // remotely at the next flush or unlock.
    transport::completion done;
    apply_remote(ctx, a, r, src, old, fetching ? &done : nullptr);
    if (fetching) {
      w.transport->wait(done);
    } else {
      r.target->agent_pending.store(true, std::memory_order_relaxed);
    }
  }
  if (fetching && old != a.result) {
    unpack_elements(*a.result_type, a.result_count, old, a.result, ext);
  }
  return done_request();
}

}  // namespace

void apply_accumulate_message(transport::backend& t, rank_t source,
                              std::span<const std::byte> payload) {
  acc_message h;
  std::memcpy(&h, payload.data(), sizeof h);
  const auto kind = static_cast<acc_kind>(h.kind);
  const auto o = static_cast<op>(h.op);
  const auto b = static_cast<basic_type>(h.basic);
  const std::size_t ext = oneside::detail::basic_type_extent(b);
  std::vector<element_run> runs(h.runs);
  const std::byte* p = payload.data() + sizeof h;
  std::memcpy(runs.data(), p, runs.size() * sizeof(element_run));
  p += runs.size() * sizeof(element_run);
  const std::byte* src = o != op::no_op ? p : nullptr;
  if (src != nullptr) p += h.elements * ext;
  const std::byte* compare = kind == acc_kind::compare_and_swap ? p : nullptr;
  std::vector<std::byte> old(h.result_address != 0 ? h.elements * ext : 0);

  stripe_guard guard(rma_context::get("rma agent").stripes());
  for (const element_run& r : runs) guard.cover(r.address, r.elements * ext);
  guard.acquire();
  std::size_t done = 0;
  for (const element_run& r : runs) {
    apply_run(kind, o, b, reinterpret_cast<std::byte*>(r.address),
              src != nullptr ? src + done * ext : nullptr, compare,
              old.empty() ? nullptr : old.data() + done * ext, r.elements, ext);
    done += r.elements;
  }
  guard.release();
  // As the transport's owner-side atomics do: whoever sleeps here waiting for these words
  // learns of the change without a wake() from the origin.
  if (o != op::no_op) t.wake(t.rank());
  if (!old.empty()) t.put(source, h.result_address, old);
}

}  // namespace detail

using detail::acc_call;
using detail::acc_kind;

namespace {
const std::byte* cbytes(const void* p) {
  return static_cast<const std::byte*>(p);
}
std::byte* mbytes(void* p) {
  return static_cast<std::byte*>(p);
}
}  // namespace

void window::accumulate(const void* origin, count_t origin_count, const datatype& origin_type,
                        rank_t target, disp_t target_disp, count_t target_count,
                        const datatype& target_type, op o) const {
  detail::window_impl& w = checked("window::accumulate");
  if (origin_count == target_count && origin_type == target_type &&
      detail::contiguous_fast(w, acc_kind::accumulate, o, cbytes(origin), nullptr, nullptr,
                              target_type, target_count, target, target_disp)) {
    return;
  }
  detail::run(w,
              acc_call{"window::accumulate", acc_kind::accumulate, o, cbytes(origin), origin_count,
                       &origin_type, nullptr, 0, &target_type, nullptr, target, target_disp,
                       target_count, &target_type},
              false);
}

request window::raccumulate(const void* origin, count_t origin_count, const datatype& origin_type,
                            rank_t target, disp_t target_disp, count_t target_count,
                            const datatype& target_type, op o) const {
  detail::window_impl& w = checked("window::raccumulate");
  detail::require_passive_epoch(w, "window::raccumulate", target);
  return detail::run(w,
                     acc_call{"window::raccumulate", acc_kind::accumulate, o, cbytes(origin),
                              origin_count, &origin_type, nullptr, 0, &target_type, nullptr, target,
                              target_disp, target_count, &target_type},
                     true);
}

void window::get_accumulate(const void* origin, count_t origin_count, const datatype& origin_type,
                            void* result, count_t result_count, const datatype& result_type,
                            rank_t target, disp_t target_disp, count_t target_count,
                            const datatype& target_type, op o) const {
  detail::window_impl& w = checked("window::get_accumulate");
  const bool same_layout =
      result_count == target_count && result_type == target_type &&
      (o == op::no_op || (origin_count == target_count && origin_type == target_type));
  if (same_layout && detail::contiguous_fast(
                         w, acc_kind::get_accumulate, o, o == op::no_op ? nullptr : cbytes(origin),
                         mbytes(result), nullptr, target_type, target_count, target, target_disp)) {
    return;
  }
  detail::run(w,
              acc_call{"window::get_accumulate", acc_kind::get_accumulate, o, cbytes(origin),
                       origin_count, &origin_type, mbytes(result), result_count, &result_type,
                       nullptr, target, target_disp, target_count, &target_type},
              false);
}

request window::rget_accumulate(const void* origin, count_t origin_count,
                                const datatype& origin_type, void* result, count_t result_count,
                                const datatype& result_type, rank_t target, disp_t target_disp,
                                count_t target_count, const datatype& target_type, op o) const {
  detail::window_impl& w = checked("window::rget_accumulate");
  detail::require_passive_epoch(w, "window::rget_accumulate", target);
  return detail::run(
      w,
      acc_call{"window::rget_accumulate", acc_kind::get_accumulate, o, cbytes(origin), origin_count,
               &origin_type, mbytes(result), result_count, &result_type, nullptr, target,
               target_disp, target_count, &target_type},
      true);
}

void window::fetch_and_op(const void* origin, void* result, const datatype& type, rank_t target,
                          disp_t target_disp, op o) const {
  detail::window_impl& w = checked("window::fetch_and_op");
  if (detail::contiguous_fast(w, acc_kind::get_accumulate, o,
                              o == op::no_op ? nullptr : cbytes(origin), mbytes(result), nullptr,
                              type, 1, target, target_disp)) {
    return;
  }
  if (!type.is_predefined()) {
    w.fail(error_class::type, w.where("window::fetch_and_op", "COM-17", target, target_disp),
           "fetch_and_op takes a predefined datatype, not " + std::string(type.name()));
  }
  detail::run(w,
              acc_call{"window::fetch_and_op", acc_kind::get_accumulate, o, cbytes(origin), 1,
                       &type, mbytes(result), 1, &type, nullptr, target, target_disp, 1, &type},
              false);
}

void window::compare_and_swap(const void* origin, const void* compare, void* result,
                              const datatype& type, rank_t target, disp_t target_disp) const {
  detail::window_impl& w = checked("window::compare_and_swap");
  if (detail::contiguous_fast(w, acc_kind::compare_and_swap, op::replace, cbytes(origin),
                              mbytes(result), cbytes(compare), type, 1, target, target_disp)) {
    return;
  }
  if (!type.is_predefined()) {
    w.fail(error_class::type, w.where("window::compare_and_swap", "COM-18", target, target_disp),
           "compare_and_swap takes a predefined datatype, not " + std::string(type.name()));
  }
  if (compare == nullptr) {
    w.fail(error_class::arg, w.where("window::compare_and_swap", "COM-18", target, target_disp),
           "the compare buffer is null");
  }
  detail::run(
      w,
      acc_call{"window::compare_and_swap", acc_kind::compare_and_swap, op::replace, cbytes(origin),
               1, &type, mbytes(result), 1, &type, cbytes(compare), target, target_disp, 1, &type},
      false);
}

}  // namespace oneside::rma
