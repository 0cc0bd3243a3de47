// dist_object<T>: one T per rank, made together (UPC++'s dist_object). Every rank constructs
// its dist_objects in the same order, each with its own initial value; afterwards a rank uses
// its own value directly (*obj, obj->, local()) and reads any other rank's with fetch(rank)
// or through ptr(rank). The values live in the ranks' global heaps.
//
// T is trivially copyable: fetch() copies it between ranks byte by byte.
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
#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/op.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

template <class T>
class dist_object {
  static_assert(std::is_trivially_copyable_v<T> && std::is_copy_constructible_v<T> &&
                    std::is_default_constructible_v<T> && !std::is_const_v<T> &&
                    !std::is_volatile_v<T> && !std::is_array_v<T>,
                "dist_object<T>: T must be a trivially copyable, copy- and default-constructible "
                "non-const object type (fetch() copies it between ranks byte by byte)");

 public:
  using value_type = T;

  // Collective over the world: this rank's value starts as `value`. Errors (on every rank,
  // nothing left allocated): no_mem when some rank's heap is full, not_open.
  explicit dist_object(const T& value) : uncaught_(std::uncaught_exceptions()) {
    const team& world = oneside::world();
    std::exception_ptr failed;
    try {
      mine_ = allocate<T>(1);
      local_ = ::new (static_cast<void*>(mine_.local())) T(value);
    } catch (const oneside::error&) {
      failed = std::current_exception();
    }
    where_ = allgather(world, static_cast<std::uint64_t>(mine_.address()));
    for (std::size_t r = 0; r < where_.size(); ++r) {
      if (where_[r] != 0) continue;
      deallocate(mine_);
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
      deallocate(mine_);
    } catch (...) {
      // The runtime closed or a peer failed: the heap goes with the runtime.
    }
  }

  // This rank's value.
  T& local() noexcept { return *local_; }
  const T& local() const noexcept { return *local_; }
  T& operator*() noexcept { return *local_; }
  const T& operator*() const noexcept { return *local_; }
  T* operator->() noexcept { return local_; }
  const T* operator->() const noexcept { return local_; }

  // Rank r's value. Error rank for a rank outside the world.
  global_ptr<T> ptr(rank_t r) const {
    if (r < 0 || static_cast<std::size_t>(r) >= where_.size()) [[unlikely]] {
      detail::raise(
          error_class::rank, {.call = "dist_object::ptr", .target = r},
          "rank " + std::to_string(r) + " is not in [0, " + std::to_string(where_.size()) + ")");
    }
    return global_ptr<T>(r, static_cast<std::uintptr_t>(where_[static_cast<std::size_t>(r)]));
  }
  // A copy of rank r's value (rget). Error rank for a rank outside the world.
  future<T> fetch(rank_t r) const { return rget(global_ptr<const T>(ptr(r))); }

 private:
  global_ptr<T> mine_;
  T* local_ = nullptr;
  std::vector<std::uint64_t> where_;  // by world rank: the address of its value
  int uncaught_;
};

}  // namespace oneside
