// The target's half of aggregation (aggregator.hpp): the registry of aggregated-message
// handlers and the active-message handler that applies a buffer's records in order. Atomics
// run as CPU atomics through transport::detail::amo_apply, the body of every other oneside
// atomic on that memory (the owner's agent on shm, its progress thread on MPI), so they are
// atomic with those; the handler never waits, so a rank whose aggregator waits for buffers
// to come back can always apply the buffers others send it (no deadlock when all flood all).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <oneside/pgas/async.hpp>
#include <oneside/runtime/copy.hpp>
#include <oneside/runtime/wait.hpp>

#include "aggregate/records.hpp"
#include "context/pgas_context.hpp"
#include "rpc/rpc_wire.hpp"
#include "runtime/amo_local.hpp"
#include "runtime/check.hpp"
#include "runtime/name_registry.hpp"

namespace oneside::pgas::detail {
namespace {

oneside::detail::name_registry<aggregated_handler>& registry() {
  static oneside::detail::name_registry<aggregated_handler> r;
  return r;
}

[[noreturn]] void broken_batch(rank_t source, const char* what) noexcept {
  std::fprintf(stderr, "oneside: an aggregated buffer from rank %d %s; aborting\n", source, what);
  std::abort();
}

void run_message(rank_t source, const record_head& h, const std::byte* data) noexcept {
  const aggregated_handler fn =
      find_aggregated_handler(static_cast<aggregated_handler_id>(h.where));
  if (fn == nullptr) broken_batch(source, "names a handler this rank has not registered");
  try {
    fn(source, std::span<const std::byte>(data, static_cast<std::size_t>(h.value)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oneside: an aggregated message from rank %d failed: %s; aborting\n",
                 source, e.what());
    std::abort();
  }
}

// The task of a buffer's rpc_ff records (runs of calls, and messages of single calls whose
// arguments are parked): runs them in order (the bodies may wait).
void run_rpc_ff_records(rank_t source, std::span<const std::byte> payload,
                        aggregated_handler_id ff_id) {
  rpc_ff_code_cache code;
  for (std::size_t at = 0; at < payload.size();) {
    record_head h;
    std::memcpy(&h, payload.data() + at, sizeof h);
    at += sizeof h;
    if (h.kind == record_kind::atomic) continue;
    const std::size_t bytes = static_cast<std::size_t>(h.value);
    if (h.kind == record_kind::calls) {
      run_rpc_ff_calls(source, h.where, (h.flags & record_sized) != 0, payload.subspan(at, bytes),
                       code);
    } else if (h.kind == record_kind::message && h.where == ff_id) {
      run_rpc_ff_here(source, payload.subspan(at, bytes), code);
    }
    at += padded(bytes);
  }
}

void apply_batch(transport::backend& t, rank_t source, std::span<const std::byte> payload) {
  apply_records(t, source, payload, true);
}

const transport::am_handler_id g_batch_handler =
    transport::register_am_handler("oneside.aggregator.batch", &apply_batch);

}  // namespace

transport::am_handler_id batch_handler() {
  return g_batch_handler;
}

namespace {

// Where this process loads and stores the memory a record changes, or null (the transport's
// path then).
void* mapped(transport::backend& t, pgas_context* s, const record_head& h, std::size_t bytes) {
  const auto addr = static_cast<std::uintptr_t>(h.where);
  if (h.rank == t.rank()) return reinterpret_cast<void*>(addr);
  return s != nullptr ? s->local_address(h.rank, addr, bytes) : nullptr;
}

std::size_t update_bytes(const record_head& h) noexcept {
  return h.kind == record_kind::atomic
             ? transport::amo_type_size(static_cast<transport::amo_type>(h.type))
             : static_cast<std::size_t>(h.value);
}

// One integer word of type W updated by a plain load and store (relaxed atomic ones: plain
// instructions, no lock, no data race in the language's sense).
template <class W>
void plain_update(void* p, transport::amo_op op, std::uint64_t bits) noexcept {
  std::atomic_ref<W> w(*static_cast<W*>(p));
  const W v = static_cast<W>(bits);
  const W old = w.load(std::memory_order_relaxed);
  W now = old;
  switch (op) {
    case transport::amo_op::add: {
      // Wraps like the transport's atomic add (unsigned: no signed overflow).
      using U = std::make_unsigned_t<W>;
      now = static_cast<W>(static_cast<U>(static_cast<U>(old) + static_cast<U>(v)));
      break;
    }
    case transport::amo_op::band:
      now = old & v;
      break;
    case transport::amo_op::bor:
      now = old | v;
      break;
    case transport::amo_op::bxor:
      now = old ^ v;
      break;
    case transport::amo_op::min:
      now = v < old ? v : old;
      break;
    case transport::amo_op::max:
      now = v > old ? v : old;
      break;
    default:
      std::abort();  // senders only buffer the operations above
  }
  w.store(now, std::memory_order_relaxed);
}

void plain_apply(void* p, const record_head& h) noexcept {
  const auto op = static_cast<transport::amo_op>(h.op);
  switch (static_cast<transport::amo_type>(h.type)) {
    case transport::amo_type::i32:
      plain_update<std::int32_t>(p, op, h.value);
      break;
    case transport::amo_type::u32:
      plain_update<std::uint32_t>(p, op, h.value);
      break;
    case transport::amo_type::i64:
      plain_update<std::int64_t>(p, op, h.value);
      break;
    case transport::amo_type::u64:
      plain_update<std::uint64_t>(p, op, h.value);
      break;
    default:
      std::abort();  // aggregators buffer integer words only
  }
}

template <class W, class Op>
void plain_run(std::span<const std::byte> payload, const std::vector<void*>& where, Op op) {
  const std::byte* rec = payload.data() + offsetof(record_head, value);
  for (void* p : where) {
    std::uint64_t bits;
    std::memcpy(&bits, rec, sizeof bits);
    rec += sizeof(record_head);
    std::atomic_ref<W> w(*static_cast<W*>(p));
    w.store(op(w.load(std::memory_order_relaxed), static_cast<W>(bits)), std::memory_order_relaxed);
  }
}

template <class W>
void plain_run_of(transport::amo_op op, std::span<const std::byte> payload,
                  const std::vector<void*>& where) {
  switch (op) {
    case transport::amo_op::add:
      return plain_run<W>(payload, where, [](W a, W b) { return static_cast<W>(a + b); });
    case transport::amo_op::band:
      return plain_run<W>(payload, where, [](W a, W b) { return static_cast<W>(a & b); });
    case transport::amo_op::bor:
      return plain_run<W>(payload, where, [](W a, W b) { return static_cast<W>(a | b); });
    case transport::amo_op::bxor:
      return plain_run<W>(payload, where, [](W a, W b) { return static_cast<W>(a ^ b); });
    case transport::amo_op::min:
      return plain_run<W>(payload, where, [](W a, W b) { return b < a ? b : a; });
    case transport::amo_op::max:
      return plain_run<W>(payload, where, [](W a, W b) { return b > a ? b : a; });
    default:
      std::abort();  // senders only buffer the operations above
  }
}

// A buffer of plain updates with one operation and type (`where`: each record's word).
void apply_plain_run(std::span<const std::byte> payload, const std::vector<void*>& where) {
  record_head h;
  std::memcpy(&h, payload.data(), sizeof h);
  const auto op = static_cast<transport::amo_op>(h.op);
  switch (static_cast<transport::amo_type>(h.type)) {
    case transport::amo_type::i32:
      return plain_run_of<std::int32_t>(op, payload, where);
    case transport::amo_type::u32:
      return plain_run_of<std::uint32_t>(op, payload, where);
    case transport::amo_type::i64:
      return plain_run_of<std::int64_t>(op, payload, where);
    case transport::amo_type::u64:
      return plain_run_of<std::uint64_t>(op, payload, where);
    default:
      std::abort();  // aggregators buffer integer words only
  }
}

void apply_at(transport::backend& t, void* p, const record_head& h, const std::byte* data) {
  const std::size_t bytes = update_bytes(h);
  if (h.kind == record_kind::atomic && (h.flags & record_plain) != 0 && p != nullptr) {
    plain_apply(p, h);
    return;
  }
  if (h.kind == record_kind::atomic) {
    const transport::amo_args args{static_cast<transport::amo_op>(h.op),
                                   static_cast<transport::amo_type>(h.type), h.value, 0};
    if (p != nullptr) {
      transport::detail::amo_apply(p, args, nullptr);
    } else {
      // A node peer's memory not mapped here (an exposure that stayed private): its owner's
      // path, as any other atomic on it.
      t.amo(h.rank, static_cast<std::uintptr_t>(h.where), args, nullptr);
    }
  } else if (p != nullptr) {
    oneside::detail::copy_bytes(p, data, bytes);
  } else {
    t.put(h.rank, static_cast<std::uintptr_t>(h.where), std::span<const std::byte>(data, bytes));
  }
}

}  // namespace

// Two passes: the first finds where each update lands and asks for those cache lines all at
// once (the updates of a batch usually hit random words of a large table, and a locked
// instruction lets no later load start before it completes, so without this every update
// would wait for its own cache miss in turn); the second applies the records in order. Then,
// if asked, one wake-up per rank whose memory changed.
void apply_records(transport::backend& t, rank_t source, std::span<const std::byte> payload,
                   bool wake) {
  // Not a thread-local scratch: the transport's path for unmapped memory may run progress,
  // and with it another batch, on this thread.
  std::vector<void*> where;
  where.reserve(payload.size() / sizeof(record_head));
  pgas_context* s = get_context_if_open();
  const aggregated_handler_id ff_id = rpc_ff_handler();
  std::size_t ff_count = 0;  // rpc_ff calls, run by one task (run_rpc_ff_records)
  record_head first{};       // the first update
  bool uniform = true;       // every record a plain update like `first`, mapped here
  std::size_t at = 0;
  while (at < payload.size()) {
    if (payload.size() - at < sizeof(record_head)) broken_batch(source, "is cut short");
    record_head h;
    std::memcpy(&h, payload.data() + at, sizeof h);
    at += sizeof h;
    if (h.kind != record_kind::atomic) {
      if (h.value > payload.size() - at) broken_batch(source, "is cut short");
      at += padded(static_cast<std::size_t>(h.value));
    }
    if (h.kind == record_kind::message) {
      if (h.where == ff_id) ++ff_count;
      continue;
    }
    if (h.kind == record_kind::calls) {
      ff_count += static_cast<std::size_t>(h.where);
      continue;
    }
    void* p = mapped(t, s, h, update_bytes(h));
    if (p != nullptr && h.kind == record_kind::atomic) __builtin_prefetch(p, 1);
    if (where.empty()) first = h;
    uniform = uniform && p != nullptr && h.kind == record_kind::atomic &&
              (h.flags & record_plain) != 0 && h.op == first.op && h.type == first.type &&
              h.rank == first.rank;
    where.push_back(p);
  }
  if (uniform && !where.empty() && where.size() * sizeof(record_head) == payload.size()) {
    // Only plain updates of one operation and type to one rank, all mapped here (an
    // aggregator's usual buffer with atomic_apply = false): one tight loop, no dispatch per
    // record; the words were prefetched above.
    apply_plain_run(payload, where);
    if (wake) wake_rank(t, first.rank);
    return;
  }
  std::vector<rank_t> touched;
  std::size_t next = 0;
  at = 0;
  while (at < payload.size()) {
    record_head h;
    std::memcpy(&h, payload.data() + at, sizeof h);
    at += sizeof h;
    const std::byte* data = payload.data() + at;
    if (h.kind != record_kind::atomic) at += padded(static_cast<std::size_t>(h.value));
    if (h.kind == record_kind::message) {
      if (h.where != ff_id) run_message(source, h, data);
      continue;
    }
    if (h.kind == record_kind::calls) continue;
    apply_at(t, where[next++], h, data);
    if (touched.empty() || touched.back() != h.rank) {
      if (std::find(touched.begin(), touched.end(), h.rank) == touched.end()) {
        touched.push_back(h.rank);
      }
    }
  }
  if (ff_count != 0) {
    // One copy of the buffer and one task for all its calls (the agent must not run bodies:
    // they may wait).
    try {
      async_arena().enqueue(
          [source, ff_count, ff_id, copy = std::vector<std::byte>(payload.begin(), payload.end())] {
            run_rpc_ff_records(source, copy, ff_id);
            count_rpc_ff_run(source, ff_count);
          });
    } catch (const std::exception& e) {
      std::fprintf(stderr, "oneside: aggregated rpc_ff from rank %d: %s; aborting\n", source,
                   e.what());
      std::abort();
    }
  }
  if (wake) {
    for (rank_t r : touched) wake_rank(t, r);
  }
}

void wake_rank(transport::backend& t, rank_t rank) noexcept {
  if (rank == t.rank()) {
    oneside::detail::notify(t.local_doorbell());
  } else if (oneside::detail::doorbell* bell = t.peer_doorbell(rank)) {
    oneside::detail::notify(*bell);
  } else {
    t.wake(rank);
  }
}

aggregated_handler find_aggregated_handler(aggregated_handler_id id) noexcept {
  return registry().find(id);
}

}  // namespace oneside::pgas::detail

namespace oneside {

aggregated_handler_id register_aggregated_handler(std::string_view name, aggregated_handler fn) {
  ONESIDE_CHECK(!name.empty() && fn != nullptr, error_class::arg,
                {.call = "register_aggregated_handler"}, "a handler needs a name and a function");
  return pgas::detail::registry().add(name, fn, "register_aggregated_handler",
                                      "aggregated handler");
}

}  // namespace oneside
