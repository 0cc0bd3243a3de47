// The sender's half of aggregation (aggregator.hpp): per route (a destination rank, or with node
// routing the rank of a remote node that spreads its node's updates) one buffer being filled
// and a ring of completions of buffers in flight; same-word combining over the buffer being
// filled; the registry of live aggregators that quiet() flushes.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <oneside/pgas/aggregator.hpp>
#include <oneside/pgas/communication.hpp>
#include <oneside/runtime/wait.hpp>

#include "aggregate/records.hpp"
#include "comm/remote.hpp"
#include "context/pgas_context.hpp"
#include "pgas/owned_lock.hpp"
#include "rpc/rpc_wire.hpp"
#include "runtime/amo_local.hpp"
#include "runtime/check.hpp"
#include "runtime/settings.hpp"

namespace oneside::pgas::detail {

using oneside::detail::raise;

namespace {

constexpr std::size_t max_rput = 1024;
constexpr std::size_t min_buffer = 64;
constexpr int max_buffers = 1024;

// The buffer capacity: the option or the setting, cut to one active message.
std::size_t capacity_of(const aggregator_options& o, const transport::backend& t) {
  std::size_t bytes =
      o.buffer_bytes != 0
          ? o.buffer_bytes
          : static_cast<std::size_t>(oneside::detail::setting_int("ONESIDE_AGG_BUFFER_BYTES"));
  ONESIDE_CHECK(bytes >= min_buffer, error_class::arg, {.call = "aggregator", .bytes = bytes},
                "a buffer of " + std::to_string(bytes) + " bytes is smaller than the least, " +
                    std::to_string(min_buffer));
  return std::min(bytes, t.caps().max_am_payload) & ~(record_align - 1);
}

int buffers_of(const aggregator_options& o) {
  const int n = o.buffers != 0
                    ? o.buffers
                    : static_cast<int>(oneside::detail::setting_int("ONESIDE_AGG_BUFFERS"));
  ONESIDE_CHECK(n >= 2 && n <= max_buffers, error_class::arg, {.call = "aggregator"},
                std::to_string(n) + " buffers per destination: the range is 2 to " +
                    std::to_string(max_buffers));
  return n;
}

aggregator_routing routing_of(const aggregator_options& o) {
  if (o.routing != aggregator_routing::settings) return o.routing;
  const std::string v = oneside::detail::setting_string("ONESIDE_AGG_ROUTING");
  if (v == "direct") return aggregator_routing::direct;
  if (v == "node") return aggregator_routing::node;
  return aggregator_routing::automatic;
}

// Combining of two operands of one operation on one type.
std::uint64_t combine(transport::amo_op op, transport::amo_type type, std::uint64_t a,
                      std::uint64_t b) noexcept {
  using transport::amo_op;
  using transport::amo_type;
  const bool narrow = transport::amo_type_size(type) == 4;
  const std::uint64_t mask = narrow ? 0xFFFFFFFFU : ~std::uint64_t{0};
  switch (op) {
    case amo_op::add:
      return (a + b) & mask;
    case amo_op::band:
      return a & b;
    case amo_op::bor:
      return a | b;
    case amo_op::bxor:
      return a ^ b;
    default:
      break;
  }
  bool b_less = false;
  switch (type) {
    case amo_type::i32:
      b_less = static_cast<std::int32_t>(static_cast<std::uint32_t>(b)) <
               static_cast<std::int32_t>(static_cast<std::uint32_t>(a));
      break;
    case amo_type::i64:
      b_less = static_cast<std::int64_t>(b) < static_cast<std::int64_t>(a);
      break;
    default:
      b_less = b < a;
      break;
  }
  const bool take_b = op == amo_op::min ? b_less : (!b_less && a != b);
  return take_b ? b : a;
}

bool same_code(const rpc_ff_code& a, const rpc_ff_code& b) noexcept {
  return a.invoker.object == b.invoker.object && a.invoker.offset == b.invoker.offset &&
         a.fn.object == b.fn.object && a.fn.offset == b.fn.offset;
}

// The handler of rpc_ff records. apply_records does not call it for the buffers it applies (it
// batches their rpc_ff records into one task, execute_rpc_ff_batch); it is what a record run
// by itself would do.
void run_rpc_ff(rank_t source, std::span<const std::byte> bytes) {
  execute_rpc_ff_message(source, bytes);
}

// Registered when the library loads, on every rank alike.
const aggregated_handler_id g_rpc_ff_handler =
    register_aggregated_handler("oneside.aggregator.rpc_ff", &run_rpc_ff);

}  // namespace

aggregated_handler_id rpc_ff_handler() noexcept {
  return g_rpc_ff_handler;
}

class aggregator_impl {
 public:
  aggregator_impl(pgas_context& s, const aggregator_options& o)
      : s_(&s),
        t_(&s.transport()),
        capacity_(capacity_of(o, s.transport())),
        buffers_(buffers_of(o)),
        combine_(o.combine),
        apply_here_(o.apply_at_origin),
        plain_(!o.atomic_apply),
        routes_(2 * static_cast<std::size_t>(s.size())),
        route_of_(static_cast<std::size_t>(s.size())) {
    plan_routes(routing_of(o));
    if (combine_) {
      std::size_t slots = 16;
      while (slots < 2 * (capacity_ / sizeof(record_head))) slots *= 2;
      table_size_ = slots;
    }
    aggregator_set& set = s.aggregators();
    const std::lock_guard lock(set.mutex);
    set.live.push_back(this);
    set.count.fetch_add(1, std::memory_order_release);
  }
  aggregator_impl(const aggregator_impl&) = delete;
  aggregator_impl& operator=(const aggregator_impl&) = delete;

  // Leaves the set (first: quiet() may not find it half destroyed), then flushes.
  ~aggregator_impl() {
    const bool open = get_context_if_open() == s_;
    if (open) {
      aggregator_set& set = s_->aggregators();
      {
        const std::lock_guard lock(set.mutex);
        std::erase(set.live, this);
        set.count.fetch_sub(1, std::memory_order_release);
      }
      try {
        const owned_lock::guard lock(mutex);
        flush_locked();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "oneside: flushing an aggregator at its destruction failed: %s\n",
                     e.what());
      }
    } else if (!active_.empty()) {
      std::fprintf(stderr,
                   "oneside: an aggregator was destroyed after the runtime closed; what it "
                   "buffered was not sent\n");
    }
  }

  std::size_t capacity() const noexcept { return capacity_; }
  int buffers() const noexcept { return buffers_; }
  bool is_combining() const noexcept { return combine_; }
  bool is_node_routed() const noexcept { return node_routed_; }
  std::size_t max_message() const noexcept { return capacity_ - sizeof(record_head); }
  std::size_t max_put() const noexcept { return std::min(max_rput, max_message()); }

  void update(transport::amo_op op, transport::amo_type type, rank_t r, std::uintptr_t addr,
              std::uint64_t bits, const char* call) {
    const std::size_t bytes = transport::amo_type_size(type);
    // The checks of atomic_address inline (it raises the error when one fails).
    const bool checked =
        addr != 0 && addr % bytes == 0 && r >= 0 && r < s_->size() && get_context_if_open() == s_;
    void* const local =
        checked ? s_->local_address(r, addr, bytes) : atomic_address(r, addr, bytes, call);
    if (local != nullptr) {
      if (r == s_->rank() && !plain_) {
        // This rank's own word: applied now, as the target would (no message to itself).
        transport::detail::amo_apply(local, {op, type, bits, 0}, nullptr);
        wake_after_rmw(r);
        return;
      }
    } else {
      (void)resolve_remote(*s_, r, addr, bytes, call);  // rma_range for memory not exposed
    }
    const owned_lock::guard lock(mutex);
    route& d = route_at(route_of_[static_cast<std::size_t>(r)]);
    if (combine_ && try_combine(d, op, type, r, addr, bits)) return;
    std::byte* at = reserve(d, sizeof(record_head));
    const record_head h{record_kind::atomic,
                        static_cast<std::uint8_t>(op),
                        static_cast<std::uint8_t>(type),
                        plain_ ? record_plain : std::uint8_t{0},
                        r,
                        addr,
                        bits};
    std::memcpy(at, &h, sizeof h);
    if (combine_) remember(d, r, addr, static_cast<std::uint32_t>(at - d.buffer.get()));
  }

  void put(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes, const char* call) {
    (void)checked_context(addr, r, call);
    ONESIDE_CHECK(bytes <= max_put(), error_class::arg, {.call = call, .target = r, .bytes = bytes},
                  "an aggregated rput carries at most " + std::to_string(max_put()) + " bytes");
    const rma::detail::access_target at_target = resolve_remote(*s_, r, addr, bytes, call);
    if (bytes == 0) return;
    if (r == s_->rank() && !plain_) {  // plain: after this rank's buffered updates, in order
      std::memcpy(at_target.local != nullptr ? at_target.local : reinterpret_cast<void*>(addr), src,
                  bytes);
      return;
    }
    const owned_lock::guard lock(mutex);
    route& d = route_at(route_of_[static_cast<std::size_t>(r)]);
    std::byte* at = reserve(d, sizeof(record_head) + padded(bytes));
    const record_head h{record_kind::put, 0, 0, 0, r, addr, bytes};
    std::memcpy(at, &h, sizeof h);
    std::memcpy(at + sizeof h, src, bytes);
    ++d.generation;  // no atomic combines across a put
  }

  // `ff`: an rpc_ff record (its handler known), counted as issued when its buffer ships.
  void send(rank_t r, aggregated_handler_id id, std::span<const std::byte> bytes, const char* call,
            bool ff = false) {
    ONESIDE_CHECK(r >= 0 && r < s_->size(), error_class::rank, {.call = call, .target = r},
                  "rank " + std::to_string(r) + " is not in the world [0, " +
                      std::to_string(s_->size()) + ")");
    ONESIDE_CHECK(ff || find_aggregated_handler(id) != nullptr, error_class::arg,
                  {.call = call, .target = r},
                  "no aggregated handler is registered under id " + std::to_string(id));
    ONESIDE_CHECK(
        bytes.size() <= max_message(), error_class::arg,
        {.call = call, .target = r, .bytes = bytes.size()},
        "an aggregated message carries at most " + std::to_string(max_message()) + " bytes");
    const owned_lock::guard lock(mutex);
    // Messages travel directly, in routes of their own, to be run by their own target.
    route& d = route_at(s_->size() + r);
    std::byte* at = reserve(d, sizeof(record_head) + padded(bytes.size()));
    const record_head h{record_kind::message, 0, 0, 0, r, id, bytes.size()};
    std::memcpy(at, &h, sizeof h);
    if (!bytes.empty()) std::memcpy(at + sizeof h, bytes.data(), bytes.size());
    if (ff) ++d.ff;
  }

  // An encoded rpc_ff (rpc.hpp) as a message to the handler that queues it at the target;
  // one too large for a message first parks its arguments (rpc's rendezvous).
  void send_rpc_ff(rank_t r, std::vector<std::byte>& message) {
    constexpr const char* call = "aggregator::rpc_ff";
    try {
      if (message.size() > max_message()) {
        ONESIDE_CHECK(max_message() >= rpc_parked_message_bytes, error_class::arg,
                      {.call = call, .target = r, .bytes = message.size()},
                      "a buffer of " + std::to_string(capacity_) +
                          " bytes cannot hold an rpc_ff record (" +
                          std::to_string(sizeof(record_head) + rpc_parked_message_bytes) +
                          " bytes with its arguments parked)");
        park_rpc_arguments(message);
      }
      send(r, rpc_ff_handler(), message, call, true);
    } catch (...) {
      discard_rpc_message(message);  // the encoder may have parked them already
      throw;
    }
  }

  // One rpc_ff call (aggregator::append_call): appended to the run of calls to `code` that
  // its destination's buffer ends with, else the first of a new run.
  void append_call(rank_t r, const rpc_ff_code& code, const std::byte* args, std::size_t bytes,
                   bool fixed) {
    if (get_context_if_open() != s_ || r < 0 || r >= s_->size()) [[unlikely]] {
      check_rpc_target(r, "aggregator::rpc_ff");  // rank, not_open
      raise(error_class::not_open, {.call = "aggregator::rpc_ff"},
            "the aggregator was made by a runtime that was closed since");
    }
    const std::size_t each = fixed ? bytes : rpc_ff_call_length_bytes + padded(bytes);
    if (sizeof(record_head) + rpc_ff_run_head_bytes + padded(each) > capacity_) [[unlikely]] {
      send_parked_call(r, code, args, bytes);
      return;
    }
    const owned_lock::guard lock(mutex);
    // Messages travel directly, in routes of their own, to be run by their own target.
    const rank_t index = s_->size() + r;
    route& d = routes_[static_cast<std::size_t>(index)];
    if (!d.active) [[unlikely]] {
      (void)route_at(index);
    }
    std::byte* at = nullptr;
    // At most capacity_ calls a run (calls without arguments take no bytes): a buffer's count
    // of calls stays small.
    if (d.run_end == d.used && d.run_sized == !fixed && same_code(d.run_code, code) &&
        d.run_at + sizeof(record_head) + padded(d.run_bytes + each) <= capacity_ &&
        d.run_calls < capacity_) [[likely]] {
      at = d.buffer.get() + d.run_at + sizeof(record_head) + d.run_bytes;
      d.run_bytes += each;
      ++d.run_calls;
      d.used = d.run_at + sizeof(record_head) + padded(d.run_bytes);
    } else {
      std::byte* head = reserve(d, sizeof(record_head) + rpc_ff_run_head_bytes + padded(each));
      const record_head h{
          record_kind::calls, 0, 0, fixed ? std::uint8_t{0} : record_sized, r, 0, 0};
      std::memcpy(head, &h, sizeof h);
      std::memcpy(head + sizeof(record_head), &code, sizeof code);
      d.run_at = static_cast<std::size_t>(head - d.buffer.get());
      d.run_code = code;
      d.run_sized = !fixed;
      d.run_calls = 1;
      d.run_bytes = rpc_ff_run_head_bytes + each;
      at = head + sizeof(record_head) + rpc_ff_run_head_bytes;
    }
    if (fixed) {
      if (bytes != 0) std::memcpy(at, args, bytes);
    } else {
      const std::uint64_t n = bytes;
      std::memcpy(at, &n, sizeof n);
      if (bytes != 0) std::memcpy(at + sizeof n, args, bytes);
    }
    // The head's count and bytes (8-byte stores: no 16-byte load of fields just stored).
    std::byte* head = d.buffer.get() + d.run_at;
    const std::uint64_t calls = d.run_calls;
    const std::uint64_t run_bytes = d.run_bytes;
    std::memcpy(head + offsetof(record_head, where), &calls, sizeof calls);
    std::memcpy(head + offsetof(record_head, value), &run_bytes, sizeof run_bytes);
    d.run_end = d.used;
    ++d.ff;
  }

  // A call whose arguments no buffer holds: an rpc_ff message with its arguments parked.
  void send_parked_call(rank_t r, const rpc_ff_code& code, const std::byte* args,
                        std::size_t bytes) {
    std::vector<std::byte> message(rpc_header_bytes + bytes);
    if (bytes != 0) std::memcpy(message.data() + rpc_header_bytes, args, bytes);
    write_rpc_header(message, 0, rpc_kind::fire_and_forget, 0, code.invoker, code.fn, 0);
    send_rpc_ff(r, message);
  }

  void flush() {
    const owned_lock::guard lock(mutex);
    flush_locked();
  }

  // Serializes the calls; quiet() takes it to flush. Biased to the thread that made the
  // aggregator, which usually issues every call: its calls then take it with plain stores
  // (owned_lock.hpp); once another thread took it, one exchange per call.
  owned_lock mutex;

 private:
  struct slot {
    std::uintptr_t addr = 0;
    rank_t rank = 0;
    std::uint32_t generation = 0;  // valid while equal to its route's
    std::uint32_t offset = 0;      // of the record in the buffer
  };
  static constexpr std::size_t no_run = ~std::size_t{0};
  struct route {
    std::unique_ptr<std::byte[]> buffer;  // made at first use
    std::size_t used = 0;
    std::vector<transport::completion> ring;  // buffers in flight, oldest at `head`
    std::size_t head = 0;
    std::size_t in_flight = 0;
    bool active = false;   // listed in active_
    rank_t via = 0;        // where its buffers go
    bool here = false;     // applied by this process when shipped (apply_at_origin)
    bool to_wake = false;  // here: changed since the last flush (whose end wakes `via`)
    std::uint32_t generation = 1;
    std::uint32_t ff = 0;  // rpc_ff calls in the buffer being filled
    // The run of calls (record_kind::calls) the buffer ends with while `run_end` equals
    // `used`: where its head is, its calls and bytes so far, what they call.
    // (run_calls and run_bytes apart: stored one by one, they are never loaded together in
    // one 16-byte load, which would wait for both stores to retire.)
    std::size_t run_end = no_run;
    std::uint64_t run_calls = 0;
    std::size_t run_at = 0;
    std::size_t run_bytes = 0;
    rpc_ff_code run_code{};
    bool run_sized = false;
    std::unique_ptr<slot[]> table;  // combining: the last record of each word
  };

  void plan_routes(aggregator_routing routing) {
    const rank_t me = s_->rank();
    const int n = s_->size();
    bool nodes_of_several = false;
    std::vector<std::vector<rank_t>> members(static_cast<std::size_t>(n));
    for (rank_t r = 0; r < n; ++r) {
      members[static_cast<std::size_t>(s_->node_leader(r))].push_back(r);
    }
    for (rank_t r = 0; r < n; ++r) {
      const rank_t leader = s_->node_leader(r);
      if (leader != s_->node_leader(me) && members[static_cast<std::size_t>(leader)].size() > 1) {
        nodes_of_several = true;
      }
    }
    node_routed_ = routing == aggregator_routing::node ||
                   (routing == aggregator_routing::automatic && nodes_of_several);
    for (rank_t r = 0; r < n; ++r) {
      const rank_t leader = s_->node_leader(r);
      rank_t via = r;
      if (node_routed_ && leader != s_->node_leader(me)) {
        // The node's ranks share the senders: each sender its own, by rank.
        const std::vector<rank_t>& m = members[static_cast<std::size_t>(leader)];
        via = m[static_cast<std::size_t>(me) % m.size()];
      }
      route_of_[static_cast<std::size_t>(r)] = via;
    }
  }

  // Route `index`: the updates to rank `index`, or for index - size() the messages to that rank.
  route& route_at(rank_t index) {
    route& d = routes_[static_cast<std::size_t>(index)];
    if (!d.buffer) [[unlikely]] {
      d.via = index % s_->size();
      // Plain updates of this rank's own words are applied here too, a buffer at a time.
      d.here = index < s_->size() &&
               ((apply_here_ && s_->is_local_rank(d.via)) || (plain_ && d.via == s_->rank()));
      d.buffer = std::make_unique<std::byte[]>(capacity_);
      d.ring.resize(static_cast<std::size_t>(buffers_ - 1));
      if (combine_) d.table = std::make_unique<slot[]>(table_size_);
    }
    if (!d.active) {
      d.active = true;
      active_.push_back(index);
    }
    return d;
  }

  // Room for `bytes` in d's buffer, shipping it first when full.
  std::byte* reserve(route& d, std::size_t bytes) {
    if (d.used + bytes > capacity_) ship(d);
    std::byte* at = d.buffer.get() + d.used;
    d.used += bytes;
    return at;
  }

  std::size_t hash(std::uintptr_t addr, rank_t r) const noexcept {
    std::uint64_t x = static_cast<std::uint64_t>(addr >> 2) ^
                      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(r)) << 40);
    x *= 0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>(x >> 32) & (table_size_ - 1);
  }

  // The slot of (r, addr) in d's table for this round, or the free slot where it goes.
  slot& find_slot(route& d, rank_t r, std::uintptr_t addr) noexcept {
    std::size_t i = hash(addr, r);
    for (;;) {
      slot& e = d.table[i];
      if (e.generation != d.generation || (e.addr == addr && e.rank == r)) return e;
      i = (i + 1) & (table_size_ - 1);
    }
  }

  bool try_combine(route& d, transport::amo_op op, transport::amo_type type, rank_t r,
                   std::uintptr_t addr, std::uint64_t bits) noexcept {
    const slot& e = find_slot(d, r, addr);
    if (e.generation != d.generation) return false;
    record_head h;
    std::memcpy(&h, d.buffer.get() + e.offset, sizeof h);
    if (h.op != static_cast<std::uint8_t>(op) || h.type != static_cast<std::uint8_t>(type)) {
      return false;
    }
    h.value = combine(op, type, h.value, bits);
    std::memcpy(d.buffer.get() + e.offset + offsetof(record_head, value), &h.value, sizeof h.value);
    return true;
  }

  // (r, addr)'s last record is at `offset`. The table holds at most one slot per record, half
  // its size at most, so a free slot always exists.
  void remember(route& d, rank_t r, std::uintptr_t addr, std::uint32_t offset) noexcept {
    slot& e = find_slot(d, r, addr);
    e = slot{addr, r, d.generation, offset};
  }

  // Sends d's buffer, after waiting, making progress, until a buffer of the route is free; or
  // applies it here (memory this process loads and stores, apply_at_origin).
  void ship(route& d) {
    if (d.used == 0) return;
    if (d.here) {
      apply_records(*t_, s_->rank(), std::span<const std::byte>(d.buffer.get(), d.used), false);
      d.to_wake = true;
      d.used = 0;
      ++d.generation;
      return;
    }
    const rank_t via = d.via;
    const std::size_t ring = d.ring.size();
    if (d.in_flight == ring) {
      transport::completion& oldest = d.ring[d.head];
      if (!t_->test(oldest)) {
        const oneside::detail::wait_scope waiting("aggregator (all buffers in flight)", via);
        oneside::detail::wait_until([&] { return t_->test(oldest); });
      }
      d.head = (d.head + 1) % ring;
      --d.in_flight;
    }
    transport::completion& c = d.ring[(d.head + d.in_flight) % ring];
    if (d.ff != 0) count_rpc_ff_issued(via, d.ff);  // before the target may run them
    d.ff = 0;
    d.run_end = no_run;
    t_->am_send(via, batch_handler(), std::span<const std::byte>(d.buffer.get(), d.used), &c);
    ++d.in_flight;
    d.used = 0;
    ++d.generation;
  }

  void flush_locked() {
    for (rank_t index : active_) ship(routes_[static_cast<std::size_t>(index)]);
    for (rank_t index : active_) {
      route& d = routes_[static_cast<std::size_t>(index)];
      while (d.in_flight != 0) {
        transport::completion& oldest = d.ring[d.head];
        if (!t_->test(oldest)) {
          const oneside::detail::wait_scope waiting("aggregator::flush", d.via);
          oneside::detail::wait_until([&] { return t_->test(oldest); });
        }
        d.head = (d.head + 1) % d.ring.size();
        --d.in_flight;
      }
      if (d.to_wake) wake_rank(*t_, d.via);
      d.to_wake = false;
      d.active = false;
    }
    active_.clear();
  }

  pgas_context* s_;
  transport::backend* t_;
  std::size_t capacity_;
  int buffers_;
  bool combine_;
  bool apply_here_;
  bool plain_;  // atomics by plain loads and stores (atomic_apply = false)
  bool node_routed_ = false;
  std::size_t table_size_ = 0;
  std::vector<route> routes_;     // updates by the rank they are sent to, then messages by rank
  std::vector<rank_t> route_of_;  // by destination: the rank its updates are sent to
  std::vector<rank_t> active_;    // routes with a buffer being filled or in flight
};

void flush_aggregators(pgas_context& s) {
  aggregator_set& set = s.aggregators();
  const std::lock_guard lock(set.mutex);
  for (aggregator_impl* a : set.live) a->flush();
}

}  // namespace oneside::pgas::detail

namespace oneside {

aggregator::aggregator() : aggregator(aggregator_options{}) {}

aggregator::aggregator(const aggregator_options& options)
    : impl_(std::make_unique<pgas::detail::aggregator_impl>(pgas::detail::get_context("aggregator"),
                                                            options)) {}

aggregator::aggregator(aggregator&&) noexcept = default;
aggregator& aggregator::operator=(aggregator&&) noexcept = default;
aggregator::~aggregator() = default;

void aggregator::update_bits(oneside::detail::amo_op op, oneside::detail::amo_type type, rank_t r,
                             std::uintptr_t addr, std::uint64_t bits, const char* call) {
  impl_->update(op, type, r, addr, bits, call);
}

void aggregator::put_bytes(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes,
                           const char* call) {
  impl_->put(r, addr, src, bytes, call);
}

void aggregator::send(rank_t target, aggregated_handler_id id, std::span<const std::byte> bytes) {
  impl_->send(target, id, bytes, "aggregator::send");
}

void aggregator::append_call(rank_t r, const pgas::detail::rpc_ff_code& code, const std::byte* args,
                             std::size_t bytes, bool fixed) {
  impl_->append_call(r, code, args, bytes, fixed);
}

void aggregator::flush() {
  impl_->flush();
}

std::size_t aggregator::max_rput_bytes() const noexcept {
  return impl_->max_put();
}
std::size_t aggregator::max_message_bytes() const noexcept {
  return impl_->max_message();
}
std::size_t aggregator::buffer_bytes() const noexcept {
  return impl_->capacity();
}
int aggregator::buffers() const noexcept {
  return impl_->buffers();
}
bool aggregator::is_combining() const noexcept {
  return impl_->is_combining();
}
bool aggregator::is_node_routed() const noexcept {
  return impl_->is_node_routed();
}

}  // namespace oneside
