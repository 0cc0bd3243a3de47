// The MPI backend's class and the message formats its files share (see mpi_transport.hpp for
// the design). Internal to this folder: the only header of the transport that includes MPI.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "runtime/check.hpp"
#include "transport/mpi/mpi_transport.hpp"

namespace oneside::transport::mpi_detail {

// Messages on the backend's communicator.
enum message_tag : int { tag_am = 1, tag_ack = 2, tag_wake = 3 };

// What a message on tag_am asks of its target: run a registered handler, or move bytes in or
// out of memory that is not attached to the job's window (see "memory served by messages").
enum message_kind : std::uint32_t { kind_handler = 0, kind_put = 1, kind_get = 2, kind_table = 3 };
struct am_header {
  std::uint32_t handler;
  std::uint32_t kind;  // message_kind
  std::uint64_t ticket;
};
// kind_put: count, count x (address, length), then the bytes of every piece in order.
// kind_get: count, count x get_piece; the acknowledgement carries the bytes back.
// kind_table: where the origin wants the target's exposed ranges (table_request); the
//             acknowledgement carries their count and as many as fit, as ranges.
struct table_request {
  std::uint64_t origin;    // a buffer of `capacity` ranges at the origin
  std::uint64_t count_at;  // where the origin wants the count
  std::uint64_t capacity;
};
struct put_piece {
  std::uint64_t addr;
  std::uint64_t len;
};
struct get_piece {
  std::uint64_t addr;  // at the target
  std::uint64_t len;
  std::uint64_t origin;  // where the bytes go at the origin
};
struct ack_header {
  std::uint64_t ticket;
  std::uint32_t pieces;  // reply pieces that follow: (address, length) and the bytes
  std::uint32_t flags;   // ack_reach: a range follows the pieces
};
inline constexpr std::uint32_t ack_reach = 1;
struct reply_piece {
  std::uint64_t addr;
  std::uint64_t len;
};

// An address range [lo, hi). In an acknowledgement (ack_reach): a range of the target's that
// is attached to the job's window, so its sender reaches it with MPI_Put/MPI_Get from now on
// (attachments stay until the runtime closes).
struct range {
  std::uintptr_t lo = 0;
  std::uintptr_t hi = 0;
};
// Sorted, non-overlapping ranges: a rank's attached chunks, or those an origin learnt of a
// target. Ranges are only added (attachments stay until the runtime closes).
class range_set {
 public:
  // The range holding [addr, addr + len), or an empty one (hi == 0).
  range find(std::uintptr_t addr, std::size_t len) const {
    const auto it = after(addr);
    if (it == ranges_.begin() || addr + len > std::prev(it)->hi) return {};
    return *std::prev(it);
  }
  void insert(range r) {
    const auto it = after(r.lo);
    if (it != ranges_.begin() && std::prev(it)->lo == r.lo) return;  // known already
    ranges_.insert(it, r);
  }
  auto begin() const noexcept { return ranges_.begin(); }
  auto end() const noexcept { return ranges_.end(); }
  void clear() noexcept { ranges_.clear(); }
  // Replaces every range with `sorted` (by lo).
  void assign(std::vector<range> sorted) noexcept { ranges_ = std::move(sorted); }

 private:
  std::vector<range>::const_iterator after(std::uintptr_t addr) const {
    return std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                            [](std::uintptr_t a, const range& x) { return a < x.lo; });
  }
  std::vector<range> ranges_;
};

// Completion entries: the top two bits of the ticket say what is pending.
inline constexpr unsigned kind_shift = 62;
inline constexpr std::uint64_t kind_am = 1;       // an active message (its acknowledgement)
inline constexpr std::uint64_t kind_request = 2;  // an MPI request (MPI_Rput/MPI_Rget)
inline constexpr std::uint64_t ticket_mask = (std::uint64_t{1} << kind_shift) - 1;
constexpr std::uint64_t make_ticket(std::uint64_t kind, std::uint64_t value) noexcept {
  return (kind << kind_shift) | (value & ticket_mask);
}

// Puts with a null completion up to this size are copied and stay in flight; larger ones are
// completed locally before the call returns.
inline constexpr std::size_t stage_limit = 16 * 1024;
// Segments come out of chunks of at least this size (virtual: pages are used when touched).
inline constexpr std::size_t chunk_bytes = std::size_t{64} << 20;
// MPI counts are int: larger transfers go in pieces.
inline constexpr std::size_t max_piece = std::size_t{1} << 30;
// Gets batched until their flush (ONESIDE_MPI_GET_BATCH): of at most batch_piece bytes each,
// sent early once batch_pieces wait for one peer.
inline constexpr std::size_t batch_piece = 256;
inline constexpr std::size_t batch_pieces = 4096;

// Raises the error of a failed MPI call: arg for the caller's bad addresses and ranges,
// intern for anything else.
[[noreturn]] void mpi_failed(int rc, std::string_view call, rank_t target);
inline void check(int rc, std::string_view call, rank_t target = no_rank) {
  if (rc != MPI_SUCCESS) [[unlikely]] {
    mpi_failed(rc, call, target);
  }
}

// While this rank's dispatch runs a handler: puts to the message's source travel back in the
// acknowledgement (one message instead of a put, a flush and a message).
struct reply_capture {
  const void* owner;
  rank_t source;
  std::vector<std::byte> bytes;
  std::uint32_t pieces = 0;
  bool touched_others = false;   // the handler also moved data elsewhere: flush before the ack
  std::vector<rank_t> messaged;  // ranks it sent transfers by message: their acks come first
};
inline thread_local reply_capture* t_capture = nullptr;

// One piece of a transfer by messages: `len` bytes at the target's `addr`, from or to `local`.
struct moved_piece {
  std::uintptr_t addr;
  std::byte* local;
  std::size_t len;
};

// A member's part of a group window (allocate_group) as an origin sees it: the range, the
// window, the member's rank in it, and the operations issued to it and completed by a flush
// (a flush with nothing new to complete skips MPI_Win_flush on that window).
struct group_target {
  range span;
  MPI_Win win;
  int rank;
  std::atomic<std::uint64_t> issued{0};
  std::atomic<std::uint64_t> flushed{0};
};

// Where MPI reaches a range of a peer: a group window, or the job's dynamic window (absolute
// addresses); `group` is null for the latter.
struct mpi_target {
  MPI_Win win;
  int rank;
  MPI_Aint disp;
  group_target* group;
};

// put or get: the two directions every data path of the backend has.
enum class direction : bool { get, put };

// An hindexed MPI datatype over byte pieces (iovec transfers), freed with the object.
struct byte_layout {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  byte_layout() = default;
  byte_layout(const byte_layout&) = delete;
  byte_layout& operator=(const byte_layout&) = delete;
  ~byte_layout() {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
};

}  // namespace oneside::transport::mpi_detail

namespace oneside::transport {

class mpi final : public runtime_backend {
 public:
  using direction = mpi_detail::direction;
  using moved_piece = mpi_detail::moved_piece;
  using range = mpi_detail::range;

  mpi(oneside::detail::bootstrap& boot, const mpi_options& opts);
  ~mpi() override { abandon(); }

  void close() override;
  void abandon() noexcept override;

  std::string_view name() const noexcept override { return "mpi"; }
  const transport_caps& caps() const noexcept override { return caps_; }
  rank_t rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::span<const rank_t> node_ranks() const noexcept override { return {&rank_, 1}; }

  using backend::allocate_segment;
  segment allocate_segment(std::size_t bytes, const segment_request& how) override;
  segment allocate_group(std::span<const rank_t> members, std::size_t bytes,
                         const segment_request& how) override;
  void reserve(const segment& s, std::size_t offset, std::size_t bytes,
               std::string_view call) override;
  exposure expose(void* base, std::size_t bytes) override;
  exposure expose_optional(void* base, std::size_t bytes) override;

  void put(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src,
           completion* c) override {
    contiguous<direction::put>(dst, addr, const_cast<std::byte*>(src.data()), src.size(), c, "put");
  }
  void get(rank_t src, std::uintptr_t addr, std::span<std::byte> dst, completion* c) override {
    contiguous<direction::get>(src, addr, dst.data(), dst.size(), c, "get");
  }
  void putv(rank_t dst, std::span<const const_iov> local, std::span<const remote_iov> remote,
            completion* c) override {
    scattered<direction::put>(dst, local, remote, c, "putv");
  }
  void getv(rank_t src, std::span<const mutable_iov> local, std::span<const remote_iov> remote,
            completion* c) override {
    scattered<direction::get>(src, local, remote, c, "getv");
  }
  void amo(rank_t dst, std::uintptr_t addr, const amo_args& args, void* result,
           completion* c) override;

  void flush(rank_t target) override;
  void flush_all() override;
  void flush_local(rank_t target) override;
  void flush_local_all() override;
  bool test(completion& c) override;
  void wait(completion& c) override;
  bool is_complete(const completion::pending& p) override;

  // Only this rank's own memory is load/store reachable through this backend.
  void* direct(rank_t r, std::uintptr_t addr, std::size_t) noexcept override {
    return r == rank_ ? reinterpret_cast<void*>(addr) : nullptr;
  }
  pinned pin(rank_t r, std::uintptr_t addr, std::size_t len) override {
    check_rank(r, "pin");
    return r == rank_ ? pinned(reinterpret_cast<void*>(addr), len, nullptr) : pinned();
  }
  void am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
               completion* c) override;
  void progress() override { poll(); }
  void wake(rank_t r) noexcept override;
  void wake(std::span<const rank_t> ranks) noexcept override;
  oneside::detail::doorbell& local_doorbell() noexcept override { return bell_; }
  // No rank's memory is load/store reachable through this backend: an empty table.
  reach_table& reach() noexcept override { return no_reach_; }
  bool exposes(rank_t r, std::uintptr_t addr, std::size_t len) override;
  oneside::detail::doorbell* peer_doorbell(rank_t) noexcept override { return nullptr; }
  void release(segment& s) noexcept override;
  void release(exposure& e) noexcept override;

 private:
  struct peer_state {
    std::mutex send_mutex;  // orders tickets with the sends that carry them
    std::atomic<std::uint64_t> issued{0};
    std::atomic<std::uint64_t> acked{0};
    std::mutex stage_mutex;  // orders staging and MPI_Put with the flushes that free copies
    std::vector<std::unique_ptr<std::byte[]>> staged;
    std::mutex reach_mutex;
    mpi_detail::range_set reachable;  // the peer's attached ranges learnt so far
    // The peer's parts of the group windows this rank belongs to (under reach_mutex).
    std::vector<std::unique_ptr<mpi_detail::group_target>> groups;
    // The peer's exposed memory as it last told this rank (exposes(): asked again on a miss).
    mpi_detail::range_set exposed;
    // Operations on the job's dynamic window to this peer, and how many a flush completed: a
    // flush with nothing new skips MPI_Win_flush (a round trip on osc ucx even when idle).
    std::atomic<std::uint64_t> dynamic_issued{0};
    std::atomic<std::uint64_t> dynamic_flushed{0};
    // Small gets whose bytes are due at the next flush of the peer (ONESIDE_MPI_GET_BATCH),
    // kept until then: the flush sends two or more as one message (one kind_get, answered by
    // one acknowledgement carrying every piece's bytes), a lone one as MPI_Get when MPI
    // reaches its bytes (else by message, as always).
    std::mutex batch_mutex;
    std::vector<std::pair<mpi_detail::moved_piece, std::optional<mpi_detail::mpi_target>>> batch;
  };
  // A group window (allocate_group): its communicator and window over this member's segment
  // of the node backend's memory, locked with lock_all for its life.
  struct group_window {
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Win win = MPI_WIN_NULL;
    segment memory;
    std::vector<rank_t> members;
  };
  // Segments are carved out of large chunks of the node backend's memory, each attached to
  // the window once: MPI engines limit the attachments of a dynamic window (Open MPI's osc
  // ucx: 32 per rank), and one attachment serves many segments. A chunk the engine refuses
  // (or every chunk, with ONESIDE_MPI_ATTACH=0) is served by messages.
  struct chunk {
    segment memory;
    std::map<std::uintptr_t, std::size_t> free;  // page-aligned free ranges, coalesced
  };
  struct carved {
    std::size_t chunk;  // index into chunks_
    std::uintptr_t base;
    std::size_t len;
  };

  peer_state& peer_of(rank_t r) noexcept { return peers_[static_cast<std::size_t>(r)]; }
  void check_rank(rank_t r, std::string_view call) const {
    if (r < 0 || r >= size_) [[unlikely]] {
      oneside::detail::raise(
          error_class::rank, {.call = call, .target = r},
          "rank " + std::to_string(r) + " is not in [0, " + std::to_string(size_) + ")");
    }
    if (closed_.load(std::memory_order_relaxed)) [[unlikely]] {
      oneside::detail::raise(error_class::not_open, {.call = call},
                             "the transport of a closed runtime was used");
    }
  }

  // ---- memory (memory.cpp)
  void attach_sentinel();
  bool attach_chunk(void* base, std::size_t bytes);
  // Under memory_mutex_: `bytes` out of a chunk (a new one when none has room), reserved in
  // the node backend's memory as `how` says; nothing changes when that fails (error no_mem).
  std::uintptr_t carve(std::size_t bytes, const segment_request& how, std::size_t& chunk_index);
  // Reserves the parts `how` names of [base, base + bytes) of chunk `c`.
  void reserve_carved(const chunk& c, std::uintptr_t base, std::size_t bytes,
                      const segment_request& how);
  // Returns [base, base + len) to chunk `index`'s free ranges, merged with its neighbours.
  void give_back(std::size_t index, std::uintptr_t base, std::size_t len) noexcept;
  // This rank's attached chunk holding [addr, addr + len), or an empty range.
  range attached_range(std::uintptr_t addr, std::size_t len);
  // Where MPI reaches [addr, addr + len) of `r` (a group window holding it, or the dynamic
  // window when the range is known to be attached), or nothing: messages carry it then.
  std::optional<mpi_detail::mpi_target> locate(rank_t r, std::uintptr_t addr, std::size_t len);
  bool all_reachable(rank_t r, std::span<const remote_iov> remote);
  // Frees a group window (collective over its members); `collective` false when this rank is
  // failing and only forgets it.
  void free_group(group_window& g, bool collective) noexcept;
  // MPI_Win_flush(_local) of every group window part of `r` with operations a flush has not
  // completed yet; all of them with r == no_rank (MPI_Win_flush(_local)_all).
  void flush_groups(rank_t r, bool local);

  // ---- rma (rma.cpp)
  // A contiguous put or get, every path: by message, deferred, as a request, staged (put),
  // or completed locally before returning.
  template <direction D>
  void contiguous(rank_t peer, std::uintptr_t addr, std::byte* local, std::size_t n, completion* c,
                  std::string_view call);
  // The iovec forms.
  template <direction D, class Iov>
  void scattered(rank_t peer, std::span<const Iov> local, std::span<const remote_iov> remote,
                 completion* c, std::string_view call);
  // One MPI_Put or MPI_Get of `n` bytes, in pieces of at most max_piece.
  void mpi_transfer(direction d, std::byte* local, std::size_t n, rank_t peer,
                    const mpi_detail::mpi_target& t, std::string_view call);
  // One MPI_(R)Put or MPI_(R)Get of `origin` (absolute addresses) to or from `target`
  // (offsets from t.disp), then as `c` asks.
  void transfer_layouts(direction d, rank_t peer, const mpi_detail::mpi_target& t,
                        const mpi_detail::byte_layout& origin,
                        const mpi_detail::byte_layout& target, completion* c,
                        std::string_view call);
  void track(completion& c, rank_t target, MPI_Request req);
  // Counts an operation just issued through `t` for the flushes that complete it.
  void note_issued(rank_t peer, const mpi_detail::mpi_target& t) noexcept;
  // MPI_Win_flush(_local) on the dynamic window to `r` (every rank: no_rank) when something
  // was issued there since the last such flush.
  void flush_dynamic(rank_t r, bool local);
  // Memory served by messages: the owner's progress thread copies the bytes.
  void by_message(direction d, rank_t peer, std::span<const moved_piece> pieces, completion* c);
  // A put to the source of the message whose handler this thread runs: appended to its
  // acknowledgement. False when this is not such a put.
  bool capture_reply(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src);
  bool in_handler() const noexcept {
    return mpi_detail::t_capture != nullptr && mpi_detail::t_capture->owner == this;
  }

  // ---- messages (messages.cpp)
  void send(rank_t dst, int tag, std::unique_ptr<std::byte[]> buf, std::size_t bytes);
  void reap_sends();
  std::uint64_t send_numbered(rank_t dst, std::uint32_t handler, mpi_detail::message_kind kind,
                              std::unique_ptr<std::byte[]> buf, std::size_t bytes);
  // Receives and runs what arrived. Its MPI calls are made only while no other thread of the
  // rank is in a one-sided call (window_mutex_ free; that call progresses MPI anyway), and it
  // stops at once otherwise: inside MPI it would spin on the engine's lock (UCX's worker
  // spinlock) for as long as that call runs, a core's worth of time taken from the ranks.
  bool poll() noexcept;
  // Receives one message from `source` with `tag` (wildcards allowed) into `into`, if one
  // is there; its size in `bytes`.
  bool receive(int source, int tag, std::vector<std::byte>& into, MPI_Status& st,
               std::size_t& bytes);
  void handle(rank_t source, int tag, std::span<const std::byte> msg);
  // Answers a kind_table message: this rank's exposed ranges, in the acknowledgement.
  void serve_table(rank_t source, std::uint64_t ticket, std::span<const std::byte> payload);
  // This rank's exposed memory: segments, group windows' parts and exposures, sorted.
  std::vector<range> exposed_ranges();
  // Applies a put by message; returns the attached chunk holding its first piece, if any.
  range serve_put(std::span<const std::byte> payload);
  // Answers a get by message: the acknowledgement carries the bytes, written straight into
  // the send buffer.
  void serve_get(rank_t source, std::uint64_t ticket, std::span<const std::byte> payload);
  // Sends the acknowledgement of `ticket` to `source`: its header, `reply_bytes` of reply pieces
  // that `write_replies(at)` writes in place (`pieces` of them), and `hint` when it is a range
  // (the attached chunk the message's first piece fell in). The one writer of the layout
  // take_ack reads.
  template <class WriteReplies>
  void send_ack(rank_t source, std::uint64_t ticket, std::uint32_t pieces, std::size_t reply_bytes,
                range hint, WriteReplies&& write_replies);
  void take_ack(rank_t source, std::span<const std::byte> msg);
  // Waits until `target` acknowledged `ticket`. A handler (which runs inside poll()) waits by
  // receiving that target's acknowledgements only, which run no handler: handler order stays.
  void await_ticket(rank_t target, std::uint64_t ticket, bool from_handler);
  // Sends `target`'s batched gets (peer_state::batch); their bytes arrive by the flush.
  void send_get_batch(rank_t target);
  // The same for every peer, when any get waits in a batch.
  void send_get_batches() {
    if (batched_.load(std::memory_order_acquire) == 0) return;
    for (rank_t r = 0; r < size_; ++r) send_get_batch(r);
  }
  void await_acks(rank_t target) {
    await_ticket(target, peer_of(target).issued.load(std::memory_order_acquire), in_handler());
  }
  void progress_main() noexcept;
  void stop_progress() noexcept;
  void park_while_busy() noexcept;

  // ---- completion (completion.cpp)
  void release_staged(rank_t target, std::vector<std::unique_ptr<std::byte[]>>& out);

  // One thread at a time in a one-sided call on win_ (and MPI_Test of its requests): Open
  // MPI 4.1's osc ucx fails two threads of a process doing put/get/flush at once
  // (MPI_ERR_OTHER, or a crash in ucp_rkey_destroy) although it grants MPI_THREAD_MULTIPLE.
  // Held for the MPI call only, never while waiting for acknowledgements or running handlers.
  template <class F>
  int on_window(F&& call) {
    const std::lock_guard lock(window_mutex_);
    in_mpi_.fetch_add(1, std::memory_order_seq_cst);
    const int rc = call();
    leave_mpi();
    return rc;
  }
  void leave_mpi() noexcept {
    // Dekker with park_while_busy(): each side writes its word, then reads the other's.
    if (in_mpi_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        parked_.load(std::memory_order_seq_cst) == 1) {
      parked_.store(0, std::memory_order_seq_cst);
      parked_.notify_one();
    }
  }

  struct empty_reach final : reach_table {
    std::optional<entry> find_current(rank_t, std::uintptr_t, std::size_t) noexcept override {
      return std::nullopt;
    }
  };
  empty_reach no_reach_;
  oneside::detail::bootstrap& boot_;
  mpi_options opts_;
  rank_t rank_;
  int size_;
  backend& memory_;
  oneside::detail::doorbell& bell_;
  backend& front_;
  transport_caps caps_{};
  MPI_Comm am_comm_ = MPI_COMM_NULL;
  MPI_Comm win_comm_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  std::unique_ptr<peer_state[]> peers_;

  std::mutex memory_mutex_;  // chunks_, carved_, exposures_, attached_, attach_refused_, groups_
  std::vector<std::unique_ptr<chunk>> chunks_;
  std::map<std::uint64_t, carved> carved_;          // this backend's segments, by id
  std::uint64_t next_id_ = std::uint64_t{1} << 48;  // apart from the memory backend's ids
  std::map<std::uint64_t, exposure> exposures_;     // the memory backend's, by id
  mpi_detail::range_set attached_;                  // this rank's chunks attached to the window
  bool attach_refused_ = false;                     // the engine refused one: attach no more
  std::map<std::uint64_t, std::unique_ptr<group_window>> groups_;  // by id, in creation order

  std::mutex poll_mutex_;  // one thread receives and dispatches at a time (handler order)
  std::vector<std::byte> rx_;
  std::mutex sends_mutex_;
  std::vector<MPI_Request> send_requests_;
  std::vector<std::unique_ptr<std::byte[]>> send_buffers_;

  // Operations on the dynamic window to any peer, and how many a flush_all completed.
  std::atomic<std::uint64_t> dynamic_issued_{0};
  // Gets waiting in the peers' batches (peer_state::batch), over all peers: flush_all and
  // flush_local_all look at the peers only when some wait.
  std::atomic<std::size_t> batched_{0};
  std::atomic<std::uint64_t> dynamic_flushed_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> closed_{false};
  std::thread progress_;
  std::mutex window_mutex_;
  // Threads of this rank inside a one-sided MPI call: they progress MPI themselves, so the
  // progress thread parks meanwhile (polling beside them would only fight them for the
  // engine's locks and, with ranks on every core, for the cores: waking every few
  // microseconds to look cost a put + flush 3x its time over TCP). The last one out wakes it.
  std::atomic<int> in_mpi_{0};
  std::atomic<std::uint32_t> parked_{0};  // 1 while the progress thread waits for in_mpi_ == 0
};

}  // namespace oneside::transport
