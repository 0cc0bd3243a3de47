// CPU atomics for every (op, type) pair of the transport interface. Floating-point add, min
// and max use compare-exchange loops on the value; swap and compare_swap on floating types
// operate on the bits, so "equal" means bitwise identical (COM-18).
#include "runtime/amo_local.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/check.hpp"

namespace oneside::transport::detail {
namespace {

template <class T>
T from_bits(std::uint64_t bits) noexcept {
  T v;
  if constexpr (sizeof(T) == 4) {
    const auto low = static_cast<std::uint32_t>(bits);
    std::memcpy(&v, &low, 4);
  } else {
    std::memcpy(&v, &bits, 8);
  }
  return v;
}

template <class T>
void store_result(void* result, T v) noexcept {
  if (result != nullptr) std::memcpy(result, &v, sizeof(T));
}

// min/max by compare-exchange: replace while the operand is better than what is there.
template <class T, class Better>
T fetch_better(std::atomic_ref<T> ref, T operand, Better better) noexcept {
  T old = ref.load();
  while (better(operand, old) && !ref.compare_exchange_weak(old, operand)) {
  }
  return old;
}

template <class T>
void apply_typed(void* p, const amo_args& a, void* result) noexcept {
  using bits_t = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::atomic_ref<T> ref(*static_cast<T*>(p));
  const T operand = from_bits<T>(a.operand);
  switch (a.op) {
    case amo_op::load:
      store_result(result, ref.load());
      return;
    case amo_op::store:
      if (result != nullptr) {
        store_result(result, ref.exchange(operand));
      } else {
        ref.store(operand);
      }
      return;
    case amo_op::add:
      store_result(result, ref.fetch_add(operand));
      return;
    case amo_op::min:
      store_result(result, fetch_better(ref, operand, [](T x, T y) { return x < y; }));
      return;
    case amo_op::max:
      store_result(result, fetch_better(ref, operand, [](T x, T y) { return y < x; }));
      return;
    default:
      break;
  }
  // Bitwise ops, swap and compare_swap work on the bits (integers: the same thing).
  std::atomic_ref<bits_t> bref(*static_cast<bits_t*>(p));
  const auto bop = from_bits<bits_t>(a.operand);
  switch (a.op) {
    case amo_op::band:
      if constexpr (std::is_integral_v<T>) store_result(result, bref.fetch_and(bop));
      return;
    case amo_op::bor:
      if constexpr (std::is_integral_v<T>) store_result(result, bref.fetch_or(bop));
      return;
    case amo_op::bxor:
      if constexpr (std::is_integral_v<T>) store_result(result, bref.fetch_xor(bop));
      return;
    case amo_op::swap:
      store_result(result, bref.exchange(bop));
      return;
    case amo_op::compare_swap: {
      bits_t expected = from_bits<bits_t>(a.compare);
      bref.compare_exchange_strong(expected, bop);
      store_result(result, expected);  // the previous value, whether or not it matched
      return;
    }
    default:
      return;
  }
}

}  // namespace

bool amo_is_defined(amo_op op, amo_type type) noexcept {
  const bool is_float = type == amo_type::f32 || type == amo_type::f64;
  const bool bitwise = op == amo_op::band || op == amo_op::bor || op == amo_op::bxor;
  return !(is_float && bitwise);
}

void amo_apply(void* p, const amo_args& a, void* result) noexcept {
  switch (a.type) {
    case amo_type::i32:
      apply_typed<std::int32_t>(p, a, result);
      return;
    case amo_type::u32:
      apply_typed<std::uint32_t>(p, a, result);
      return;
    case amo_type::i64:
      apply_typed<std::int64_t>(p, a, result);
      return;
    case amo_type::u64:
      apply_typed<std::uint64_t>(p, a, result);
      return;
    case amo_type::f32:
      apply_typed<float>(p, a, result);
      return;
    case amo_type::f64:
      apply_typed<double>(p, a, result);
      return;
  }
}

void apply_amo_message(backend& t, rank_t source, std::span<const std::byte> payload) {
  amo_request req;
  std::memcpy(&req, payload.data(), sizeof req);
  std::uint64_t old = 0;
  amo_apply(reinterpret_cast<void*>(req.addr), req.args, &old);
  // Whoever sleeps here waiting for this word learns of the change without a wake() of the
  // origin's (one message less per update over a network).
  if (req.args.op != amo_op::load) t.wake(t.rank());
  if (req.result_addr != 0) {
    t.put(source, req.result_addr,
          std::as_bytes(std::span(&old, 1)).first(amo_type_size(req.args.type)));
  }
}

am_handler_id amo_message_handler() {
  static const am_handler_id id = register_am_handler("oneside.transport.amo", &apply_amo_message);
  return id;
}

void check_amo(rank_t dst, std::uintptr_t addr, const amo_args& args) {
  ONESIDE_CHECK(amo_is_defined(args.op, args.type), error_class::op, {.call = "amo", .target = dst},
                "bitwise atomics are not defined on floating point");
  ONESIDE_CHECK(addr % amo_type_size(args.type) == 0, error_class::arg,
                {.call = "amo", .target = dst},
                "the target of an atomic must be aligned to its size");
}

void send_amo(backend& t, rank_t dst, std::uintptr_t addr, const amo_args& args, void* result,
              completion* c) {
  const amo_request req{addr, reinterpret_cast<std::uintptr_t>(result), args};
  const auto payload = std::as_bytes(std::span(&req, 1));
  if (c != nullptr || result == nullptr) {
    t.am_send(dst, amo_message_handler(), payload, c);
    return;
  }
  completion own;
  t.am_send(dst, amo_message_handler(), payload, &own);
  t.wait(own);
}

}  // namespace oneside::transport::detail
