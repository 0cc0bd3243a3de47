// Data movement through global pointers: rput/rget of single values, contiguous spans and
// non-contiguous layouts (datatypes), returning futures; blocking put/get; fence() and quiet()
// in OpenSHMEM's sense.
//
// Completion, as UPC++ separates it: an rput's *source completion* means its source buffer may
// be reused; its *remote completion* means the data is visible at the target. rput returns the
// remote-completion future (which implies source completion); rput(..., source_and_remote)
// returns both. An rget's future is ready when the data is in the destination buffer.
//
// Paths: memory this process can load and store (its own, and node peers' heap memory on the
// shm transport) is read and written directly, without a virtual call or a lock, and the
// operation is complete when the call returns. Everything else goes through the rma layer's
// access interface to the transport: no allocation and no lock per operation; the future of a
// remote put is ready once a flush of its target (one for every operation in flight to it:
// wait() or is_ready() does it) or quiet() completed it. Global pointers name memory a rank
// exposed: its global heap, its symmetric heap (and rma windows' memory); anything else is an
// error (rma_range), on this rank too.
//
// Waking waiters: a single-value rput/put to a node peer wakes that peer's threads sleeping in
// wait_until (signal.hpp), so a flag written with put is seen at once; span and layout puts do
// not (use put-with-signal for the word a rank waits on).
//
// Errors (oneside::error, raised by the call, nothing moved): null pointers and overlong spans
// → arg; a rank outside the world → rank; memory outside what the rank exposed (its heaps) →
// rma_range, naming the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>

#include <oneside/pgas/future.hpp>
#include <oneside/pgas/global_ptr.hpp>
#include <oneside/runtime/copy.hpp>
#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

// Selects both completions of an rput: rput(src, dst, source_and_remote).
struct source_and_remote_t {
  explicit source_and_remote_t() = default;
};
inline constexpr source_and_remote_t source_and_remote{};

// The two futures of rput(..., source_and_remote).
struct put_futures {
  future<> source;  // the source buffer may be reused
  future<> remote;  // the data is visible at the target
};

namespace pgas::detail {

// Elements rput/rget move byte by byte: trivially copyable objects.
template <class T>
concept transferable = std::is_trivially_copyable_v<T> && !std::is_const_v<T>;

// The remote path of every put: validates (null pointer: arg; rank outside the world: rank;
// memory the rank did not expose: rma_range; each naming `call`), then sends `bytes` from
// `src` to (r, addr) through the rma layer's access interface. The bytes are copied or sent
// before it returns (src may be reused); the future is ready once they are at the target.
future<> put_remote(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes,
                    const char* call);
// The remote path of a get into `dst` (validated likewise): ready when the bytes are there.
future<> get_remote(rank_t r, std::uintptr_t addr, void* dst, std::size_t bytes, const char* call);
// The same, blocking: the bytes are in `dst` on return.
void get_now(rank_t r, std::uintptr_t addr, void* dst, std::size_t bytes, const char* call);
// Layout forms, through the access interface (which copies memory mapped here itself).
future<> put_layout(const void* src, count_t src_count, const datatype& src_type, rank_t r,
                    std::uintptr_t addr, count_t dst_count, const datatype& dst_type);
future<> get_layout(rank_t r, std::uintptr_t addr, count_t src_count, const datatype& src_type,
                    void* dst, count_t dst_count, const datatype& dst_type);
// `blocks` blocks of `block_len` elements of `element` bytes, `stride` elements apart.
datatype strided_type(std::size_t blocks, std::size_t block_len, std::ptrdiff_t stride,
                      std::size_t element);
// The fast path of a value put: when this process loads and stores (r, addr), copies the
// `bytes` at src there, wakes r's waiters (wake_after_write) and returns true; else false.
bool put_value_direct(rank_t r, std::uintptr_t addr, const void* src, std::size_t bytes) noexcept;
// Wakes node peer r's waiting threads after a write there made through a mapping (not this
// rank's, nor a remote rank's: an update its owner applies wakes the owner's waiters there).
void wake_after_write(rank_t r) noexcept;
// The same after a sequentially consistent atomic write there (a store or read-modify-write
// through std::atomic_ref): no fence needed, see detail::notify_after_rmw.
void wake_after_rmw(rank_t r) noexcept;
// The fast path of a value get: copies *src into v when this process loads and stores it.
template <class T, class V>
bool load_direct(global_ptr<T> src, V& v) noexcept {
  const void* p = local_address(src.where(), src.address(), sizeof(V));
  if (p == nullptr) return false;
  std::memcpy(&v, p, sizeof(V));
  return true;
}
// The elements of a span as bytes, error(arg) when that overflows.
std::size_t span_bytes(std::size_t count, std::size_t element, const char* call);

}  // namespace pgas::detail

// ---- rput --------------------------------------------------------------------------------

// Writes `value` to *dst. The value is copied before the call returns.
template <pgas::detail::transferable T>
future<> rput(const T& value, global_ptr<T> dst) {
  if (pgas::detail::put_value_direct(dst.where(), dst.address(), &value, sizeof(T))) [[likely]] {
    return {};
  }
  return pgas::detail::put_remote(dst.where(), dst.address(), &value, sizeof(T), "rput");
}

// Writes src to dst[0, src.size()). src may be reused when the call returns.
template <pgas::detail::transferable T>
future<> rput(std::span<const T> src, global_ptr<T> dst) {
  const std::size_t bytes = pgas::detail::span_bytes(src.size(), sizeof(T), "rput");
  if (void* p = pgas::detail::local_address(dst.where(), dst.address(), bytes)) [[likely]] {
    oneside::detail::copy_bytes(p, src.data(), bytes);
    return {};
  }
  return pgas::detail::put_remote(dst.where(), dst.address(), src.data(), bytes, "rput");
}
template <pgas::detail::transferable T>
future<> rput(std::span<T> src, global_ptr<T> dst) {
  return rput(std::span<const T>(src), dst);
}

// Both completions: .source when src may be reused (at once: the bytes are copied or sent
// before the call returns), .remote when the data is at the target.
template <pgas::detail::transferable T>
put_futures rput(std::span<const T> src, global_ptr<T> dst, source_and_remote_t) {
  const std::size_t bytes = pgas::detail::span_bytes(src.size(), sizeof(T), "rput");
  if (void* p = pgas::detail::local_address(dst.where(), dst.address(), bytes)) {
    oneside::detail::copy_bytes(p, src.data(), bytes);
    return {};
  }
  return {future<>(),
          pgas::detail::put_remote(dst.where(), dst.address(), src.data(), bytes, "rput")};
}
template <pgas::detail::transferable T>
put_futures rput(std::span<T> src, global_ptr<T> dst, source_and_remote_t cx) {
  return rput(std::span<const T>(src), dst, cx);
}

// Non-contiguous: src_count elements of src_type from `src` to dst_count elements of dst_type
// at dst (displacements of the types in bytes from src and dst). The types' signatures must
// match (COM-6). The datatype engine flattens both sides once; pieces move as iovecs.
template <class T>
future<> rput(const T* src, count_t src_count, const datatype& src_type, global_ptr<T> dst,
              count_t dst_count, const datatype& dst_type) {
  return pgas::detail::put_layout(src, src_count, src_type, dst.where(), dst.address(), dst_count,
                                  dst_type);
}

// Strided convenience: `blocks` blocks of `block_len` elements; block i starts at
// src + i * src_stride and dst + i * dst_stride (strides in elements).
template <pgas::detail::transferable T>
future<> rput_strided(const T* src, std::ptrdiff_t src_stride, global_ptr<T> dst,
                      std::ptrdiff_t dst_stride, std::size_t block_len, std::size_t blocks) {
  const datatype s = pgas::detail::strided_type(blocks, block_len, src_stride, sizeof(T));
  const datatype d = pgas::detail::strided_type(blocks, block_len, dst_stride, sizeof(T));
  return rput(src, 1, s, dst, 1, d);
}

// ---- rget --------------------------------------------------------------------------------

// The value at src.
template <class T>
requires pgas::detail::transferable<std::remove_const_t<T>> future<std::remove_const_t<T>> rget(
    global_ptr<T> src) {
  using V = std::remove_const_t<T>;
  if (V v; pgas::detail::load_direct(src, v)) [[likely]] {
    return make_future(v);
  }
  V v;
  pgas::detail::get_now(src.where(), src.address(), &v, sizeof(V), "rget");
  return make_future(v);
}

// src[0, dst.size()) into dst, which must stay in place until the future is ready.
template <class T>
requires pgas::detail::transferable<std::remove_const_t<T>> future<> rget(
    global_ptr<T> src, std::span<std::remove_const_t<T>> dst) {
  using V = std::remove_const_t<T>;
  const std::size_t bytes = pgas::detail::span_bytes(dst.size(), sizeof(V), "rget");
  if (const void* p = pgas::detail::local_address(src.where(), src.address(), bytes)) [[likely]] {
    oneside::detail::copy_bytes(dst.data(), p, bytes);
    return {};
  }
  return pgas::detail::get_remote(src.where(), src.address(), dst.data(), bytes, "rget");
}

// Non-contiguous, as the rput form.
template <class T>
future<> rget(global_ptr<T> src, count_t src_count, const datatype& src_type,
              std::remove_const_t<T>* dst, count_t dst_count, const datatype& dst_type) {
  return pgas::detail::get_layout(src.where(), src.address(), src_count, src_type, dst, dst_count,
                                  dst_type);
}

template <class T>
requires pgas::detail::transferable<std::remove_const_t<T>> future<> rget_strided(
    global_ptr<T> src, std::ptrdiff_t src_stride, std::remove_const_t<T>* dst,
    std::ptrdiff_t dst_stride, std::size_t block_len, std::size_t blocks) {
  using V = std::remove_const_t<T>;
  const datatype s = pgas::detail::strided_type(blocks, block_len, src_stride, sizeof(V));
  const datatype d = pgas::detail::strided_type(blocks, block_len, dst_stride, sizeof(V));
  return rget(src, 1, s, dst, 1, d);
}

// ---- blocking forms ----------------------------------------------------------------------

// rput(value, dst).wait(): the value is visible at the target on return.
template <pgas::detail::transferable T>
void put(const T& value, global_ptr<T> dst) {
  if (pgas::detail::put_value_direct(dst.where(), dst.address(), &value, sizeof(T))) [[likely]] {
    return;
  }
  pgas::detail::put_remote(dst.where(), dst.address(), &value, sizeof(T), "put").wait();
}
template <pgas::detail::transferable T>
void put(std::span<const T> src, global_ptr<T> dst) {
  const std::size_t bytes = pgas::detail::span_bytes(src.size(), sizeof(T), "put");
  if (void* p = pgas::detail::local_address(dst.where(), dst.address(), bytes)) [[likely]] {
    oneside::detail::copy_bytes(p, src.data(), bytes);
    return;
  }
  pgas::detail::put_remote(dst.where(), dst.address(), src.data(), bytes, "put").wait();
}

// rget(src).wait().
template <class T>
requires pgas::detail::transferable<std::remove_const_t<T>> std::remove_const_t<T> get(
    global_ptr<T> src) {
  using V = std::remove_const_t<T>;
  V v;
  if (pgas::detail::load_direct(src, v)) [[likely]] {
    return v;
  }
  pgas::detail::get_now(src.where(), src.address(), &v, sizeof(V), "get");
  return v;
}
template <class T>
requires pgas::detail::transferable<std::remove_const_t<T>>
void get(global_ptr<T> src, std::span<std::remove_const_t<T>> dst) {
  rget(src, dst).wait();
}

// ---- ordering ----------------------------------------------------------------------------

// Orders this rank's earlier puts and atomics before its later ones, per target, as seen by
// that target (shmem_fence). Does not wait for completion unless the path needs it.
void fence();
// Completes every put and atomic this rank issued, to every target: on return each is
// visible at its target (shmem_quiet), and their futures are ready. Also ships every live
// aggregator of this rank and waits for its records (aggregator.hpp), and waits until every
// rpc_ff this rank issued, directly or through an aggregator, has run at its target (rpc.hpp
// says what that covers when bodies issue rpc_ff themselves).
void quiet();

}  // namespace oneside
