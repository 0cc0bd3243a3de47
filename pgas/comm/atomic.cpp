// The compiled half of the atomics (atomic.hpp) and of global_ref's get/put (global_ref.hpp):
// the choice between CPU atomics and the window, and the window's path. Why the choice is
// job-wide: the rma layer applies every accumulate-family operation under the stripe lock of
// its word with plain loads and stores (rma/ops/stripe_lock.hpp), on every path — the direct
// one to node memory, the owner's agent for a remote origin. A CPU atomic on a word that some
// other rank updates through the window would race with that locked read-modify-write and
// lose updates. So CPU atomics are used only when no rank ever takes the window's path for
// heap memory: every rank loads and stores every other rank's heap (one node, shm), and the
// transport's atomics are the CPU's. Otherwise every atomic, this rank's own words included,
// goes through the window.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <oneside/pgas/atomic.hpp>
#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/global_ref.hpp>
#include <oneside/rma/window.hpp>
#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/op.hpp>

#include "comm/window_call.hpp"
#include "context/pgas_context.hpp"
#include "error/check.hpp"
#include "error/hex.hpp"

namespace oneside::pgas::detail {
namespace {

using oneside::detail::hex;
using oneside::detail::raise;

// See the file comment (pgas_context::atomics_direct: the same answer on every rank).
bool cpu_atomics_everywhere(pgas_context& s) noexcept {
  return s.atomics_direct();
}

// The element's arithmetic type (add, min, max, bitwise). long long travels as std::int64_t:
// the same size and arithmetic.
const datatype& value_type(atomic_type t) noexcept {
  switch (t) {
    case atomic_type::i32:
      return datatype::of<std::int32_t>();
    case atomic_type::u32:
      return datatype::of<std::uint32_t>();
    case atomic_type::i64:
      return datatype::of<std::int64_t>();
    case atomic_type::u64:
      return datatype::of<std::uint64_t>();
    case atomic_type::f32:
      return datatype::of<float>();
    case atomic_type::f64:
      return datatype::of<double>();
  }
  return datatype::of<std::uint64_t>();
}

// Loads, stores, exchanges and compare-exchanges move bits: the same-size unsigned type (the
// rma layer's compare_and_swap rejects floating point; its comparison is bitwise anyway).
const datatype& bits_type(atomic_type t) noexcept {
  return transport::amo_type_size(t) == 4 ? datatype::of<std::uint32_t>()
                                          : datatype::of<std::uint64_t>();
}

bool moves_bits(atomic_op o) noexcept {
  return o == atomic_op::load || o == atomic_op::store || o == atomic_op::swap ||
         o == atomic_op::compare_swap;
}

const datatype& type_for(atomic_op o, atomic_type t) noexcept {
  return moves_bits(o) ? bits_type(t) : value_type(t);
}

op rma_op(atomic_op o) noexcept {
  switch (o) {
    case atomic_op::load:
      return op::no_op;
    case atomic_op::add:
      return op::sum;
    case atomic_op::band:
      return op::band;
    case atomic_op::bor:
      return op::bor;
    case atomic_op::bxor:
      return op::bxor;
    case atomic_op::min:
      return op::min;
    case atomic_op::max:
      return op::max;
    case atomic_op::store:
    case atomic_op::swap:
    case atomic_op::compare_swap:
      return op::replace;
  }
  return op::replace;
}

// A 4- or 8-byte operand or result in the element's own width.
class word {
 public:
  word(std::uint64_t bits, std::size_t size) noexcept
      : size_(size), w32_(static_cast<std::uint32_t>(bits)), w64_(bits) {}
  void* data() noexcept { return size_ == 4 ? static_cast<void*>(&w32_) : &w64_; }
  std::uint64_t bits() const noexcept { return size_ == 4 ? w32_ : w64_; }

 private:
  std::size_t size_;
  std::uint32_t w32_;
  std::uint64_t w64_;
};

}  // namespace

void* atomic_address(rank_t r, std::uintptr_t addr, std::size_t bytes, const char* call) {
  pgas_context& s = checked_context(addr, r, call);
  if (addr % bytes != 0) [[unlikely]] {
    raise(error_class::arg, {.call = call, .target = r},
          "the word at " + hex(addr) + " is not " + std::to_string(bytes) +
              "-byte aligned (atomics need naturally aligned words)");
  }
  if (!cpu_atomics_everywhere(s)) return nullptr;
  return local_address(r, addr, bytes);
}

std::uint64_t atomic_fetch_window(atomic_op o, atomic_type t, rank_t r, std::uintptr_t addr,
                                  std::uint64_t operand, std::uint64_t compare, const char* call) {
  pgas_context& s = get_context(call);
  rma::window& w = s.window();
  const std::size_t n = transport::amo_type_size(t);
  word origin(operand, n);
  word expected(compare, n);
  word result(0, n);
  through_window(call, [&] {
    if (o == atomic_op::compare_swap) {
      w.compare_and_swap(origin.data(), expected.data(), result.data(), bits_type(t), r,
                         disp_of(addr));
    } else {
      w.fetch_and_op(origin.data(), result.data(), type_for(o, t), r, disp_of(addr), rma_op(o));
    }
    w.flush_local(r);  // the old value is here (and so the update was applied at r)
  });
  if (o != atomic_op::load) wake_after_write(r);
  return result.bits();
}

future<> atomic_update_window(atomic_op o, atomic_type t, rank_t r, std::uintptr_t addr,
                              std::uint64_t operand, const char* call) {
  pgas_context& s = get_context(call);
  // The operand stays in place until the flush completes the update (the origin buffer of an
  // accumulate is the caller's until then).
  auto origin = std::make_unique<word>(operand, transport::amo_type_size(t));
  const datatype& type = type_for(o, t);
  through_window(call, [&] {
    s.window().accumulate(origin->data(), 1, type, r, disp_of(addr), 1, type, rma_op(o));
  });
  const std::uint64_t ticket = s.note_window_operation();
  // Completed at the first poll after the one at issue, so that updates issued in a row
  // overlap (as rput's remote completion); a quiet() since then has completed it already.
  return make_pending_future([&s, r, ticket, origin = std::move(origin), first = true]() mutable {
    if (first) {
      first = false;
      return false;
    }
    if (!s.flushed_through(ticket)) s.window().flush(r);
    wake_after_write(r);
    origin.reset();
    return true;
  });
}

// ---- global_ref ----------------------------------------------------------------------------

void ref_get(rank_t r, std::uintptr_t addr, void* dst, std::size_t bytes, const char* call) {
  get_remote(r, addr, dst, bytes, call).wait();
}

void ref_put(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes, const char* call) {
  remote_future(put_remote(r, addr, src, bytes, false, call)).wait();
}

void ref_wake(rank_t r) noexcept {
  wake_after_write(r);
}

}  // namespace oneside::pgas::detail
