// Aggregation of small one-sided operations (Bale's conveyors, YGM's mailboxes, Grappa's
// aggregator): an aggregator buffers remote atomics, small rputs and opaque messages per
// destination and ships each full buffer as one active message, which the destination applies.
// Millions of 8-byte updates to random owners then cost one message per few hundred updates
// instead of one each.
//
//   oneside::aggregator agg({.combine = true});
//   for (std::uint64_t k : keys) agg.atomic_add(table[k % n], std::int64_t{1});
//   agg.flush();  // every update is applied at its target
//
// Shipping: a destination's buffer ships when it is full, on flush(), on oneside::quiet() (which
// flushes every live aggregator of the calling rank) and when the aggregator is destroyed.
// Nothing else flushes: barrier() does not, so flush() or quiet() before a barrier that must
// see the updates. Updates may arrive earlier (a full buffer), never later than these.
//
// Application: updates to this rank's own memory at the call (with atomic_apply = false, when
// their buffer ships); others by the destination's active-message progress (the agent thread, the
// MPI progress thread, or the rank's waits with ONESIDE_AGENT=poll), or with apply_at_origin by
// this rank for memory it loads and stores. Every path uses the CPU atomics every other oneside
// atomic on that word uses (atomic.hpp): aggregated atomics are atomic with fetch_add, atomic_add,
// compare_exchange … on the same word, from any rank, on every transport; unless
// aggregator_options::atomic_apply is false (plain loads and stores, for words nobody else writes
// meanwhile). Rputs are plain copies (not atomic with anything, as rput).
//
// Routing (aggregator_routing, ONESIDE_AGG_ROUTING): direct sends each destination its own
// buffers; node sends the updates for all ranks of a remote node in one buffer to one rank of
// that node (chosen by the sender's rank), which applies them through shared memory (two hops).
// Ranks of the sender's own node are always reached directly. Opaque messages (send) always
// travel directly.
//
// Bounded memory: per destination (per node with node routing) at most `buffers` buffers of
// `buffer_bytes` exist at once, the one being filled and those in flight (held by the transport
// until the target applied them). When all are in flight, the call that needs a new one makes
// progress (drives the transport; incoming buffers are applied) until the oldest is applied.
// Buffers of a destination are made at its first use.
//
// Batched rpc_ff (rpc.hpp): agg.rpc_ff(rank, fn, args...) serializes the call's arguments as
// rpc_ff does and appends them to the destination's buffer, where consecutive calls to one
// function form a run that names the function once: per call only its argument bytes (8 for
// one 8-byte argument), with a length when their size varies. The target's handler hands all
// the calls of a buffer to one task of its arena, which runs them one after another in issue
// order, finding each run's function once (never on the agent: a body may wait; one that waits
// delays the calls after it in its buffer, so a body must not wait for a later call of the
// same buffer). Buffers run as concurrent tasks: no order is promised between them. flush()
// returns once every call was handed to its target's arena, not once it ran; oneside::quiet()
// returns once every call of this rank's aggregators ran (rpc.hpp: what quiet() covers).
// Arguments too large for a buffer travel by rpc's rendezvous (parked in this rank's global
// heap, fetched and freed by the target) in their place among the buffer's calls, so no size
// is refused.
//
// Ordering: the records of one aggregator to one destination rank are applied in the order they
// were issued, atomics and rputs among themselves and messages among themselves; atomics and
// rputs are not ordered with messages (separate buffers; with node routing through another
// rank). Combining (aggregator_options::combine): an atomic on a word with the same operation
// and type as the last record buffered for that word joins it (sums for add, the smaller for
// min, …), so it takes effect at that earlier place; never across an rput to that destination
// (which starts a new combining round). Combined results are exact (integer arithmetic wraps
// around as atomic_add does).
//
// Thread-safety: the calls of one aggregator serialize on a lock, so any thread may use it (and
// quiet() on any thread flushes it); handlers of messages must not use aggregators, nor wait.
// The lock is biased to the thread that made the aggregator: its calls take it without an
// atomic read-modify-write until another thread uses the aggregator (or flushes it by quiet()),
// which costs that thread one membarrier(2) once; from then on every call takes it by one
// exchange.
//
// Errors (oneside::error raised at the call; nothing is buffered then): a null pointer or one
// not aligned to the word size → arg; a rank outside the world → rank; memory the rank did not
// expose → rma_range; an rput larger than max_rput_bytes(), a message larger than
// max_message_bytes() or an unknown handler id → arg; rpc_ff: a rank outside the world →
// rank, a throwing serialize() as thrown, a buffer smaller than an rpc_ff's header and
// rendezvous → arg. Every call needs the runtime open (not_open).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <oneside/pgas/atomic.hpp>
#include <oneside/pgas/global_ptr.hpp>
#include <oneside/pgas/global_ref.hpp>
#include <oneside/pgas/rpc.hpp>
#include <oneside/runtime/amo.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

// How an aggregator reaches ranks of other nodes (see the file comment).
enum class aggregator_routing : std::uint8_t {
  settings,   // ONESIDE_AGG_ROUTING
  direct,     // one buffer per destination rank
  node,       // one buffer per destination node, spread there by one of its ranks
  automatic,  // node when some other node holds more than one rank, else direct
};

struct aggregator_options {
  std::size_t buffer_bytes = 0;  // 0: ONESIDE_AGG_BUFFER_BYTES (at most one active message)
  int buffers = 0;               // per destination, at least 2; 0: ONESIDE_AGG_BUFFERS
  bool combine = false;          // same-word combining of commutative atomics
  aggregator_routing routing = aggregator_routing::settings;
  // Updates (atomics, rputs) to memory this process loads and stores (node peers' heaps on
  // shared memory) are applied by this rank when their buffer ships (the batch's words
  // prefetched, then updated with the same CPU atomics; the peer woken at flush()) instead of
  // travelling as a message the target's progress applies. It spares the target's CPU and
  // serializes the work on the origin's (measured: about half the throughput of one rank pair
  // on shm with a core for the target's agent; bench/micro/aggregator_bench.cpp).
  bool apply_at_origin = false;
  // false: atomics (atomic_add/min/max/and/or/xor) are applied with plain loads and stores,
  // not CPU atomics, by whoever applies the buffer (the owner's progress; this rank for its own
  // words, which are then buffered too and applied when their buffer ships, and with
  // apply_at_origin for node peers' words), a buffer at a time in a tight loop with its words
  // prefetched. Only valid when nobody else writes those words while updates may be applied:
  // a concurrent write (an atomic, a put, another aggregator's or rank's plain update to the
  // same word) may be lost. HPCC RandomAccess allows that (at most 1% of the words wrong);
  // the GUPS app's aggregated variant uses it.
  bool atomic_apply = true;
};

// The id of a handler of aggregated messages, the same on every rank (a hash of its name).
using aggregated_handler_id = std::uint32_t;
// Runs at the target like an active-message handler (by the transport's progress): must not
// wait, nor use an aggregator. `bytes` is valid only during the call.
using aggregated_handler = void (*)(rank_t source, std::span<const std::byte> bytes);

// Registers `fn` under `name`, unique in the program; every rank that receives such messages
// must have registered it (at static initialization, or before the senders' first send).
// Registering the same name and function again returns the same id. Errors: arg (the name's
// hash collides with another name's, or an empty name).
aggregated_handler_id register_aggregated_handler(std::string_view name, aggregated_handler fn);

namespace pgas::detail {
class aggregator_impl;
}

class aggregator {
 public:
  // Not collective. Errors: not_open; arg (buffers < 2, or a buffer too small for one record).
  aggregator();
  explicit aggregator(const aggregator_options& options);
  // A moved-from aggregator may only be assigned to or destroyed.
  aggregator(aggregator&&) noexcept;
  aggregator& operator=(aggregator&&) noexcept;
  aggregator(const aggregator&) = delete;
  aggregator& operator=(const aggregator&) = delete;
  // Flushes. Destroy aggregators before the runtime closes (what is buffered then is lost; the
  // destructor says so on stderr).
  ~aggregator();

  // Remote atomics on integer words (the types of atomic.hpp's bitwise calls), fire-and-forget.
  template <pgas::detail::atomic_integer T>
  void atomic_add(global_ptr<T> p, std::type_identity_t<T> v) {
    update(oneside::detail::amo_op::add, p, v, "aggregator::atomic_add");
  }
  template <pgas::detail::atomic_integer T>
  void atomic_min(global_ptr<T> p, std::type_identity_t<T> v) {
    update(oneside::detail::amo_op::min, p, v, "aggregator::atomic_min");
  }
  template <pgas::detail::atomic_integer T>
  void atomic_max(global_ptr<T> p, std::type_identity_t<T> v) {
    update(oneside::detail::amo_op::max, p, v, "aggregator::atomic_max");
  }
  template <pgas::detail::atomic_integer T>
  void atomic_and(global_ptr<T> p, std::type_identity_t<T> v) {
    update(oneside::detail::amo_op::band, p, v, "aggregator::atomic_and");
  }
  template <pgas::detail::atomic_integer T>
  void atomic_or(global_ptr<T> p, std::type_identity_t<T> v) {
    update(oneside::detail::amo_op::bor, p, v, "aggregator::atomic_or");
  }
  template <pgas::detail::atomic_integer T>
  void atomic_xor(global_ptr<T> p, std::type_identity_t<T> v) {
    update(oneside::detail::amo_op::bxor, p, v, "aggregator::atomic_xor");
  }

  // Small puts: `v` (or the elements of `v`) copied to p (p[0], p[1], …), at most
  // max_rput_bytes() bytes. The source may be reused as soon as the call returns.
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void rput(const T& v, global_ptr<T> p) {
    put_bytes(p.where(), p.address(), &v, sizeof(T), "aggregator::rput");
  }
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void rput(std::span<const T> v, global_ptr<T> p) {
    put_bytes(p.where(), p.address(), v.data(), v.size_bytes(), "aggregator::rput");
  }

  // An opaque message: `bytes` (at most max_message_bytes()) run at `target` by the handler
  // `id` (register_aggregated_handler), with this rank as source.
  void send(rank_t target, aggregated_handler_id id, std::span<const std::byte> bytes);

  // rpc_ff(target, fn, args...) through this aggregator (see the file comment): the same
  // functions and arguments as rpc_ff, serialized at the call.
  template <class Fn, class... A>
  requires pgas::detail::rpc_callable<std::decay_t<Fn>, A...>
  void rpc_ff(rank_t target, Fn&& fn, A&&... args) {
    using F = std::decay_t<Fn>;
    using I = pgas::detail::invoker_of<
        F, typename pgas::detail::fn_traits<pgas::detail::fn_pointer_t<F>>::params>;
    static_assert(std::is_void_v<pgas::detail::rpc_result_t<F>> ||
                      serializable<pgas::detail::rpc_result_t<F>>,
                  "rpc: the function's result must be void or serializable");
    // The target is checked first by append_call (nothing is buffered when it is refused).
    pgas::detail::rpc_ff_code code{pgas::detail::invoker_id<F>(), {}};
    if constexpr (!std::is_class_v<F>) code.fn = pgas::detail::function_id(fn);
    if constexpr (I::fixed && I::fixed_bytes <= fixed_call_limit) {
      // Arguments of a fixed size (bitwise values): laid out here, copied into the buffer.
      alignas(16) std::byte bytes[I::fixed_bytes == 0 ? 1 : I::fixed_bytes];
      I::write_fixed(bytes, std::forward<A>(args)...);
      append_call(target, code, bytes, I::fixed_bytes, true);
    } else {
      // Serialized into this thread's scratch (no allocation per call), or into a vector of
      // its own when a serialize() of the arguments issues an aggregated rpc_ff itself.
      thread_local std::vector<std::byte> scratch;
      thread_local bool in_use = false;
      if (in_use) [[unlikely]] {
        std::vector<std::byte> own;
        serial_writer w(own);
        I::write(w, std::forward<A>(args)...);
        append_call(target, code, own.data(), own.size(), false);
        return;
      }
      struct release {
        bool& flag;
        std::vector<std::byte>& bytes;
        ~release() {
          flag = false;
          if (bytes.capacity() > (std::size_t{1} << 16)) bytes = {};  // after large arguments
        }
      } const guard{in_use, scratch};
      in_use = true;
      scratch.clear();
      serial_writer w(scratch);
      I::write(w, std::forward<A>(args)...);
      append_call(target, code, scratch.data(), scratch.size(), false);
    }
  }

  // Ships every buffer and returns once every record issued before it was applied at its
  // target (handlers of messages returned).
  void flush();

  std::size_t max_rput_bytes() const noexcept;
  std::size_t max_message_bytes() const noexcept;
  // The effective settings (options, else the environment's).
  std::size_t buffer_bytes() const noexcept;
  int buffers() const noexcept;
  bool is_combining() const noexcept;
  bool is_node_routed() const noexcept;

 private:
  template <class T>
  void update(oneside::detail::amo_op op, global_ptr<T> p, T v, const char* call) {
    update_bits(op, pgas::detail::atomic_type_of<T>(), p.where(), p.address(),
                pgas::detail::to_bits(v), call);
  }
  void update_bits(oneside::detail::amo_op op, oneside::detail::amo_type type, rank_t r,
                   std::uintptr_t addr, std::uint64_t bits, const char* call);
  void put_bytes(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes,
                 const char* call);
  // Fixed-size arguments up to this many bytes are laid out on the stack.
  static constexpr std::size_t fixed_call_limit = 256;
  // Buffers one rpc_ff call to `code` with its serialized arguments (`fixed`: every call of
  // that code has `bytes` of them): appended to the run of calls to the same code that the
  // destination's buffer ends with, else a new run; arguments too large for a buffer travel
  // as a message whose arguments are parked (rpc's rendezvous).
  void append_call(rank_t r, const pgas::detail::rpc_ff_code& code, const std::byte* args,
                   std::size_t bytes, bool fixed);

  std::unique_ptr<pgas::detail::aggregator_impl> impl_;
};

}  // namespace oneside
