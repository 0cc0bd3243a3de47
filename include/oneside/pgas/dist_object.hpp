// dist_object<T>: one T per rank, made together (UPC++'s dist_object). Every rank constructs
// its dist_objects in the same order, each with its own initial value; afterwards a rank uses
// its own value directly (*obj, obj->, local()) and reads any other rank's with fetch(rank)
// or through ptr(rank). The values live in the ranks' global heaps.
//
// fetch() copies a trivially copyable T between ranks byte by byte (rget); any other T must be
// serializable (serialization.hpp: std::vector<int>, std::string, a user type with the
// serialize/deserialize pair) and fetch() asks the owner for a copy with an rpc. A
// dist_object passed to rpc() for a `dist_object<T>&` parameter reaches the body as the
// target's own instance (rpc.hpp):
//   oneside::dist_object<std::vector<int>> v(std::vector<int>{});
//   oneside::rpc(1, [](oneside::dist_object<std::vector<int>>& d, int x) { d->push_back(x); },
//                v, 5).wait();
// ptr(r) exists for trivially copyable T only.
//
// Collectives: the constructor (an allgather of the values' addresses) and the destructor (a
// barrier, so that no rank frees its value while another may still fetch it: wait for your
// fetches before destroying). Both run over the world. Everything else is local and
// thread-safe as far as T's own access is (fetch reads the value without locking it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include <oneside/pgas/communication.hpp>
#include <oneside/pgas/future.hpp>
#include <oneside/pgas/global_ptr.hpp>
#include <oneside/pgas/heap.hpp>
#include <oneside/pgas/rpc.hpp>
#include <oneside/pgas/serialization.hpp>
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/op.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

namespace pgas::detail {
// Names a dist_object in this process: the n-th made has the same name on every rank
// (rpc/dist_object_registry.cpp); rpc finds the target's instance by it.
std::uint64_t register_dist_object(void* object);
void unregister_dist_object(std::uint64_t id) noexcept;
}  // namespace pgas::detail

template <class T>
class dist_object {
  static_assert(std::is_object_v<T> && std::is_copy_constructible_v<T> && !std::is_const_v<T> &&
                    !std::is_volatile_v<T> && !std::is_array_v<T>,
                "dist_object<T>: T must be a copy-constructible non-const object type");

 public:
  using value_type = T;

  // Collective over the world: this rank's value starts as `value`. Errors (on every rank,
  // nothing left allocated): no_mem when some rank's heap is full, not_open.
  explicit dist_object(const T& value)
      : id_(pgas::detail::register_dist_object(this)), uncaught_(std::uncaught_exceptions()) {
    const team& world = oneside::world();
    std::exception_ptr failed;
    try {
      mine_ = allocate<T>(1);
      local_ = ::new (static_cast<void*>(mine_.local())) T(value);
    } catch (...) {
      failed = std::current_exception();
    }
    where_ = allgather(world, static_cast<std::uint64_t>(local_ != nullptr ? mine_.address() : 0));
    for (std::size_t r = 0; r < where_.size(); ++r) {
      if (where_[r] != 0) continue;
      release();
      if (failed) std::rethrow_exception(failed);
      detail::raise(error_class::no_mem, {.call = "dist_object", .target = static_cast<rank_t>(r)},
                    "rank " + std::to_string(r) + " could not allocate its value");
    }
  }
  dist_object(const dist_object&) = delete;
  dist_object& operator=(const dist_object&) = delete;
  // Collective: a barrier, then each rank frees its value. Local only (no barrier) when the
  // scope is left by an exception.
  ~dist_object() {
    try {
      if (std::uncaught_exceptions() <= uncaught_) barrier(oneside::world());
    } catch (...) {
      // The runtime closed or a peer failed: the heap goes with the runtime.
    }
    release();
  }

  // This rank's value.
  T& local() noexcept { return *local_; }
  const T& local() const noexcept { return *local_; }
  T& operator*() noexcept { return *local_; }
  const T& operator*() const noexcept { return *local_; }
  T* operator->() noexcept { return local_; }
  const T* operator->() const noexcept { return local_; }

  // Rank r's value (trivially copyable T). Error rank for a rank outside the world.
  global_ptr<T> ptr(rank_t r) const requires std::is_trivially_copyable_v<T> {
    check_rank(r, "dist_object::ptr");
    return global_ptr<T>(r, static_cast<std::uintptr_t>(where_[static_cast<std::size_t>(r)]));
  }
  // A copy of rank r's value: rget for a trivially copyable T, an rpc to r otherwise. Error
  // rank for a rank outside the world.
  future<T> fetch(rank_t r) const requires(std::is_trivially_copyable_v<T> || serializable<T>) {
    if constexpr (std::is_trivially_copyable_v<T>) {
      return rget(global_ptr<const T>(ptr(r)));
    } else {
      check_rank(r, "dist_object::fetch");
      return rpc(
          r, [](dist_object& d) -> const T& { return *d; }, *this);
    }
  }

  // This dist_object's name, the same on every rank (what rpc sends for it).
  std::uint64_t id() const noexcept { return id_; }

 private:
  void check_rank(rank_t r, const char* call) const {
    if (r < 0 || static_cast<std::size_t>(r) >= where_.size()) [[unlikely]] {
      detail::raise(
          error_class::rank, {.call = call, .target = r},
          "rank " + std::to_string(r) + " is not in [0, " + std::to_string(where_.size()) + ")");
    }
  }
  // Destroys and frees this rank's value and forgets the name.
  void release() noexcept {
    pgas::detail::unregister_dist_object(id_);
    if (local_ != nullptr) local_->~T();
    local_ = nullptr;
    try {
      deallocate(mine_);
    } catch (...) {
      // The runtime closed: the heap goes with the runtime.
    }
  }

  std::uint64_t id_;
  global_ptr<T> mine_;
  T* local_ = nullptr;
  std::vector<std::uint64_t> where_;  // by world rank: the address of its value
  int uncaught_;
};

}  // namespace oneside
