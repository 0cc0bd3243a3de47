// rma::window: one-sided communication exactly as the spec's one-sided chapter describes it
// (../shared/spec/checklist.md, WIN-*, COM-*, REQ-*, SYN-*). A window is created collectively
// over a team in one of four flavours, exposes memory of every member, and is accessed with
// put/get/accumulate/get_accumulate/fetch_and_op/compare_and_swap (and their request-based
// forms) inside synchronization epochs.
//
// Target displacements are in units of the *target's* disp_unit from the target's base (for
// dynamic windows: absolute addresses in the target's address space, disp_unit 1). Errors are
// raised before any byte moves, with the spec's error classes; by default they throw
// oneside::error (the C++ form of "errors return"), set_error_handler(errors::fatal) aborts
// the job instead (ERR-2). A window is a move-only handle; free() (or destruction) is
// collective over the window's group. Scopes that hold an epoch (lock_epoch, lock_all_epoch,
// fence_epoch, access_epoch, exposure_epoch) are in epoch.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>

#include <oneside/rma/request.hpp>
#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/group.hpp>
#include <oneside/runtime/info.hpp>
#include <oneside/runtime/op.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside::rma {

// Displacements are address-sized and signed (dynamic windows take absolute addresses).
using disp_t = std::int64_t;

enum class flavor : std::uint8_t { create, allocate, allocate_shared, dynamic };
enum class memory_model : std::uint8_t { separate, unified };
enum class lock_type : std::uint8_t { shared = 1, exclusive = 2 };
enum class errors : std::uint8_t { throws, fatal };

// Assertions of the synchronization calls (SYN-29 … SYN-33), combinable with |.
enum class mode : unsigned {
  none = 0,
  nocheck = 1U << 0,
  nostore = 1U << 1,
  noput = 1U << 2,
  noprecede = 1U << 3,
  nosucceed = 1U << 4,
};
constexpr mode operator|(mode a, mode b) noexcept {
  return static_cast<mode>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr mode operator&(mode a, mode b) noexcept {
  return static_cast<mode>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}
constexpr bool any(mode m) noexcept {
  return static_cast<unsigned>(m) != 0;
}

// What shared_query reports about one member's segment of an allocate_shared window.
struct shared_segment {
  void* base;  // load/store pointer valid in this process
  std::size_t size;
  std::ptrdiff_t disp_unit;
};

namespace detail {
struct window_impl;
}

class window {
 public:
  // ---- creation (collective over `t`; ERR-1: errors are raised by the creating call) ----

  // Exposes [base, base + bytes) of this process's memory (WIN-2). bytes may be 0 (base is then
  // ignored). On the shm transport the pages of the range move into shared memory in place
  // (ONESIDE_SHM_REMAP; pointers stay valid, fork() children get private copies), so node
  // peers reach them directly. Every page it touches moves, write-protected while it moves so
  // no store of another thread is lost, when the kernel allows userfaultfd; otherwise only the
  // whole pages inside it, and other threads of this process must not store to
  // [base, base + bytes) while create() and free() run (stores beside it are safe).
  // Errors: disp (disp_unit <= 0), base (null base with bytes > 0), size, comm (null team).
  static window create(const team& t, void* base, std::size_t bytes, std::ptrdiff_t disp_unit,
                       const info& hints = {});
  // Allocates `bytes` of exposed memory per process (WIN-6); base() gives it.
  static window allocate(const team& t, std::size_t bytes, std::ptrdiff_t disp_unit,
                         const info& hints = {});
  // Allocates memory every member of `t` can load and store (WIN-8). Contiguous across the
  // members unless alloc_shared_noncontig=true (WIN-9, WIN-10). Error rma_shared when the
  // members do not share a node.
  static window allocate_shared(const team& t, std::size_t bytes, std::ptrdiff_t disp_unit,
                                const info& hints = {});
  // A window with no memory; attach()/detach() add and remove local regions (WIN-13).
  static window create_dynamic(const team& t, const info& hints = {});

  window() noexcept;  // a freed/null window: every call raises error(win)
  window(window&&) noexcept;
  window& operator=(window&&) noexcept;
  window(const window&) = delete;
  window& operator=(const window&) = delete;
  // Frees the window if it was not freed (collective). When the scope is left by an
  // exception, the release is local only (no barrier).
  ~window();

  // Collective; waits as the spec requires (WIN-17, WIN-18). Error rma_sync with an epoch open.
  void free();

  // ---- attributes (WIN-19 … WIN-23) ----------------------------------------------------
  bool is_valid() const noexcept { return impl_ != nullptr; }
  void* base() const;        // null for dynamic windows (MPI_BOTTOM)
  std::size_t size() const;  // 0 for dynamic windows
  std::ptrdiff_t disp_unit() const;
  rma::flavor flavor() const;
  // unified when the transport keeps one copy of exposed memory (its caps().unified_memory:
  // shm, node memory), else separate; the same for the window's life (MEM-1, MEM-5).
  memory_model model() const;
  oneside::group group() const;       // a copy of the window's group (WIN-20)
  const oneside::team& team() const;  // the window's own team (a private copy of the creator's)
  std::uint64_t id() const;
  info get_info() const;                        // the hints in effect, defaults included (WIN-23)
  void set_info(const info& hints);             // collective (WIN-22)
  shared_segment shared_query(rank_t r) const;  // allocate_shared only; r may be proc_null
  void attach(void* base, std::size_t bytes);   // dynamic only; local (WIN-14)
  void detach(const void* base);                // dynamic only; local (WIN-16)
  void set_error_handler(errors e);
  errors error_handler() const;

  // ---- communication: the spec's forms (COM-*) ------------------------------------------
  // Counts are element counts of the given datatypes; origin and target must have the same
  // type signature (COM-6). target may be proc_null (COM-4).
  void put(const void* origin, count_t origin_count, const datatype& origin_type, rank_t target,
           disp_t target_disp, count_t target_count, const datatype& target_type) const;
  void get(void* origin, count_t origin_count, const datatype& origin_type, rank_t target,
           disp_t target_disp, count_t target_count, const datatype& target_type) const;
  void accumulate(const void* origin, count_t origin_count, const datatype& origin_type,
                  rank_t target, disp_t target_disp, count_t target_count,
                  const datatype& target_type, op o) const;
  // origin may be null with op::no_op (COM-15).
  void get_accumulate(const void* origin, count_t origin_count, const datatype& origin_type,
                      void* result, count_t result_count, const datatype& result_type,
                      rank_t target, disp_t target_disp, count_t target_count,
                      const datatype& target_type, op o) const;
  void fetch_and_op(const void* origin, void* result, const datatype& type, rank_t target,
                    disp_t target_disp, op o) const;
  void compare_and_swap(const void* origin, const void* compare, void* result, const datatype& type,
                        rank_t target, disp_t target_disp) const;

  // Request-based forms: only inside passive-target epochs (REQ-1).
  request rput(const void* origin, count_t origin_count, const datatype& origin_type, rank_t target,
               disp_t target_disp, count_t target_count, const datatype& target_type) const;
  request rget(void* origin, count_t origin_count, const datatype& origin_type, rank_t target,
               disp_t target_disp, count_t target_count, const datatype& target_type) const;
  request raccumulate(const void* origin, count_t origin_count, const datatype& origin_type,
                      rank_t target, disp_t target_disp, count_t target_count,
                      const datatype& target_type, op o) const;
  request rget_accumulate(const void* origin, count_t origin_count, const datatype& origin_type,
                          void* result, count_t result_count, const datatype& result_type,
                          rank_t target, disp_t target_disp, count_t target_count,
                          const datatype& target_type, op o) const;

  // ---- typed conveniences (the target layout is the origin's, disp in target disp units) --
  template <predefined_element T>
  void put(std::span<const T> src, rank_t target, disp_t target_disp) const {
    put(src.data(), count_of(src), datatype::of<T>(), target, target_disp, count_of(src),
        datatype::of<T>());
  }
  template <predefined_element T>
  void put(const T& value, rank_t target, disp_t target_disp) const {
    put(std::span<const T>(&value, 1), target, target_disp);
  }
  template <predefined_element T>
  void get(std::span<T> dst, rank_t target, disp_t target_disp) const {
    get(dst.data(), count_of(dst), datatype::of<std::remove_const_t<T>>(), target, target_disp,
        count_of(dst), datatype::of<std::remove_const_t<T>>());
  }
  template <predefined_element T>
  void accumulate(std::span<const T> src, rank_t target, disp_t target_disp, op o) const {
    accumulate(src.data(), count_of(src), datatype::of<T>(), target, target_disp, count_of(src),
               datatype::of<T>(), o);
  }
  template <predefined_element T>
  T fetch_and_op(const T& value, rank_t target, disp_t target_disp, op o) const {
    T result{};
    fetch_and_op(&value, &result, datatype::of<T>(), target, target_disp, o);
    return result;
  }
  template <predefined_element T>
  T compare_and_swap(const T& value, const T& compare, rank_t target, disp_t target_disp) const {
    T result{};
    compare_and_swap(&value, &compare, &result, datatype::of<T>(), target, target_disp);
    return result;
  }
  template <predefined_element T>
  request rput(std::span<const T> src, rank_t target, disp_t target_disp) const {
    return rput(src.data(), count_of(src), datatype::of<T>(), target, target_disp, count_of(src),
                datatype::of<T>());
  }
  template <predefined_element T>
  request rget(std::span<T> dst, rank_t target, disp_t target_disp) const {
    return rget(dst.data(), count_of(dst), datatype::of<T>(), target, target_disp, count_of(dst),
                datatype::of<T>());
  }

  // ---- synchronization (SYN-*) ----------------------------------------------------------
  void fence(mode assert = mode::none);
  void lock(lock_type type, rank_t target, mode assert = mode::none);
  void unlock(rank_t target);
  void lock_all(mode assert = mode::none);
  void unlock_all();
  // General active target (PSCW, SYN-8 … SYN-14). Groups hold world ranks; every member must
  // belong to the window's group (error(group) otherwise). start never blocks: an operation
  // to a target waits for that target's matching post. complete returns once the epoch's
  // operations are complete at the origin and signalled to the targets, without waiting for
  // their wait. wait returns when every origin of the post group has completed; test is its
  // non-blocking form (true: the exposure epoch is closed).
  void post(const oneside::group& origins, mode assert = mode::none);
  void start(const oneside::group& targets, mode assert = mode::none);
  void complete();
  void wait();
  bool test();
  void flush(rank_t target);
  void flush_all();
  void flush_local(rank_t target);
  void flush_local_all();
  void sync();

  detail::window_impl& impl() const;  // for the layers above; error(win) on a null window

 private:
  // The window's state; error(win) naming `call` when the window is null.
  detail::window_impl& checked(std::string_view call) const {
    if (impl_ == nullptr) [[unlikely]] {
      null_window(call);
    }
    return *impl_;
  }
  [[noreturn]] static void null_window(std::string_view call);
  template <class S>
  static count_t count_of(const S& s) noexcept {
    return static_cast<count_t>(s.size());
  }
  explicit window(std::unique_ptr<detail::window_impl> impl) noexcept;
  std::unique_ptr<detail::window_impl> impl_;
};

}  // namespace oneside::rma
