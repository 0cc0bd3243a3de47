// The remote paths of rput/rget (communication.hpp) and put-with-signal (signal.hpp): memory
// this process does not load and store is reached through the rma layer's access interface
// (rma/interface/rma/access.hpp), and completed through the pgas context's completion counter: a
// future of a remote operation is its ticket (future/state.hpp, op_ticket), made ready by one
// flush of its target (ticket_poll) or by quiet(); continuations attached to one wait for
// the completion that covers it (ticket_state).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/signal.hpp>
#include <oneside/runtime/copy.hpp>
#include <oneside/runtime/wait.hpp>

#include "comm/remote.hpp"
#include "future/deferred.hpp"
#include "runtime/check.hpp"
#include "runtime/hex.hpp"

namespace oneside::pgas::detail {
namespace {

using oneside::detail::hex;
using oneside::detail::raise;

const datatype& bytes_type() noexcept {
  return datatype::of<std::byte>();
}

// A state readied when the completion counter completes its ticket (then(), when_all() on a
// remote operation's future). It keeps itself alive until then.
class ticket_waiter final : public state<void>, public rma::detail::completion_waiter {
 public:
  void arm(std::shared_ptr<ticket_waiter> self) noexcept { self_ = std::move(self); }
  void completed() noexcept override {
    publish();
    self_.reset();  // last: publish() ran the continuations
  }

 private:
  std::shared_ptr<ticket_waiter> self_;
};

}  // namespace

pgas_context& checked_context(std::uintptr_t addr, rank_t r, const char* call) {
  if (addr == 0) [[unlikely]] {
    raise(error_class::arg, {.call = call, .target = r}, "the global pointer is null");
  }
  pgas_context& s = get_context(call);
  if (r < 0 || r >= s.size()) [[unlikely]] {
    raise(
        error_class::rank, {.call = call, .target = r},
        "rank " + std::to_string(r) + " is not in the world [0, " + std::to_string(s.size()) + ")");
  }
  return s;
}

// ---- the futures of remote operations --------------------------------------------------

bool ticket_poll(const op_ticket& t) {
  pgas_context& s = get_context("future::wait");
  s.ops().complete(s.transport(), t.rank, t.value);
  return true;
}

namespace {

// Completes the operations to `r` through `ticket`: one flush of `r` completes every operation
// issued to it before, so in a fiber an operation still in flight suspends the fiber and the
// flush runs when the thread's scheduler polls its waiters, after the thread's other fibers
// issued theirs (wait_polling: many fibers' operations share one flush, Grappa's style of
// latency hiding). Elsewhere the flush runs at once.
void complete_ticket(pgas_context& s, rank_t r, std::uint64_t ticket, const char* call) {
  auto flush = [&s, r, ticket] { s.ops().complete(s.transport(), r, ticket); };
  if (s.ops().is_complete(r, ticket)) {
    flush();  // nothing to flush: runs the continuations that are due
    return;
  }
  const oneside::detail::wait_scope waiting(call, r);
  oneside::detail::wait_polling(flush, [&s, r, ticket] { return s.ops().is_complete(r, ticket); });
}

}  // namespace

void ticket_wait(const op_ticket& t) {
  complete_ticket(get_context("future::wait"), t.rank, t.value, "future::wait");
}

void bound_in_flight(pgas_context& s, rank_t r, std::uint64_t ticket) {
  s.in_flight(r).store(0, std::memory_order_relaxed);
  const handing_off_frame frame;  // what this readies runs in any thread's next progress()
  s.ops().complete(s.transport(), r, ticket);
}

std::shared_ptr<state<void>> ticket_state(const op_ticket& t) {
  pgas_context& s = get_context("future::then");
  auto w = std::make_shared<ticket_waiter>();
  if (s.ops().is_complete(t.rank, t.value)) {
    w->publish();
    return w;
  }
  w->arm(w);
  s.ops().when_complete(t.rank, t.value, *w);
  return w;
}

// ---- data movement ---------------------------------------------------------------------

future<> put_remote(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes,
                    const char* call) {
  pgas_context& s = checked_context(addr, r, call);
  const rma::detail::access_target to = resolve_remote(s, r, addr, bytes, call);
  return ticket_future(s, r, rma::detail::put(s.transport(), to, src, bytes));
}

future<> get_remote(rank_t r, std::uintptr_t addr, void* dst, std::size_t bytes, const char* call) {
  pgas_context& s = checked_context(addr, r, call);
  const rma::detail::access_target from = resolve_remote(s, r, addr, bytes, call);
  return ticket_future(s, r, rma::detail::get(s.transport(), from, dst, bytes, true));
}

void get_now(rank_t r, std::uintptr_t addr, void* dst, std::size_t bytes, const char* call) {
  pgas_context& s = checked_context(addr, r, call);
  const rma::detail::access_target from = resolve_remote(s, r, addr, bytes, call);
  if (oneside::detail::in_fiber()) {
    // In a fiber: the get stays in flight (dst, on this fiber's stack, stays put) while the
    // thread's other fibers run (complete_ticket).
    const future<> f = ticket_future(s, r, rma::detail::get(s.transport(), from, dst, bytes, true));
    f.wait();
    return;
  }
  rma::detail::get(s.transport(), from, dst, bytes);
}

future<> put_layout(const void* src, count_t src_count, const datatype& src_type, rank_t r,
                    std::uintptr_t addr, count_t dst_count, const datatype& dst_type) {
  pgas_context& s = checked_context(addr, r, "rput");
  const rma::detail::access_target to =
      rma::detail::resolve(s.transport(), r, addr, dst_count, dst_type, "rput");
  return ticket_future(s, r,
                       rma::detail::put_layout(s.transport(), to, src, src_count, src_type,
                                               dst_count, dst_type, "rput"));
}

future<> get_layout(rank_t r, std::uintptr_t addr, count_t src_count, const datatype& src_type,
                    void* dst, count_t dst_count, const datatype& dst_type) {
  pgas_context& s = checked_context(addr, r, "rget");
  const rma::detail::access_target from =
      rma::detail::resolve(s.transport(), r, addr, src_count, src_type, "rget");
  return ticket_future(s, r,
                       rma::detail::get_layout(s.transport(), from, dst, dst_count, dst_type,
                                               src_count, src_type, "rget", true));
}

datatype strided_type(std::size_t blocks, std::size_t block_len, std::ptrdiff_t stride,
                      std::size_t element) {
  const std::size_t max = static_cast<std::size_t>(std::numeric_limits<count_t>::max());
  if (block_len != 0 && element > max / block_len) {
    raise(error_class::arg, {.call = "rput_strided"}, "the block is larger than 2^63 bytes");
  }
  return datatype::hvector(static_cast<count_t>(blocks), static_cast<count_t>(block_len * element),
                           stride * static_cast<std::ptrdiff_t>(element), bytes_type());
}

bool put_value_direct(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes) noexcept {
  pgas_context* s = get_context_if_open();
  if (s == nullptr) [[unlikely]] {
    return false;
  }
  void* p = s->local_address(r, addr, bytes);
  if (p == nullptr) return false;
  if (bytes == sizeof(std::uint64_t)) {
    std::memcpy(p, src, sizeof(std::uint64_t));  // the common case, without a call
  } else {
    oneside::detail::copy_bytes(p, src, bytes);
  }
  if (oneside::detail::doorbell* bell = s->peer_bell(r)) oneside::detail::notify(*bell);
  return true;
}

void wake_after_write(rank_t r) noexcept {
  pgas_context* s = get_context_if_open();
  if (s == nullptr) return;
  if (oneside::detail::doorbell* bell = s->peer_bell(r)) oneside::detail::notify(*bell);
}

void wake_after_rmw(rank_t r) noexcept {
  pgas_context* s = get_context_if_open();
  if (s == nullptr) return;
  if (oneside::detail::doorbell* bell = s->peer_bell(r)) oneside::detail::notify_after_rmw(*bell);
}

std::size_t span_bytes(std::size_t count, std::size_t element, const char* call) {
  if (element != 0 && count > std::numeric_limits<std::size_t>::max() / element) [[unlikely]] {
    raise(error_class::arg, {.call = call},
          "the span of " + std::to_string(count) + " elements is larger than the address space");
  }
  return count * element;
}

// ---- put-with-signal and waiting ---------------------------------------------------------

future<> put_with_signal(const void* src, std::size_t bytes, rank_t r, std::uintptr_t addr,
                         rank_t sig_rank, std::uintptr_t sig_addr, std::uint64_t value,
                         signal_op how) {
  pgas_context& s = checked_context(addr, r, "rput");
  (void)checked_context(sig_addr, sig_rank, "rput");
  if (sig_addr % alignof(std::uint64_t) != 0) {
    raise(error_class::arg, {.call = "rput", .target = sig_rank},
          "the signal word at " + hex(sig_addr) + " is not 8-byte aligned");
  }
  transport::backend& t = s.transport();
  const rma::detail::access_target data = resolve_remote(s, r, addr, bytes, "rput");
  const rma::detail::access_target sig =
      resolve_remote(s, sig_rank, sig_addr, sizeof(std::uint64_t), "rput");
  // The data, visible at r before the signal can be (one flush of r when it is in flight).
  if (rma::detail::put(t, data, src, bytes)) s.ops().complete(t, r, s.ops().issue());
  // The signal: an atomic, as every other update of a signal word is (atomic.hpp). Mapped
  // here it is a CPU atomic with release order, and this process wakes the owner's waiters;
  // otherwise the owner applies it and wakes them.
  if (sig.local != nullptr) {
    std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t*>(sig.local));
    if (how == signal_op::set) {
      word.store(value, std::memory_order_release);
    } else {
      word.fetch_add(value, std::memory_order_release);
    }
    wake_after_write(sig_rank);
    return {};
  }
  const transport::amo_args update{
      how == signal_op::set ? transport::amo_op::store : transport::amo_op::add,
      transport::amo_type::u64, value, 0};
  if (rma::detail::update(t, sig, update)) s.ops().complete(t, sig_rank, s.ops().issue());
  return {};
}

void describe_words(const void* words, rank_t, std::string& out) noexcept {
  try {
    out.append("the word at ").append(hex(reinterpret_cast<std::uintptr_t>(words)));
    out.append(" of this rank (a peer changes it, then wakes this rank)");
  } catch (...) {
    // Out of memory: no description.
  }
}

void check_word(const void* ivar, std::size_t align, const char* call) {
  if (ivar == nullptr) [[unlikely]] {
    raise(error_class::arg, {.call = call}, "the word is null");
  }
  if (reinterpret_cast<std::uintptr_t>(ivar) % align != 0) [[unlikely]] {
    raise(error_class::arg, {.call = call},
          "the word at " + hex(reinterpret_cast<std::uintptr_t>(ivar)) + " is not " +
              std::to_string(align) + "-byte aligned");
  }
}

void bad_words(const char* call, const char* why) {
  raise(error_class::arg, {.call = call}, why);
}

void* wait_address(rank_t r, std::uintptr_t addr, std::size_t bytes, const char* call) {
  if (addr == 0) raise(error_class::arg, {.call = call}, "the word is null");
  (void)get_context(call);
  if (void* p = local_address(r, addr, bytes)) return p;
  raise(error_class::arg, {.call = call, .target = r},
        "a rank waits on memory it can load and store; the word at " + hex(addr) + " of rank " +
            std::to_string(r) + " is not");
}

}  // namespace oneside::pgas::detail

namespace oneside {

void fence() {
  // Puts and atomics in flight may reorder on a network path: completed (stronger than
  // needed, and only when some are in flight). Direct stores are ordered by the fence.
  pgas::detail::pgas_context& s = pgas::detail::get_context("fence");
  if (!s.ops().is_idle()) {
    const detail::wait_scope waiting("fence");
    s.ops().complete_all(s.transport());
  }
  std::atomic_thread_fence(std::memory_order_release);
}

void quiet() {
  pgas::detail::pgas_context& s = pgas::detail::get_context("quiet");
  // Live aggregators ship and wait for their buffers first (one load when there are none).
  if (s.aggregators().count.load(std::memory_order_acquire) != 0) {
    const detail::wait_scope waiting("quiet");
    pgas::detail::flush_aggregators(s);
  }
  if (!s.ops().is_idle()) {
    const detail::wait_scope waiting("quiet");
    s.ops().complete_all(s.transport());
  }
  // rpc_ff this rank issued (directly, or by the aggregators just flushed) have run at their
  // targets (one load when none is outstanding).
  if (s.rpc_ff().unacked.load(std::memory_order_acquire) != 0) pgas::detail::wait_rpc_ff(s);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace oneside
