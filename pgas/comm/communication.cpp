// The slow paths of rput/rget (communication.hpp) and put-with-signal (signal.hpp): memory
// this process cannot load and store is reached through the pgas layer's window, which the
// state keeps in a lock_all epoch. Remote completion is the window's flush of the target.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/signal.hpp>
#include <oneside/rma/request.hpp>
#include <oneside/rma/window.hpp>
#include <oneside/runtime/copy.hpp>
#include <oneside/runtime/wait.hpp>

#include "comm/window_call.hpp"
#include "context/pgas_context.hpp"
#include "error/check.hpp"
#include "error/hex.hpp"

namespace oneside::pgas::detail {
namespace {

using oneside::detail::hex;
using oneside::detail::raise;

const datatype& bytes_type() noexcept {
  return datatype::of<std::byte>();
}

count_t count_of(std::size_t bytes) noexcept {
  return static_cast<count_t>(bytes);
}

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

// A put through the window. Its source completion is the request's (or immediate for a
// copied value); its remote completion is a flush of the target, done at the first poll after
// the one at issue so that several puts issued in a row overlap.
class put_op {
 public:
  put_op(pgas_context& s, rank_t target) : state_(s), target_(target) {}

  void issue(std::uintptr_t addr, const void* src, std::size_t bytes, bool copy_source) {
    rma::window& w = state_.window();
    if (copy_source) {
      copy_.assign(static_cast<const std::byte*>(src), static_cast<const std::byte*>(src) + bytes);
      w.put(copy_.data(), count_of(bytes), bytes_type(), target_, disp_of(addr), count_of(bytes),
            bytes_type());
      source_done_ = true;
    } else {
      request_ = w.rput(src, count_of(bytes), bytes_type(), target_, disp_of(addr), count_of(bytes),
                        bytes_type());
    }
    ticket_ = state_.note_window_operation();
  }

  void issue_layout(const void* src, count_t src_count, const datatype& src_type,
                    std::uintptr_t addr, count_t dst_count, const datatype& dst_type) {
    request_ =
        state_.window().rput(src, src_count, src_type, target_, disp_of(addr), dst_count, dst_type);
    ticket_ = state_.note_window_operation();
  }

  bool source_complete() {
    std::lock_guard lock(mutex_);
    if (!source_done_) source_done_ = request_.test();
    return source_done_;
  }

  bool remote_complete(bool& first_poll) {
    if (first_poll) {  // the poll at issue: let the caller issue more before flushing
      first_poll = false;
      return false;
    }
    std::lock_guard lock(mutex_);
    if (!remote_done_) {
      if (!state_.flushed_through(ticket_)) state_.window().flush(target_);  // else quiet() did
      request_.wait();  // complete locally too after the flush: frees the request
      source_done_ = true;
      remote_done_ = true;
    }
    return true;
  }

 private:
  pgas_context& state_;
  const rank_t target_;
  std::mutex mutex_;  // the source and the remote future poll from any threads
  rma::request request_;
  std::uint64_t ticket_ = 0;
  std::vector<std::byte> copy_;
  bool source_done_ = false;
  bool remote_done_ = false;
};

std::shared_ptr<put_op> put_remote(rank_t r, std::uintptr_t addr, const void* src,
                                   std::size_t bytes, bool copy_source, const char* call) {
  pgas_context& s = checked_context(addr, r, call);
  auto op = std::make_shared<put_op>(s, r);
  through_window(call, [&] { op->issue(addr, src, bytes, copy_source); });
  return op;
}

future<> source_future(const std::shared_ptr<put_op>& op) {
  return make_pending_future([op] { return op->source_complete(); });
}

future<> remote_future(const std::shared_ptr<put_op>& op) {
  return make_pending_future([op, first = true]() mutable { return op->remote_complete(first); });
}

future<> get_remote(rank_t r, std::uintptr_t addr, void* dst, std::size_t bytes, const char* call) {
  pgas_context& s = checked_context(addr, r, call);
  rma::request req = through_window(call, [&] {
    return s.window().rget(dst, count_of(bytes), bytes_type(), r, disp_of(addr), count_of(bytes),
                           bytes_type());
  });
  return make_pending_future([req = std::move(req)]() mutable { return req.test(); });
}

future<> put_layout(const void* src, count_t src_count, const datatype& src_type, rank_t r,
                    std::uintptr_t addr, count_t dst_count, const datatype& dst_type) {
  pgas_context& s = checked_context(addr, r, "rput");
  auto op = std::make_shared<put_op>(s, r);
  through_window("rput",
                 [&] { op->issue_layout(src, src_count, src_type, addr, dst_count, dst_type); });
  return remote_future(op);
}

future<> get_layout(rank_t r, std::uintptr_t addr, count_t src_count, const datatype& src_type,
                    void* dst, count_t dst_count, const datatype& dst_type) {
  pgas_context& s = checked_context(addr, r, "rget");
  rma::request req = through_window("rget", [&] {
    return s.window().rget(dst, dst_count, dst_type, r, disp_of(addr), src_count, src_type);
  });
  return make_pending_future([req = std::move(req)]() mutable { return req.test(); });
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
  void* data = local_address(r, addr, bytes);
  void* sig = local_address(sig_rank, sig_addr, sizeof(std::uint64_t));
  if (data != nullptr && sig != nullptr && s.atomics_direct()) {
    // Both load/store reachable and every atomic on the signal is a CPU atomic (atomic.hpp):
    // copy, then store or add with release order.
    oneside::detail::copy_bytes(data, src, bytes);
    std::atomic_ref<std::uint64_t> word(*static_cast<std::uint64_t*>(sig));
    if (how == signal_op::set) {
      word.store(value, std::memory_order_release);
    } else {
      word.fetch_add(value, std::memory_order_release);
    }
    wake_after_write(sig_rank);
    return {};
  }
  rma::window& w = s.window();
  through_window("rput", [&] {
    if (data != nullptr) {
      oneside::detail::copy_bytes(data, src, bytes);
    } else {
      w.put(src, count_of(bytes), bytes_type(), r, disp_of(addr), count_of(bytes), bytes_type());
      w.flush(r);  // the data is visible at r before the signal can be
    }
    // The signal takes the window's atomic path (the one every other atomic on it takes),
    // whose owner-side application wakes the owner's waiters.
    w.accumulate(&value, 1, datatype::of<std::uint64_t>(), sig_rank, disp_of(sig_addr), 1,
                 datatype::of<std::uint64_t>(), how == signal_op::set ? op::replace : op::sum);
    w.flush(sig_rank);
  });
  // The owner's application of the accumulate (its agent, or the transport's atomic) wakes
  // its waiters; one applied here through a mapping does not.
  wake_after_write(sig_rank);
  return {};
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
  // Direct stores are ordered by the release fence; the window's paths may reorder puts to
  // one target, so they are completed (stronger than needed, and only when some are pending).
  pgas::detail::get_context("fence").flush_if_needed();
  std::atomic_thread_fence(std::memory_order_release);
}

void quiet() {
  pgas::detail::get_context("quiet").flush_if_needed();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace oneside
