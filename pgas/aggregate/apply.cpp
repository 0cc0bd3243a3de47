// The target's half of aggregation (aggregator.hpp): the registry of aggregated-message
// handlers and the active-message handler that applies a buffer's records in order. Atomics
// run as CPU atomics through transport::detail::amo_apply, the body of every other oneside
// atomic on that memory (the owner's agent on shm, its progress thread on MPI), so they are
// atomic with those; the handler never waits, so a rank whose aggregator waits for buffers
// to come back can always apply the buffers others send it (no deadlock when all flood all).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
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

// The task of a buffer's rpc_ff records: runs them in order (the bodies may wait).
void run_rpc_ff_records(rank_t source, std::span<const std::byte> payload,
                        aggregated_handler_id ff_id) {
  rpc_ff_code_cache code;
  for (std::size_t at = 0; at < payload.size();) {
    record_head h;
    std::memcpy(&h, payload.data() + at, sizeof h);
    at += sizeof h;
    if (h.kind == record_kind::atomic) continue;
    const std::size_t bytes = static_cast<std::size_t>(h.value);
    if (h.kind == record_kind::message && h.where == ff_id) {
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

void apply_at(transport::backend& t, void* p, const record_head& h, const std::byte* data) {
  const std::size_t bytes = update_bytes(h);
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
  std::size_t ff_count = 0;  // rpc_ff records, run by one task (run_rpc_ff_records)
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
    void* p = mapped(t, s, h, update_bytes(h));
    if (p != nullptr && h.kind == record_kind::atomic) __builtin_prefetch(p, 1);
    where.push_back(p);
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
