// The transport interface: the one seam between what one-sided communication means (rma,
// pgas) and how bytes move (shm, later mpi). Layer API, not for applications.
//
// Remote memory is named by (rank, address in the owner's address space), as in dynamic
// windows. Ranks are world ranks. Every function may be called from any thread.
//
// Completion: an operation is *locally complete* when its origin buffer may be reused (put,
// amo operand) or holds the data (get, amo result), and *remotely complete* when its effect is
// visible at the target. Operations given a `completion*` are tracked there (test/wait);
// flush(rank)/flush_all() complete remotely every operation this process issued to that rank,
// including active messages (the handler has run). With a null completion, put and amo return
// locally complete (an amo's result is in place), get returns with the data.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <oneside/runtime/amo.hpp>
#include <oneside/runtime/types.hpp>

#include "runtime/seqlock_table.hpp"

namespace oneside {
namespace detail {
class doorbell;
}

namespace transport {

// The atomics' names (<oneside/runtime/amo.hpp>, shared with the pgas layer's atomics).
using oneside::detail::amo_op;
using oneside::detail::amo_op_count;
using oneside::detail::amo_type;
using oneside::detail::amo_type_count;
using oneside::detail::amo_type_size;

// Operands as raw bits: a 4-byte value sits in the low 32 bits.
struct amo_args {
  amo_op op;
  amo_type type;
  std::uint64_t operand = 0;  // unused for load
  std::uint64_t compare = 0;  // compare_swap only; compared bitwise
};

// A set of (op, type) pairs.
class amo_set {
 public:
  constexpr bool contains(amo_op o, amo_type t) const noexcept { return (bits_ >> bit(o, t)) & 1U; }
  constexpr void add(amo_op o, amo_type t) noexcept { bits_ |= std::uint64_t{1} << bit(o, t); }

 private:
  static constexpr unsigned bit(amo_op o, amo_type t) noexcept {
    return static_cast<unsigned>(o) * amo_type_count + static_cast<unsigned>(t);
  }
  std::uint64_t bits_ = 0;
};

// What a transport can do; the layers above choose their paths from it.
struct transport_caps {
  bool atomics_coherent_with_cpu;  // shm: true; a network path: false
  amo_set native_amo;              // pairs run as CPU/NIC atomics when memory is direct()
  std::size_t max_inline_put;      // bytes copied before put() returns
  std::size_t max_am_payload;      // largest am_send payload
  // Whether the owner's loads and stores and peers' put/get/amo act on one copy of exposed
  // memory, which becomes coherent without further calls (MPI's unified memory model).
  bool unified_memory = true;
  // Whether a get given transport::deferred() holds its bytes on return anyway (shm).
  bool gets_complete_at_once = false;
  // Whether memory of allocate_group reaches faster than allocate_segment's (MPI: a window of
  // its own), so layers that can make their memory collectively should.
  bool group_memory_faster = false;
};

struct const_iov {
  const std::byte* base;
  std::size_t len;
};
struct mutable_iov {
  std::byte* base;
  std::size_t len;
};
struct remote_iov {
  std::uintptr_t addr;
  std::size_t len;
};

class backend;

// Tracks operations until they complete. Owned by the caller, who must test()/wait() it
// before destroying it. Not thread-safe: use one completion per thread or request.
class completion {
 public:
  completion() = default;
  completion(const completion&) = delete;
  completion& operator=(const completion&) = delete;
  completion(completion&&) = default;
  completion& operator=(completion&&) = default;
  ~completion() = default;

  // True when nothing is known to be outstanding (test() empties it as operations finish).
  bool is_empty() const noexcept { return pending_.empty(); }

  struct pending {
    rank_t target;
    std::uint64_t ticket;  // meaning is the backend's
  };
  std::vector<pending>& entries() noexcept { return pending_; }

 private:
  std::vector<pending> pending_;
};

// For put/get/putv/getv only: track nothing, and let the operation complete (origin buffer
// reusable, a get's data in place, the effect visible at the target) at this process's next
// flush_local/flush of that target or flush_local_all/flush_all — MPI's rule for MPI_Put and
// MPI_Get, which lets a network transport keep many operations in flight without copying.
// The caller keeps the buffer untouched until then.
completion* deferred() noexcept;

namespace detail {
// What segment and exposure share: a move-only handle on memory of this rank; the derived
// class's destructor hands it back to the transport that made it.
template <class Derived>
class memory_handle {
 public:
  memory_handle() = default;
  memory_handle(backend* owner, void* base, std::size_t size, std::uint64_t id) noexcept
      : owner_(owner), base_(base), size_(size), id_(id) {}
  memory_handle(memory_handle&& o) noexcept { swap(o); }
  memory_handle& operator=(memory_handle&& o) noexcept {
    Derived old(std::move(static_cast<Derived&>(o)));  // releases what this held, at scope end
    swap(old);
    return *this;
  }
  memory_handle(const memory_handle&) = delete;
  memory_handle& operator=(const memory_handle&) = delete;

  void* base() const noexcept { return base_; }
  std::size_t size() const noexcept { return size_; }
  std::uint64_t id() const noexcept { return id_; }

 protected:
  ~memory_handle() = default;
  backend* owner() const noexcept { return owner_; }

 private:
  void swap(memory_handle& o) noexcept {
    std::swap(owner_, o.owner_);
    std::swap(base_, o.base_);
    std::swap(size_, o.size_);
    std::swap(id_, o.id_);
  }
  backend* owner_ = nullptr;
  void* base_ = nullptr;
  std::size_t size_ = 0;
  std::uint64_t id_ = 0;
};
}  // namespace detail

// Memory allocated by the transport in exposed shared memory (zeroed, page-aligned).
// Move-only; destroying it withdraws the memory: peers may no longer reach it.
class segment : public detail::memory_handle<segment> {
 public:
  segment() = default;
  // The handle on memory `owner` made (counted in its live_handles() unless base is null).
  segment(backend* owner, void* base, std::size_t size, std::uint64_t id) noexcept;
  segment(segment&&) noexcept = default;
  segment& operator=(segment&&) noexcept = default;
  ~segment();

  std::uintptr_t address() const noexcept { return reinterpret_cast<std::uintptr_t>(base()); }
  explicit operator bool() const noexcept { return base() != nullptr; }
};

// Local memory the runtime did not allocate, made reachable by peers (for as long as the
// handle lives). On shm, the pages lying wholly inside the range are moved into shared memory
// in place (ONESIDE_SHM_REMAP; anonymous private memory only), so peers reach them by
// load/store (direct()/pin() on that part); the rest is reached with cross-memory attach and
// the owner's agent. While the handle is made or destroyed, no thread may write to the range.
// Move-only.
class exposure : public detail::memory_handle<exposure> {
 public:
  exposure() = default;
  // The handle on an exposure `owner` made (counted in its live_handles()).
  exposure(backend* owner, void* base, std::size_t size, std::uint64_t id) noexcept;
  exposure(exposure&&) noexcept = default;
  exposure& operator=(exposure&&) noexcept = default;
  ~exposure();
};

// A peer's memory mapped into this process for as long as the handle lives, even if the
// owner withdraws it meanwhile (the memory then lives on until the last pin goes). Empty
// (get() == nullptr) when that memory is not load/store reachable from here. Move-only.
class pinned {
 public:
  pinned() = default;
  pinned(void* ptr, std::size_t size, std::shared_ptr<const void> keep) noexcept
      : ptr_(ptr), size_(size), keep_(std::move(keep)) {}
  void* get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return size_; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
  std::shared_ptr<const void> keep_;
};

// The transport's one table of exposed memory, as this process sees it: for each rank of
// this node, the ranges it exposed (segments, and exposures of user memory) and, where this
// process loads and stores them, their mapping here. Read inline, without a virtual call or a
// lock: one table per rank, current while its tag equals the owner's version (one load); the
// transport rewrites a stale one in place under a sequence lock (seqlock_table.hpp, which says
// why nothing of it is ever reclaimed while the transport lives and memory stays bounded
// anyway). Ranks off this node have no entries: backend::exposes() answers for them. find()
// returns a copy; the mapping it names stays valid until the owner withdraws the memory, and
// pin() gives a handle that keeps it longer.
class reach_table {
 public:
  struct entry {
    std::uintptr_t base;  // in the owner's address space
    std::size_t len;
    std::byte* local;  // the mapping here, or null (reached by messages or cross-memory attach)
    std::uint64_t id;  // the owner's name for it
  };

  reach_table() = default;
  reach_table(const reach_table&) = delete;
  reach_table& operator=(const reach_table&) = delete;

  // The entry holding all of [addr, addr + len) of rank `r` (a mapped one when there are
  // two), or nothing when `r` exposed no such range or is not on this node.
  std::optional<entry> find(rank_t r, std::uintptr_t addr, std::size_t len) noexcept;
  // A pointer through which this process loads and stores [addr, addr + len) of `r`, or null.
  // Inline for the common case: the mapped entry the last lookup of `r` found, which reading
  // its three words and the table's sequence, tag and owner's version confirms.
  void* local(rank_t r, std::uintptr_t addr, std::size_t len) noexcept {
    if (r < 0 || r >= ranks_) return nullptr;
    rank_view& s = slots_[static_cast<std::size_t>(r)];
    if (s.version == nullptr) return nullptr;
    const table::reader t(s.entries);
    if (const std::size_t h = s.hint.load(std::memory_order_relaxed);
        h < t.size() && t.tag() == s.version->load(std::memory_order_acquire)) {
      const std::uintptr_t base = t.word(h, base_word);
      const std::size_t n = t.word(h, len_word);
      const std::uintptr_t at = t.word(h, local_word);
      if (at != 0 && addr - base <= n && len <= n - (addr - base) && t.valid()) [[likely]] {
        return reinterpret_cast<std::byte*>(at) + (addr - base);
      }
    }
    return local_slow(r, addr, len);
  }

 protected:
  ~reach_table() = default;
  using table = oneside::detail::seqlock_table<entry>;
  // What a lookup reads comes first, in one cache line.
  struct alignas(64) rank_view {
    const std::atomic<std::uint64_t>* version = nullptr;  // the owner's; null: not on this node
    // The index of the mapped entry the last lookup found (most lookups hit the one before
    // them), tried first. Any thread may update it; a stale hint only costs the scan.
    std::atomic<std::uint32_t> hint{0};
    table entries;  // sorted by base; tagged with the owner's version they copy
  };
  // Sets up a slot per job rank (none on the node until given a version word).
  void init_slots(int ranks) {
    ranks_ = ranks;
    slots_ = std::make_unique<rank_view[]>(static_cast<std::size_t>(ranks));
  }
  rank_view& view_of(rank_t r) noexcept { return slots_[static_cast<std::size_t>(r)]; }
  // find() under the lock that orders the rewrites of rank r's table, after bringing it up to
  // date (the owning backend; its lookup is look_up()).
  virtual std::optional<entry> find_current(rank_t r, std::uintptr_t addr,
                                            std::size_t len) noexcept = 0;
  // The lookup itself, in what `t` reads of `s` (which it may find changed: see valid()).
  static std::optional<entry> look_up(rank_view& s, const table::reader& t, std::uintptr_t addr,
                                      std::size_t len) noexcept;

 private:
  // An entry's words, as local() reads them.
  static constexpr std::size_t base_word = 0;
  static constexpr std::size_t len_word = 1;
  static constexpr std::size_t local_word = 2;
  void* local_slow(rank_t r, std::uintptr_t addr, std::size_t len) noexcept;

  int ranks_ = 0;
  std::unique_ptr<rank_view[]> slots_;
};
static_assert(offsetof(reach_table::entry, base) == 0 && offsetof(reach_table::entry, len) == 8 &&
              offsetof(reach_table::entry, local) == 16 && sizeof(reach_table::entry) == 32);

// ---- active messages ------------------------------------------------------------------

using am_handler_id = std::uint32_t;

// Runs at the target, on its agent thread (or inside progress() when ONESIDE_AGENT=poll).
// It may issue transport operations (e.g. put a result back to `source`); the sender sees
// the message remotely complete only after the handler returned and those operations are
// remotely complete. Handlers of messages from one source run in the order sent.
using am_handler = void (*)(backend& t, rank_t source, std::span<const std::byte> payload);

// Registers `fn` under `name`, which must be unique in the program. The id is a hash of the
// name, so ranks agree on ids whatever the order of registration; every rank that can
// receive the message must have registered it. Throws error(arg) on a name collision.
am_handler_id register_am_handler(std::string_view name, am_handler fn);

// ---- the interface --------------------------------------------------------------------

// How allocate_segment and allocate_group make memory. Memory is reserved (set aside in the
// transport's backing store, /dev/shm on shm) before it is handed out, so that touching it can
// never fail later (on shm a store to a page /dev/shm has no room for is a SIGBUS): the first
// `reserve_front` and the last `reserve_back` bytes (rounded up to pages) when the segment is
// made, all of it by default; the rest is reserved with backend::reserve() before it is used
// (an allocator's arena, carved from the front). Memory that cannot be reserved is
// error(no_mem) naming `call`, the bytes and what is free, and nothing is made.
struct segment_request {
  std::string_view call = "allocate_segment";
  std::size_t reserve_front = SIZE_MAX;
  std::size_t reserve_back = 0;
};

class backend {
 public:
  backend() = default;
  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;
  virtual ~backend() = default;

  virtual std::string_view name() const noexcept = 0;
  virtual const transport_caps& caps() const noexcept = 0;
  virtual rank_t rank() const noexcept = 0;
  virtual int size() const noexcept = 0;
  // The world ranks whose exposed memory this process can load and store (direct()/pin()),
  // this rank included, ascending: the same set on each of them (the node's ranks).
  virtual std::span<const rank_t> node_ranks() const noexcept = 0;

  // Memory. allocate_segment is local (not collective); bytes may be 0. Reserved as `how`
  // says (all of it by default; error(no_mem) when it cannot be).
  virtual segment allocate_segment(std::size_t bytes, const segment_request& how) = 0;
  segment allocate_segment(std::size_t bytes) { return allocate_segment(bytes, {}); }
  // Collective over `members` (job ranks, the same list in the same order on each, this rank
  // among them): a segment like allocate_segment's, for memory those members reach in each
  // other's segments of the same call (the memory of an rma window of flavour allocate). A
  // transport may serve such a group faster than memory in general: the MPI backend gives it
  // a window of its own (MPI_Win_create), which Open MPI's osc ucx reaches without reading a
  // dynamic window's region table at every operation. Destroying the segments is collective
  // over the members too (each destroys its own, in the order they were made). A member that
  // cannot get its memory raises error(no_mem); whether the others do too is the transport's
  // (MPI: they do; the default, allocate_segment, does not know the others), so callers that
  // must fail together agree afterwards.
  virtual segment allocate_group(std::span<const rank_t> members, std::size_t bytes,
                                 const segment_request& how) {
    (void)members;
    return allocate_segment(bytes, how);
  }
  // Reserves [offset, offset + bytes) (rounded out to pages) of `s`, a segment of this rank
  // made with part of it unreserved (segment_request), before that part is used. Reserving
  // again what is reserved changes nothing. Local; thread-safe. error(no_mem) naming `call`
  // and what is free when it cannot (nothing more is reserved then).
  virtual void reserve(const segment& s, std::size_t offset, std::size_t bytes,
                       std::string_view call) = 0;
  virtual exposure expose(void* base, std::size_t bytes) = 0;
  // For memory that peers reach without an exposure anyway (the regions of dynamic windows,
  // which cross-memory attach and the owner's agent reach at any address): an exposure only
  // where it lets node peers load and store some of the memory (pin_exposure with its id), made
  // and released safely whatever other threads of this process store meanwhile, in the range
  // or beside it, and within a share of the transport's resources; an empty one (id 0, holding
  // nothing) otherwise. So a program may ask for as much memory, as often, as it likes.
  virtual exposure expose_optional(void* base, std::size_t bytes) {
    (void)base;
    (void)bytes;
    return exposure();
  }

  // Data movement. `dst`/`src` may be this rank. Addresses need not be aligned.
  virtual void put(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src,
                   completion* c = nullptr) = 0;
  virtual void get(rank_t src, std::uintptr_t addr, std::span<std::byte> dst,
                   completion* c = nullptr) = 0;
  // Gather-scatter forms: the byte streams of both sides have the same total length and are
  // matched in order, whatever their split into pieces.
  virtual void putv(rank_t dst, std::span<const const_iov> local,
                    std::span<const remote_iov> remote, completion* c = nullptr) = 0;
  virtual void getv(rank_t src, std::span<const mutable_iov> local,
                    std::span<const remote_iov> remote, completion* c = nullptr) = 0;
  // Atomic on one 4- or 8-byte element at (dst, addr), which must be naturally aligned.
  // `result` (may be null for non-fetching use) receives the previous value's bits. When
  // that memory is not direct() from here, the owner applies the atomic and, unless it only
  // loads, wakes its own waiting threads: a thread of `dst` waiting for that word needs no
  // wake(dst) from the origin.
  virtual void amo(rank_t dst, std::uintptr_t addr, const amo_args& args, void* result,
                   completion* c = nullptr) = 0;

  // Completion.
  virtual void flush(rank_t target) = 0;
  virtual void flush_all() = 0;
  virtual void flush_local(rank_t target) = 0;
  virtual void flush_local_all() = 0;
  virtual bool test(completion& c) = 0;
  virtual void wait(completion& c) = 0;

  // A pointer through which this process can load and store (rank, addr … addr+len), or null
  // when that memory is not load/store reachable from here. For this rank it is `addr`
  // itself. The pointer stays valid until the owner releases the memory.
  virtual void* direct(rank_t rank, std::uintptr_t addr, std::size_t len) noexcept = 0;
  // Like direct(), but the mapping outlives a withdrawal by the owner (see pinned).
  virtual pinned pin(rank_t rank, std::uintptr_t addr, std::size_t len) = 0;
  // Like pin(), but only through what exposure `exposure_id` of `rank` moved into shared
  // memory, inside its own range; with exposure_id 0, only through `rank`'s segments (memory
  // the runtime allocated). What a caller keeps for as long as that exposure (or segment)
  // lives: never memory that another exposure of the same pages, made and released on its own
  // schedule, holds in shared memory for a while. For this rank: `addr` itself.
  virtual pinned pin_exposure(rank_t rank, std::uint64_t exposure_id, std::uintptr_t addr,
                              std::size_t len) {
    (void)exposure_id;
    return rank == this->rank() ? pin(rank, addr, len) : pinned();
  }
  // The table of exposed memory of this node's ranks (inline lookups; see reach_table).
  virtual reach_table& reach() noexcept = 0;
  // Whether [addr, addr + len) of `rank` lies in memory that rank exposed (a segment, or an
  // exposure of user memory): what the layers above check before an access, so that a bad
  // address is an error at the origin, not a fault at the target. Inline for this node's
  // ranks; for others the transport may ask the owner (once per miss).
  virtual bool exposes(rank_t rank, std::uintptr_t addr, std::size_t len) = 0;

  // Sends a short active message (payload up to caps().max_am_payload bytes, copied before
  // the call returns). Throws error(arg) for an unknown handler or an oversized payload.
  virtual void am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
                       completion* c = nullptr) = 0;

  // Advances outstanding work; runs active messages when this thread is their progress.
  virtual void progress() = 0;

  // Wakes threads of `rank` sleeping in the waiting primitive; cheap when none sleeps.
  virtual void wake(rank_t rank) noexcept = 0;
  // wake() for several ranks at once (one memory fence for all).
  virtual void wake(std::span<const rank_t> ranks) noexcept = 0;
  // This process's doorbell: what its waiting threads sleep on.
  virtual oneside::detail::doorbell& local_doorbell() noexcept = 0;
  // The doorbell of `rank`'s process when this process can ring it directly (a node peer
  // on shared memory): detail::notify(*bell) then does what wake(rank) does, without the
  // virtual call. Null when waking `rank` takes a message, and for ranks outside the job.
  virtual oneside::detail::doorbell* peer_doorbell(rank_t rank) noexcept = 0;

  // Called by segment/exposure destructors.
  virtual void release(segment& s) noexcept = 0;
  virtual void release(exposure& e) noexcept = 0;

  // The segments and exposures this backend made that still exist (their handles may release
  // into it at any time, closed or not): while there are any, the backend must stay.
  long live_handles() const noexcept { return live_handles_.load(std::memory_order_acquire); }

 private:
  friend class segment;
  friend class exposure;
  std::atomic<long> live_handles_{0};
};

// The transport of the open runtime. Throws error(not_open) naming `call` when none is open.
backend& current(std::string_view call = "transport::current");
// The transport of the open runtime, or null when none is open.
backend* current_if_open() noexcept;

}  // namespace transport
}  // namespace oneside
