// The MPI transport. See mpi_transport.hpp for the design.
#include "transport/mpi/mpi_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <mpi.h>

#include <oneside/runtime/copy.hpp>
#include <oneside/runtime/wait.hpp>

#include "bootstrap/bootstrap.hpp"
#include "error/check.hpp"
#include "transport/am_registry.hpp"
#include "transport/amo_local.hpp"
#include "transport/iov_match.hpp"

namespace oneside::transport {
namespace {

using oneside::detail::raise;

// Messages on the transport's communicator.
enum message_tag : int { tag_am = 1, tag_ack = 2, tag_wake = 3 };

// What a message on tag_am asks of its target: run a registered handler, or move bytes in or
// out of memory that is not attached to the job's window (see "memory served by messages").
enum message_kind : std::uint32_t { kind_handler = 0, kind_put = 1, kind_get = 2 };
struct am_header {
  std::uint32_t handler;
  std::uint32_t kind;  // message_kind
  std::uint64_t ticket;
};
// kind_put: count, count x (address, length), then the bytes of every piece in order.
// kind_get: count, count x get_piece; the acknowledgement carries the bytes back.
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
constexpr std::uint32_t ack_reach = 1;
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

 private:
  std::vector<range>::const_iterator after(std::uintptr_t addr) const {
    return std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                            [](std::uintptr_t a, const range& x) { return a < x.lo; });
  }
  std::vector<range> ranges_;
};
struct reply_piece {
  std::uint64_t addr;
  std::uint64_t len;
};
// Completion entries: the top two bits of the ticket say what is pending.
constexpr unsigned kind_shift = 62;
constexpr std::uint64_t kind_node = 0;     // the node transport's ticket
constexpr std::uint64_t kind_am = 1;       // an active message to a remote rank
constexpr std::uint64_t kind_request = 2;  // an MPI request (MPI_Rput/MPI_Rget)
constexpr std::uint64_t ticket_mask = (std::uint64_t{1} << kind_shift) - 1;
constexpr std::uint64_t make_ticket(std::uint64_t kind, std::uint64_t value) noexcept {
  return (kind << kind_shift) | (value & ticket_mask);
}

// Puts with a null completion up to this size are copied and stay in flight; larger ones are
// completed locally before the call returns.
constexpr std::size_t stage_limit = 16 * 1024;
// Segments come out of chunks of at least this size (virtual: pages are used when touched).
constexpr std::size_t chunk_bytes = std::size_t{64} << 20;
// MPI counts are int: larger transfers go in pieces.
constexpr std::size_t max_piece = std::size_t{1} << 30;

std::int64_t now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void mpi_failed(int rc, std::string_view call, rank_t target) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  int cls = 0;
  MPI_Error_class(rc, &cls);
  // Bad addresses and ranges are the caller's; anything else is the transport's.
  const bool caller = cls == MPI_ERR_RMA_RANGE || cls == MPI_ERR_DISP || cls == MPI_ERR_ARG ||
                      cls == MPI_ERR_COUNT || cls == MPI_ERR_RMA_ATTACH;
  std::string what = "MPI failed: ";
  what.append(text, static_cast<std::size_t>(len));
  raise(caller ? error_class::arg : error_class::intern, {.call = call, .target = target}, what);
}

inline void check(int rc, std::string_view call, rank_t target = no_rank) {
  if (rc != MPI_SUCCESS) [[unlikely]] {
    mpi_failed(rc, call, target);
  }
}

// The bootstrap of the node's shm transport: the ranks of one node, over MPI.
class node_bootstrap final : public oneside::detail::bootstrap {
 public:
  node_bootstrap(MPI_Comm comm, std::string job) : comm_(comm), job_(std::move(job)) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  std::string_view kind() const noexcept override { return "mpi-node"; }
  rank_t rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  rank_t local_rank() const noexcept override { return rank_; }
  int local_size() const noexcept override { return size_; }
  const std::string& job_id() const noexcept override { return job_; }
  void allgather(const void* in, void* out, std::size_t bytes) override {
    check(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                        MPI_BYTE, comm_),
          "runtime");
  }
  void barrier() override { check(MPI_Barrier(comm_), "runtime"); }

 private:
  MPI_Comm comm_;
  std::string job_;
  int rank_ = 0;
  int size_ = 1;
};

// While this rank's dispatch runs a handler: puts to the message's source travel back in the
// acknowledgement (one message instead of a put, a flush and a message).
struct reply_capture {
  const void* transport;
  rank_t source;
  std::vector<std::byte> bytes;
  std::uint32_t pieces = 0;
  bool touched_others = false;   // the handler also moved data elsewhere: flush before the ack
  std::vector<rank_t> messaged;  // ranks it sent transfers by message: their acks come first
};
// One piece of a transfer by messages: `len` bytes at the target's `addr`, from or to `local`.
struct moved_piece {
  std::uintptr_t addr;
  std::byte* local;
  std::size_t len;
};
thread_local reply_capture* t_capture = nullptr;

struct byte_layout;  // below, with the iovec transfers

class mpi_backend final : public runtime_backend {
 public:
  mpi_backend(oneside::detail::bootstrap& boot, const mpi_options& opts);
  ~mpi_backend() override { abandon(); }

  void close() override;
  void abandon() noexcept override;

  std::string_view name() const noexcept override { return name_; }
  const transport_caps& caps() const noexcept override { return caps_; }
  rank_t rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::span<const rank_t> node_ranks() const noexcept override { return node_ranks_; }

  segment allocate_segment(std::size_t bytes) override;
  exposure expose(void* base, std::size_t bytes) override;

  void put(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src, completion* c) override;
  void get(rank_t src, std::uintptr_t addr, std::span<std::byte> dst, completion* c) override;
  void putv(rank_t dst, std::span<const const_iov> local, std::span<const remote_iov> remote,
            completion* c) override;
  void getv(rank_t src, std::span<const mutable_iov> local, std::span<const remote_iov> remote,
            completion* c) override;
  void amo(rank_t dst, std::uintptr_t addr, const amo_args& args, void* result,
           completion* c) override;

  void flush(rank_t target) override;
  void flush_all() override;
  void flush_local(rank_t target) override;
  void flush_local_all() override;
  bool test(completion& c) override;
  void wait(completion& c) override;

  void* direct(rank_t r, std::uintptr_t addr, std::size_t len) noexcept override {
    if (r == rank_) return reinterpret_cast<void*>(addr);
    if (r < 0 || r >= size_ || local_of_[static_cast<std::size_t>(r)] < 0) return nullptr;
    return node_->direct(local_of_[static_cast<std::size_t>(r)], addr, len);
  }
  pinned pin(rank_t r, std::uintptr_t addr, std::size_t len) override {
    check_rank(r, "pin");
    if (local_of_[static_cast<std::size_t>(r)] < 0) return {};
    return node_->pin(local_of_[static_cast<std::size_t>(r)], addr, len);
  }
  void am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
               completion* c) override;
  void progress() override {
    node_->progress();
    poll();
  }
  void wake(rank_t r) noexcept override;
  void wake(std::span<const rank_t> ranks) noexcept override;
  oneside::detail::doorbell& local_doorbell() noexcept override { return node_->local_doorbell(); }
  oneside::detail::doorbell* peer_doorbell(rank_t r) noexcept override {
    if (r < 0 || r >= size_ || local_of(r) < 0) return nullptr;
    return node_->peer_doorbell(local_of(r));
  }
  void release(segment& s) noexcept override;
  void release(exposure& e) noexcept override;

 private:
  struct peer {
    std::mutex send_mutex;  // orders tickets with the sends that carry them
    std::atomic<std::uint64_t> issued{0};
    std::atomic<std::uint64_t> acked{0};
    std::mutex stage_mutex;  // orders staging and MPI_Put with the flushes that free copies
    std::vector<std::unique_ptr<std::byte[]>> staged;
    std::mutex reach_mutex;
    range_set reachable;  // the peer's attached ranges learnt so far
  };
  // Segments are carved out of large chunks of the node transport's memory, each attached to
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

  peer& peer_of(rank_t r) noexcept { return peers_[static_cast<std::size_t>(r)]; }
  // Whether [addr, addr + len) of `r` is known to be attached to the window.
  bool reachable(rank_t r, std::uintptr_t addr, std::size_t len) {
    peer& p = peer_of(r);
    const std::lock_guard lock(p.reach_mutex);
    return p.reachable.find(addr, len).hi != 0;
  }
  bool all_reachable(rank_t r, std::span<const remote_iov> remote) {
    return std::all_of(remote.begin(), remote.end(), [&](const remote_iov& x) {
      return x.len == 0 || reachable(r, x.addr, x.len);
    });
  }
  // This rank's attached chunk holding [addr, addr + len), or an empty range.
  range attached_range(std::uintptr_t addr, std::size_t len);
  int local_of(rank_t r) const noexcept { return local_of_[static_cast<std::size_t>(r)]; }
  void check_rank(rank_t r, std::string_view call) const {
    if (r < 0 || r >= size_) [[unlikely]] {
      raise(error_class::rank, {.call = call, .target = r},
            "rank " + std::to_string(r) + " is not in [0, " + std::to_string(size_) + ")");
    }
    if (closed_.load(std::memory_order_relaxed)) [[unlikely]] {
      raise(error_class::not_open, {.call = call}, "the transport of a closed runtime was used");
    }
  }
  // Runs f(node rank, completion) on the node transport, translating its tickets into c.
  template <class F>
  void on_node(rank_t world, completion* c, F&& f) {
    const int l = local_of(world);
    if (c == nullptr || c == deferred()) {
      f(l, c);
      return;
    }
    completion mine;
    f(l, &mine);
    for (const auto& e : mine.entries())
      c->entries().push_back({world, make_ticket(kind_node, e.ticket)});
  }
  void track(completion& c, rank_t target, MPI_Request req) {
    c.entries().push_back({target, make_ticket(kind_request, reinterpret_cast<std::uintptr_t>(
                                                                 new MPI_Request(req)))});
  }
  bool capture_reply(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src) {
    reply_capture* cap = t_capture;
    if (cap == nullptr || cap->transport != this) return false;
    if (dst != cap->source) {
      cap->touched_others = true;
      return false;
    }
    const reply_piece p{addr, src.size()};
    const auto* pb = reinterpret_cast<const std::byte*>(&p);
    cap->bytes.insert(cap->bytes.end(), pb, pb + sizeof p);
    cap->bytes.insert(cap->bytes.end(), src.begin(), src.end());
    ++cap->pieces;
    return true;
  }
  void mpi_put(const void* src, std::size_t n, rank_t dst, std::uintptr_t addr,
               std::string_view call);
  void mpi_get(void* dst, std::size_t n, rank_t src, std::uintptr_t addr, std::string_view call);
  void release_staged(rank_t target, std::vector<std::unique_ptr<std::byte[]>>& out);
  void send(rank_t dst, int tag, std::unique_ptr<std::byte[]> buf, std::size_t bytes);
  void reap_sends();
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
  void await_acks(rank_t target) {
    await_ticket(target, peer_of(target).issued.load(std::memory_order_acquire), in_handler());
  }
  void progress_main() noexcept;
  void stop_progress() noexcept;
  void attach_sentinel();
  // The layout transfer of putv/getv: one MPI_(R)Put or MPI_(R)Get of `origin` (absolute
  // addresses) to or from `target` (offsets from `lowest`), then as `c` asks.
  void transfer_layouts(bool is_put, rank_t to, const byte_layout& origin,
                        const byte_layout& target, std::uintptr_t lowest, completion* c,
                        std::string_view call);
  bool attach_chunk(void* base, std::size_t bytes);
  std::uintptr_t carve(std::size_t bytes, std::size_t& chunk_index);
  // Memory served by messages: the owner's progress thread copies the bytes.
  void put_by_message(rank_t dst, std::span<const moved_piece> pieces, completion* c);
  void get_by_message(rank_t src, std::span<const moved_piece> pieces, completion* c);
  std::uint64_t send_numbered(rank_t dst, std::uint32_t handler, message_kind kind,
                              std::unique_ptr<std::byte[]> buf, std::size_t bytes);
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
  bool in_handler() const noexcept { return t_capture != nullptr && t_capture->transport == this; }

  oneside::detail::bootstrap& boot_;
  mpi_options opts_;
  rank_t rank_;
  int size_;
  std::string name_;
  transport_caps caps_{};
  MPI_Comm am_comm_ = MPI_COMM_NULL;
  MPI_Comm win_comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<int> local_of_;       // world rank -> node rank, or -1 for a remote rank
  std::vector<rank_t> node_ranks_;  // world ranks of the node, ascending
  std::unique_ptr<node_bootstrap> node_boot_;
  std::unique_ptr<shm> node_;
  std::unique_ptr<peer[]> peers_;

  std::mutex memory_mutex_;  // chunks_, carved_, exposures_, attached_, attach_refused_
  std::vector<std::unique_ptr<chunk>> chunks_;
  std::map<std::uint64_t, carved> carved_;          // this transport's segments, by id
  std::uint64_t next_id_ = std::uint64_t{1} << 48;  // apart from the node transport's ids
  std::map<std::uint64_t, exposure> exposures_;     // the node transport's, by id
  range_set attached_;                              // this rank's chunks attached to the window
  bool attach_refused_ = false;                     // the engine refused one: attach no more

  std::mutex poll_mutex_;  // one thread receives and dispatches at a time (handler order)
  std::vector<std::byte> rx_;
  std::mutex sends_mutex_;
  std::vector<MPI_Request> send_requests_;
  std::vector<std::unique_ptr<std::byte[]>> send_buffers_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> closed_{false};
  std::thread progress_;
  // One thread at a time in a one-sided call on win_ (and MPI_Test of its requests): Open
  // MPI 4.1's osc ucx fails two threads of a process doing put/get/flush at once
  // (MPI_ERR_OTHER, or a crash in ucp_rkey_destroy) although it grants MPI_THREAD_MULTIPLE.
  // Held for the MPI call only, never while waiting for acknowledgements or running handlers.
  std::mutex window_mutex_;
  // Threads of this rank inside a one-sided MPI call: they progress MPI themselves, so the
  // progress thread parks meanwhile (polling beside them would only fight them for the
  // engine's locks and, with ranks on every core, for the cores: waking every few
  // microseconds to look cost a put + flush 3x its time over TCP). The last one out wakes it.
  std::atomic<int> in_mpi_{0};
  std::atomic<std::uint32_t> parked_{0};  // 1 while the progress thread waits for in_mpi_ == 0
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
  void park_while_busy() noexcept;
};

mpi_backend::mpi_backend(oneside::detail::bootstrap& boot, const mpi_options& opts)
    : boot_(boot), opts_(opts), rank_(boot.rank()), size_(boot.size()) {
  check(MPI_Comm_dup(MPI_COMM_WORLD, &am_comm_), "runtime");
  MPI_Comm_set_errhandler(am_comm_, MPI_ERRORS_RETURN);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &win_comm_), "runtime");
  MPI_Comm_set_errhandler(win_comm_, MPI_ERRORS_RETURN);
  // The node: ranks that share memory, or this rank alone when every peer is to be remote.
  if (opts_.every_peer_remote) {
    check(MPI_Comm_split(am_comm_, rank_, 0, &node_comm_), "runtime");
  } else if (opts_.ranks_per_node > 0) {
    // Pretended nodes of consecutive ranks, within the real ones (memory must be shared).
    MPI_Comm real = MPI_COMM_NULL;
    check(MPI_Comm_split_type(am_comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &real),
          "runtime");
    check(MPI_Comm_split(real, rank_ / opts_.ranks_per_node, rank_, &node_comm_), "runtime");
    MPI_Comm_free(&real);
  } else {
    check(MPI_Comm_split_type(am_comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_),
          "runtime");
  }
  int node_size = 1;
  MPI_Comm_size(node_comm_, &node_size);
  node_ranks_.resize(static_cast<std::size_t>(node_size));
  check(MPI_Allgather(&rank_, 1, MPI_INT, node_ranks_.data(), 1, MPI_INT, node_comm_), "runtime");
  local_of_.assign(static_cast<std::size_t>(size_), -1);
  for (int i = 0; i < node_size; ++i)
    local_of_[static_cast<std::size_t>(node_ranks_[static_cast<std::size_t>(i)])] = i;
  name_ = opts_.every_peer_remote ? "mpi" : "mpi+shm";

  // The node's shm transport: its objects are named per node (nodes may share /dev/shm when
  // they are namespaces of one machine), its handlers see this transport and world ranks.
  node_boot_ = std::make_unique<node_bootstrap>(
      node_comm_, boot.job_id() + "n" + std::to_string(node_ranks_.front()));
  shm::options node_opts = opts_.node;
  node_opts.outer = this;
  node_opts.world_ranks = node_ranks_;
  node_ = std::make_unique<shm>(*node_boot_, node_opts);
  peers_ = std::make_unique<peer[]>(static_cast<std::size_t>(size_));

  (void)detail::amo_message_handler();  // registered before any peer may send one

  // One dynamic window for the job, locked for the transport's life.
  check(MPI_Win_create_dynamic(MPI_INFO_NULL, win_comm_, &win_), "runtime");
  MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "runtime");
  attach_sentinel();
  int* model = nullptr;
  int found = 0;
  MPI_Win_get_attr(win_, MPI_WIN_MODEL, &model, &found);

  caps_ = node_->caps();
  caps_.atomics_coherent_with_cpu = true;  // remote atomics run at the owner, on the CPU
  caps_.max_inline_put = stage_limit;
  caps_.unified_memory = found != 0 && model != nullptr && *model == MPI_WIN_UNIFIED;

  progress_ = std::thread([this] { progress_main(); });
  boot_.barrier();
}

// ---- lifetime -------------------------------------------------------------------------

void mpi_backend::stop_progress() noexcept {
  if (!progress_.joinable()) return;
  stop_.store(true, std::memory_order_seq_cst);
  parked_.store(0, std::memory_order_seq_cst);
  parked_.notify_one();
  progress_.join();
}

void mpi_backend::close() {
  if (closed_.load(std::memory_order_acquire)) return;
  flush_all();
  check(MPI_Barrier(am_comm_), "runtime");  // nobody sends to this rank any more
  stop_progress();
  while (poll()) {
  }
  {
    std::lock_guard lock(sends_mutex_);
    MPI_Waitall(static_cast<int>(send_requests_.size()), send_requests_.data(),
                MPI_STATUSES_IGNORE);
    send_requests_.clear();
    send_buffers_.clear();
  }
  MPI_Win_unlock_all(win_);
  {
    std::lock_guard lock(memory_mutex_);
    for (const range& r : attached_) MPI_Win_detach(win_, reinterpret_cast<void*>(r.lo));
    attached_.clear();
  }
  MPI_Win_free(&win_);
  closed_.store(true, std::memory_order_release);
  {
    std::lock_guard lock(memory_mutex_);
    carved_.clear();
    chunks_.clear();
    exposures_.clear();
  }
  node_->close();
  MPI_Comm_free(&node_comm_);
  MPI_Comm_free(&win_comm_);
  MPI_Comm_free(&am_comm_);
}

void mpi_backend::abandon() noexcept {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  stop_progress();
  boot_.abandon();
  {
    std::lock_guard lock(memory_mutex_);
    carved_.clear();
    chunks_.clear();
    exposures_.clear();
  }
  node_->abandon();
}

// ---- memory ---------------------------------------------------------------------------

namespace {
// The top page of the main thread's stack: mapped for the process's life and above any memory
// a program can expose (stack arrays lie below it; heaps, mappings and other threads' stacks
// lie lower still). Zero when /proc/self/maps does not name it.
std::uintptr_t stack_top_page() noexcept {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return 0;
  std::uintptr_t top = 0;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (std::strstr(line, "[stack]") != nullptr && std::sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
      top = static_cast<std::uintptr_t>(hi) - static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    }
  }
  std::fclose(maps);
  return top;
}
}  // namespace

// Open MPI 4.1.4's osc ucx keeps the attached regions in a sorted array and searches one
// entry past its end when it attaches or detaches: a region attached above every live one
// lands one slot too far (leaving a hole that MPI_Win_free later unmaps: a crash), and
// stale entries past the end confuse later attaches. A first region above anything that can
// ever be attached keeps every later one inside the array (scripts/repro/ shows both).
void mpi_backend::attach_sentinel() {
  const std::uintptr_t top = stack_top_page();
  if (top == 0) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  check(MPI_Win_attach(win_, reinterpret_cast<void*>(top), static_cast<MPI_Aint>(page)), "runtime");
}

// A chunk is attached when the engine lets it: one attachment serves every segment carved
// out of it. Past the engine's limit (or with ONESIDE_MPI_ATTACH=0) the chunk is served by
// messages instead, like memory the runtime did not allocate. Attachments stay until the
// runtime closes: Open MPI 4.1.4's osc ucx mishandles detaching (scripts/repro/), and origins
// remember what they learnt is attached.
bool mpi_backend::attach_chunk(void* base, std::size_t bytes) {
  if (attach_refused_ || !opts_.attach) return false;
  const int rc =
      on_window([&] { return MPI_Win_attach(win_, base, static_cast<MPI_Aint>(bytes)); });
  if (rc != MPI_SUCCESS) {
    attach_refused_ = true;
    return false;
  }
  const auto lo = reinterpret_cast<std::uintptr_t>(base);
  attached_.insert({lo, lo + bytes});
  return true;
}

range mpi_backend::attached_range(std::uintptr_t addr, std::size_t len) {
  const std::lock_guard lock(memory_mutex_);
  return attached_.find(addr, len);
}

// First fit over the chunks' free ranges; a new chunk (attached once) when none fits.
std::uintptr_t mpi_backend::carve(std::size_t bytes, std::size_t& chunk_index) {
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    auto& free = chunks_[i]->free;
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < bytes) continue;
      const std::uintptr_t at = it->first;
      const std::size_t left = it->second - bytes;
      free.erase(it);
      if (left > 0) free.emplace(at + bytes, left);
      chunk_index = i;
      return at;
    }
  }
  auto c = std::make_unique<chunk>();
  c->memory = node_->allocate_segment(std::max(bytes, chunk_bytes));
  const std::size_t len = std::max(bytes, chunk_bytes);
  (void)attach_chunk(c->memory.base(), len);
  const std::uintptr_t at = c->memory.address();
  if (len > bytes) c->free.emplace(at + bytes, len - bytes);
  chunks_.push_back(std::move(c));
  chunk_index = chunks_.size() - 1;
  return at;
}

segment mpi_backend::allocate_segment(std::size_t bytes) {
  check_rank(rank_, "allocate_segment");
  if (bytes == 0) return segment(this, nullptr, 0, 0);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t rounded = (bytes + page - 1) & ~(page - 1);
  std::lock_guard lock(memory_mutex_);
  std::size_t index = 0;
  const std::uintptr_t at = carve(rounded, index);
  const std::uint64_t id = next_id_++;
  carved_.emplace(id, carved{index, at, rounded});
  return segment(this, reinterpret_cast<void*>(at), bytes, id);
}

exposure mpi_backend::expose(void* base, std::size_t bytes) {
  check_rank(rank_, "expose");
  // Not attached to the window: remote ranks reach it by messages (see put_by_message), so
  // a program may expose as much memory, as often, as it likes, and no attachment outlives
  // the memory (engines that register attached memory would keep stale registrations).
  exposure e = node_->expose(base, bytes);
  const std::uint64_t id = e.id();
  std::lock_guard lock(memory_mutex_);
  exposures_.emplace(id, std::move(e));
  return exposure(this, base, bytes, id);
}

void mpi_backend::release(segment& s) noexcept {
  if (closed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(memory_mutex_);
  auto it = carved_.find(s.id());
  if (it == carved_.end()) return;
  const carved c = it->second;
  carved_.erase(it);
  // Give the pages back (shared memory reads as zeros afterwards: segments start zeroed),
  // then return the range to its chunk, merged with free neighbours.
  ::madvise(reinterpret_cast<void*>(c.base), c.len, MADV_REMOVE);
  auto& free = chunks_[c.chunk]->free;
  std::uintptr_t base = c.base;
  std::size_t len = c.len;
  auto next = free.lower_bound(base);
  if (next != free.end() && next->first == base + len) {
    len += next->second;
    next = free.erase(next);
  }
  if (next != free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == base) {
      base = prev->first;
      len += prev->second;
      free.erase(prev);
    }
  }
  free.emplace(base, len);
}

void mpi_backend::release(exposure& e) noexcept {
  if (closed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(memory_mutex_);
  exposures_.erase(e.id());
}

// ---- data movement --------------------------------------------------------------------

void mpi_backend::mpi_put(const void* src, std::size_t n, rank_t dst, std::uintptr_t addr,
                          std::string_view call) {
  const auto* p = static_cast<const std::byte*>(src);
  for (std::size_t done = 0; done < n; done += max_piece) {
    const int k = static_cast<int>(std::min(max_piece, n - done));
    check(on_window([&] {
            return MPI_Put(p + done, k, MPI_BYTE, dst, static_cast<MPI_Aint>(addr + done), k,
                           MPI_BYTE, win_);
          }),
          call, dst);
  }
}

void mpi_backend::mpi_get(void* dst, std::size_t n, rank_t src, std::uintptr_t addr,
                          std::string_view call) {
  auto* p = static_cast<std::byte*>(dst);
  for (std::size_t done = 0; done < n; done += max_piece) {
    const int k = static_cast<int>(std::min(max_piece, n - done));
    check(on_window([&] {
            return MPI_Get(p + done, k, MPI_BYTE, src, static_cast<MPI_Aint>(addr + done), k,
                           MPI_BYTE, win_);
          }),
          call, src);
  }
}

void mpi_backend::put(rank_t dst, std::uintptr_t addr, std::span<const std::byte> src,
                      completion* c) {
  check_rank(dst, "put");
  if (local_of(dst) >= 0) {
    on_node(dst, c, [&](rank_t l, completion* lc) { node_->put(l, addr, src, lc); });
    return;
  }
  if (src.empty() || capture_reply(dst, addr, src)) return;
  if (!reachable(dst, addr, src.size())) {
    const moved_piece one{addr, const_cast<std::byte*>(src.data()), src.size()};
    put_by_message(dst, std::span(&one, 1), c);
    return;
  }
  if (c == deferred()) {
    mpi_put(src.data(), src.size(), dst, addr, "put");
  } else if (c != nullptr && src.size() <= max_piece) {
    MPI_Request req = MPI_REQUEST_NULL;
    check(on_window([&] {
            return MPI_Rput(src.data(), static_cast<int>(src.size()), MPI_BYTE, dst,
                            static_cast<MPI_Aint>(addr), static_cast<int>(src.size()), MPI_BYTE,
                            win_, &req);
          }),
          "put", dst);
    track(*c, dst, req);
  } else if (src.size() <= stage_limit) {
    // Locally complete at once: the bytes travel from a copy, freed at the next flush.
    peer& p = peer_of(dst);
    auto copy = std::make_unique<std::byte[]>(src.size());
    oneside::detail::copy_bytes(copy.get(), src.data(), src.size());
    std::lock_guard lock(p.stage_mutex);
    mpi_put(copy.get(), src.size(), dst, addr, "put");
    p.staged.push_back(std::move(copy));
  } else {
    mpi_put(src.data(), src.size(), dst, addr, "put");
    check(on_window([&] { return MPI_Win_flush_local(dst, win_); }), "put", dst);
  }
}

void mpi_backend::get(rank_t src, std::uintptr_t addr, std::span<std::byte> dst, completion* c) {
  check_rank(src, "get");
  if (local_of(src) >= 0) {
    on_node(src, c, [&](rank_t l, completion* lc) { node_->get(l, addr, dst, lc); });
    return;
  }
  if (dst.empty()) return;
  if (!reachable(src, addr, dst.size())) {
    const moved_piece one{addr, dst.data(), dst.size()};
    get_by_message(src, std::span(&one, 1), c);
    return;
  }
  if (c == deferred()) {
    mpi_get(dst.data(), dst.size(), src, addr, "get");
  } else if (c != nullptr && dst.size() <= max_piece) {
    MPI_Request req = MPI_REQUEST_NULL;
    check(on_window([&] {
            return MPI_Rget(dst.data(), static_cast<int>(dst.size()), MPI_BYTE, src,
                            static_cast<MPI_Aint>(addr), static_cast<int>(dst.size()), MPI_BYTE,
                            win_, &req);
          }),
          "get", src);
    track(*c, src, req);
  } else {
    mpi_get(dst.data(), dst.size(), src, addr, "get");
    check(on_window([&] { return MPI_Win_flush_local(src, win_); }), "get", src);
  }
}

// An hindexed MPI datatype over byte pieces: absolute addresses (origin, with MPI_BOTTOM) or
// offsets from the lowest address (target).
struct byte_layout {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  ~byte_layout() {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
};

template <class Iov>
void make_layout(std::span<const Iov> pieces, std::uintptr_t origin, byte_layout& out,
                 std::string_view call) {
  std::vector<int> lens;
  std::vector<MPI_Aint> disps;
  for (const auto& p : pieces) {
    std::uintptr_t at;
    if constexpr (std::is_same_v<Iov, remote_iov>) {
      at = p.addr;
    } else {
      at = reinterpret_cast<std::uintptr_t>(p.base);
    }
    for (std::size_t done = 0; done < p.len; done += max_piece) {
      lens.push_back(static_cast<int>(std::min(max_piece, p.len - done)));
      disps.push_back(static_cast<MPI_Aint>(at + done - origin));
    }
  }
  check(MPI_Type_create_hindexed(static_cast<int>(lens.size()), lens.data(), disps.data(), MPI_BYTE,
                                 &out.type),
        call);
  check(MPI_Type_commit(&out.type), call);
}

// The lowest address of the non-empty pieces.
std::uintptr_t lowest_address(std::span<const remote_iov> remote) noexcept {
  std::uintptr_t lowest = UINTPTR_MAX;
  for (const auto& r : remote) {
    if (r.len > 0) lowest = std::min(lowest, r.addr);
  }
  return lowest;
}

// The local and remote pieces of an iovec transfer cut at each other's boundaries: one
// moved_piece per stretch that is contiguous on both sides.
template <class Iov>
std::vector<moved_piece> matched_pieces(std::span<const Iov> local,
                                        std::span<const remote_iov> remote) {
  std::vector<moved_piece> out;
  detail::match_streams(local, remote, [&](auto* l, std::uintptr_t r, std::size_t n) {
    out.push_back({r, const_cast<std::byte*>(l), n});
  });
  return out;
}

void mpi_backend::transfer_layouts(bool is_put, rank_t to, const byte_layout& origin,
                                   const byte_layout& target, std::uintptr_t lowest, completion* c,
                                   std::string_view call) {
  const auto at = static_cast<MPI_Aint>(lowest);
  if (c != nullptr && c != deferred()) {
    MPI_Request req = MPI_REQUEST_NULL;
    check(on_window([&] {
            return is_put
                       ? MPI_Rput(MPI_BOTTOM, 1, origin.type, to, at, 1, target.type, win_, &req)
                       : MPI_Rget(MPI_BOTTOM, 1, origin.type, to, at, 1, target.type, win_, &req);
          }),
          call, to);
    track(*c, to, req);
    return;
  }
  check(on_window([&] {
          return is_put ? MPI_Put(MPI_BOTTOM, 1, origin.type, to, at, 1, target.type, win_)
                        : MPI_Get(MPI_BOTTOM, 1, origin.type, to, at, 1, target.type, win_);
        }),
        call, to);
  if (c == nullptr) check(on_window([&] { return MPI_Win_flush_local(to, win_); }), call, to);
}

void mpi_backend::putv(rank_t dst, std::span<const const_iov> local,
                       std::span<const remote_iov> remote, completion* c) {
  check_rank(dst, "putv");
  if (local_of(dst) >= 0) {
    on_node(dst, c, [&](rank_t l, completion* lc) { node_->putv(l, local, remote, lc); });
    return;
  }
  const std::size_t n = detail::stream_bytes(local);
  ONESIDE_CHECK(n == detail::stream_bytes(remote), error_class::arg,
                {.call = "putv", .target = dst}, "local and remote byte counts differ");
  if (n == 0) return;
  if (remote.size() == 1 && local.size() == 1) {
    put(dst, remote[0].addr, std::span(local[0].base, local[0].len), c);
    return;
  }
  const std::uintptr_t lowest = lowest_address(remote);
  const bool reply = t_capture != nullptr && t_capture->transport == this;
  if (!(reply && dst == t_capture->source) && !all_reachable(dst, remote)) {
    put_by_message(dst, matched_pieces(local, remote), c);
    return;
  }
  if ((c == nullptr && n <= stage_limit) || (reply && dst == t_capture->source)) {
    auto copy = std::make_unique<std::byte[]>(n);
    std::size_t at = 0;
    for (const auto& l : local) {
      oneside::detail::copy_bytes(copy.get() + at, l.base, l.len);
      at += l.len;
    }
    if (reply && dst == t_capture->source) {
      at = 0;
      for (const auto& r : remote) {
        capture_reply(dst, r.addr, std::span<const std::byte>(copy.get() + at, r.len));
        at += r.len;
      }
      return;
    }
    byte_layout target;
    make_layout(remote, lowest, target, "putv");
    peer& p = peer_of(dst);
    std::lock_guard lock(p.stage_mutex);
    check(on_window([&] {
            return MPI_Put(copy.get(), static_cast<int>(n), MPI_BYTE, dst,
                           static_cast<MPI_Aint>(lowest), 1, target.type, win_);
          }),
          "putv", dst);
    p.staged.push_back(std::move(copy));
    return;
  }
  if (reply) t_capture->touched_others = true;
  byte_layout target;
  make_layout(remote, lowest, target, "putv");
  byte_layout origin;
  make_layout(local, 0, origin, "putv");
  transfer_layouts(true, dst, origin, target, lowest, c, "putv");
}

void mpi_backend::getv(rank_t src, std::span<const mutable_iov> local,
                       std::span<const remote_iov> remote, completion* c) {
  check_rank(src, "getv");
  if (local_of(src) >= 0) {
    on_node(src, c, [&](rank_t l, completion* lc) { node_->getv(l, local, remote, lc); });
    return;
  }
  const std::size_t n = detail::stream_bytes(local);
  ONESIDE_CHECK(n == detail::stream_bytes(remote), error_class::arg,
                {.call = "getv", .target = src}, "local and remote byte counts differ");
  if (n == 0) return;
  if (remote.size() == 1 && local.size() == 1) {
    get(src, remote[0].addr, std::span(local[0].base, local[0].len), c);
    return;
  }
  if (!all_reachable(src, remote)) {
    get_by_message(src, matched_pieces(local, remote), c);
    return;
  }
  const std::uintptr_t lowest = lowest_address(remote);
  byte_layout target;
  make_layout(remote, lowest, target, "getv");
  byte_layout origin;
  make_layout(local, 0, origin, "getv");
  transfer_layouts(false, src, origin, target, lowest, c, "getv");
}

void mpi_backend::amo(rank_t dst, std::uintptr_t addr, const amo_args& args, void* result,
                      completion* c) {
  check_rank(dst, "amo");
  if (local_of(dst) >= 0) {
    on_node(dst, c, [&](rank_t l, completion* lc) { node_->amo(l, addr, args, result, lc); });
    return;
  }
  detail::check_amo(dst, addr, args);
  // The owner applies it with a CPU atomic, like every other path to that memory.
  detail::send_amo(*this, dst, addr, args, result, c);
}

// ---- messages -------------------------------------------------------------------------

void mpi_backend::send(rank_t dst, int tag, std::unique_ptr<std::byte[]> buf, std::size_t bytes) {
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Isend(buf.get(), static_cast<int>(bytes), MPI_BYTE, dst, tag, am_comm_, &req),
        "am_send", dst);
  std::lock_guard lock(sends_mutex_);
  send_requests_.push_back(req);
  send_buffers_.push_back(std::move(buf));
}

void mpi_backend::reap_sends() {
  std::lock_guard lock(sends_mutex_);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < send_requests_.size(); ++i) {
    int done = 0;
    MPI_Test(&send_requests_[i], &done, MPI_STATUS_IGNORE);
    if (done == 0) {
      send_requests_[kept] = send_requests_[i];
      send_buffers_[kept] = std::move(send_buffers_[i]);
      ++kept;
    }
  }
  send_requests_.resize(kept);
  send_buffers_.resize(kept);
}

void mpi_backend::am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
                          completion* c) {
  check_rank(dst, "am_send");
  if (local_of(dst) >= 0) {
    on_node(dst, c, [&](rank_t l, completion* lc) { node_->am_send(l, handler, payload, lc); });
    return;
  }
  detail::check_am_send(dst, handler, payload.size(), caps_.max_am_payload);
  const std::size_t bytes = sizeof(am_header) + payload.size();
  auto buf = std::make_unique<std::byte[]>(bytes);
  oneside::detail::copy_bytes(buf.get() + sizeof(am_header), payload.data(), payload.size());
  const std::uint64_t ticket = send_numbered(dst, handler, kind_handler, std::move(buf), bytes);
  if (c != nullptr) c->entries().push_back({dst, make_ticket(kind_am, ticket)});
}

std::uint64_t mpi_backend::send_numbered(rank_t dst, std::uint32_t handler, message_kind kind,
                                         std::unique_ptr<std::byte[]> buf, std::size_t bytes) {
  peer& p = peer_of(dst);
  const std::lock_guard lock(p.send_mutex);
  const std::uint64_t ticket = p.issued.load(std::memory_order_relaxed) + 1;
  const am_header h{handler, kind, ticket};
  std::memcpy(buf.get(), &h, sizeof h);
  send(dst, tag_am, std::move(buf), bytes);
  p.issued.store(ticket, std::memory_order_release);
  return ticket;
}

// ---- memory served by messages ----------------------------------------------------------
//
// Memory that is not attached to the job's window (every exposure of memory the runtime did
// not allocate, and chunks the engine would not attach) is reached by messages: the owner's
// progress thread (or its waits) copies the bytes in, or sends them back in the
// acknowledgement. A transfer goes this way until the target says, in an acknowledgement,
// that the range is attached; from then on MPI_Put/MPI_Get reach it.

namespace {
// `pieces` cut so that no piece exceeds max_piece, in groups of at most max_piece bytes: one
// message (and, for gets, one acknowledgement) each.
template <class F>
void in_messages(std::span<const moved_piece> pieces, F&& each_group) {
  std::vector<moved_piece> group;
  std::size_t bytes = 0;
  for (const moved_piece& p : pieces) {
    for (std::size_t done = 0; done < p.len; done += max_piece) {
      const std::size_t n = std::min(max_piece, p.len - done);
      if (bytes + n > max_piece && !group.empty()) {
        each_group(std::span<const moved_piece>(group));
        group.clear();
        bytes = 0;
      }
      group.push_back({p.addr + done, p.local + done, n});
      bytes += n;
    }
  }
  if (!group.empty()) each_group(std::span<const moved_piece>(group));
}
}  // namespace

void mpi_backend::put_by_message(rank_t dst, std::span<const moved_piece> pieces, completion* c) {
  if (in_handler()) {
    t_capture->touched_others = true;
    t_capture->messaged.push_back(dst);
  }
  std::uint64_t ticket = 0;
  in_messages(pieces, [&](std::span<const moved_piece> group) {
    std::size_t data = 0;
    for (const moved_piece& p : group) data += p.len;
    const std::uint64_t count = group.size();
    const std::size_t bytes = sizeof(am_header) + sizeof count + count * sizeof(put_piece) + data;
    auto buf = std::make_unique<std::byte[]>(bytes);
    std::byte* at = buf.get() + sizeof(am_header);
    std::memcpy(at, &count, sizeof count);
    at += sizeof count;
    for (const moved_piece& p : group) {
      const put_piece head{p.addr, p.len};
      std::memcpy(at, &head, sizeof head);
      at += sizeof head;
    }
    for (const moved_piece& p : group) {
      oneside::detail::copy_bytes(at, p.local, p.len);
      at += p.len;
    }
    ticket = send_numbered(dst, 0, kind_put, std::move(buf), bytes);
  });
  // The bytes travel in copies: the put is locally complete already.
  if (c != nullptr && c != deferred()) c->entries().push_back({dst, make_ticket(kind_am, ticket)});
}

void mpi_backend::get_by_message(rank_t src, std::span<const moved_piece> pieces, completion* c) {
  if (in_handler()) t_capture->messaged.push_back(src);
  std::uint64_t ticket = 0;
  in_messages(pieces, [&](std::span<const moved_piece> group) {
    const std::uint64_t count = group.size();
    const std::size_t bytes = sizeof(am_header) + sizeof count + count * sizeof(get_piece);
    auto buf = std::make_unique<std::byte[]>(bytes);
    std::byte* at = buf.get() + sizeof(am_header);
    std::memcpy(at, &count, sizeof count);
    at += sizeof count;
    for (const moved_piece& p : group) {
      const get_piece head{p.addr, p.len, reinterpret_cast<std::uintptr_t>(p.local)};
      std::memcpy(at, &head, sizeof head);
      at += sizeof head;
    }
    ticket = send_numbered(src, 0, kind_get, std::move(buf), bytes);
  });
  if (c == nullptr) {
    await_ticket(src, ticket, in_handler());
  } else if (c != deferred()) {
    c->entries().push_back({src, make_ticket(kind_am, ticket)});
  }
}

range mpi_backend::serve_put(std::span<const std::byte> payload) {
  range hint;
  std::uint64_t count = 0;
  std::memcpy(&count, payload.data(), sizeof count);
  const std::byte* head = payload.data() + sizeof count;
  const std::byte* data = head + count * sizeof(put_piece);
  for (std::uint64_t i = 0; i < count; ++i) {
    put_piece p;
    std::memcpy(&p, head + i * sizeof p, sizeof p);
    oneside::detail::copy_bytes(reinterpret_cast<void*>(p.addr), data, p.len);
    data += p.len;
    if (i == 0) hint = attached_range(p.addr, p.len);
  }
  // The rank's threads waiting on this memory need not wait for their next look.
  oneside::detail::notify(local_doorbell());
  return hint;
}

void mpi_backend::serve_get(rank_t source, std::uint64_t ticket,
                            std::span<const std::byte> payload) {
  std::uint64_t count = 0;
  std::memcpy(&count, payload.data(), sizeof count);
  const auto piece_at = [&](std::uint64_t i) {
    get_piece g;
    std::memcpy(&g, payload.data() + sizeof count + i * sizeof g, sizeof g);
    return g;
  };
  std::size_t reply_bytes = 0;
  for (std::uint64_t i = 0; i < count; ++i) reply_bytes += sizeof(reply_piece) + piece_at(i).len;
  const range hint = count > 0 ? attached_range(piece_at(0).addr, piece_at(0).len) : range{};
  send_ack(source, ticket, static_cast<std::uint32_t>(count), reply_bytes, hint,
           [&](std::byte* at) {
             for (std::uint64_t i = 0; i < count; ++i) {
               const get_piece g = piece_at(i);
               const reply_piece rp{g.origin, g.len};
               std::memcpy(at, &rp, sizeof rp);
               at += sizeof rp;
               oneside::detail::copy_bytes(at, reinterpret_cast<const void*>(g.addr), g.len);
               at += g.len;
             }
           });
}

template <class WriteReplies>
void mpi_backend::send_ack(rank_t source, std::uint64_t ticket, std::uint32_t pieces,
                           std::size_t reply_bytes, range hint, WriteReplies&& write_replies) {
  const bool reach = hint.hi != 0;
  const std::size_t bytes = sizeof(ack_header) + reply_bytes + (reach ? sizeof hint : 0);
  auto buf = std::make_unique<std::byte[]>(bytes);
  const ack_header ack{ticket, pieces, reach ? ack_reach : 0};
  std::memcpy(buf.get(), &ack, sizeof ack);
  write_replies(buf.get() + sizeof ack);
  if (reach) std::memcpy(buf.get() + sizeof ack + reply_bytes, &hint, sizeof hint);
  send(source, tag_ack, std::move(buf), bytes);
}

void mpi_backend::take_ack(rank_t source, std::span<const std::byte> msg) {
  ack_header h;
  std::memcpy(&h, msg.data(), sizeof h);
  const std::byte* at = msg.data() + sizeof h;
  for (std::uint32_t i = 0; i < h.pieces; ++i) {
    reply_piece rp;
    std::memcpy(&rp, at, sizeof rp);
    at += sizeof rp;
    oneside::detail::copy_bytes(reinterpret_cast<void*>(rp.addr), at, rp.len);
    at += rp.len;
  }
  if ((h.flags & ack_reach) != 0) {
    range r;
    std::memcpy(&r, at, sizeof r);
    peer& p = peer_of(source);
    const std::lock_guard lock(p.reach_mutex);
    p.reachable.insert(r);
  }
  peer_of(source).acked.store(h.ticket, std::memory_order_release);
  oneside::detail::notify(local_doorbell());
}

void mpi_backend::await_ticket(rank_t target, std::uint64_t ticket, bool from_handler) {
  peer& p = peer_of(target);
  if (p.acked.load(std::memory_order_acquire) >= ticket) return;
  if (!from_handler) {
    oneside::detail::wait_until(local_doorbell(), [&] {
      poll();
      return p.acked.load(std::memory_order_acquire) >= ticket;
    });
    return;
  }
  std::vector<std::byte> rx;
  oneside::detail::backoff pause;
  while (p.acked.load(std::memory_order_acquire) < ticket) {
    MPI_Status st;
    std::size_t bytes = 0;
    if (receive(target, tag_ack, rx, st, bytes)) {
      take_ack(target, std::span<const std::byte>(rx.data(), bytes));
    } else {
      pause.pause();
    }
  }
}

bool mpi_backend::receive(int source, int tag, std::vector<std::byte>& into, MPI_Status& st,
                          std::size_t& bytes) {
  int flag = 0;
  MPI_Message msg = MPI_MESSAGE_NULL;
  check(MPI_Improbe(source, tag, am_comm_, &flag, &msg, &st), "progress", source);
  if (flag == 0) return false;
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  bytes = static_cast<std::size_t>(count);
  into.resize(std::max<std::size_t>(bytes, 1));
  check(MPI_Mrecv(into.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "progress", source);
  return true;
}

void mpi_backend::handle(rank_t source, int tag, std::span<const std::byte> msg) {
  if (tag == tag_wake) {
    oneside::detail::notify(local_doorbell());
    return;
  }
  if (tag == tag_ack) {
    take_ack(source, msg);
    return;
  }
  am_header h;
  std::memcpy(&h, msg.data(), sizeof h);
  const std::span<const std::byte> payload = msg.subspan(sizeof h);
  if (h.kind == kind_get) {
    serve_get(source, h.ticket, payload);
    return;
  }
  reply_capture cap{this, source, {}, 0, false, {}};
  range hint;
  if (h.kind == kind_put) {
    hint = serve_put(payload);
  } else {
    const am_handler fn = detail::find_am_handler(h.handler);
    if (fn == nullptr) {
      std::fprintf(stderr,
                   "oneside: rank %d: active message from rank %d names handler %08x, which "
                   "this rank has not registered; aborting\n",
                   rank_, source, h.handler);
      std::abort();
    }
    t_capture = &cap;
    try {
      fn(*this, source, payload);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "oneside: rank %d: active message from rank %d failed: %s; aborting\n",
                   rank_, source, e.what());
      std::abort();
    }
    t_capture = nullptr;
    // What the handler moved elsewhere is visible before the sender learns it ran.
    if (cap.touched_others) check(on_window([&] { return MPI_Win_flush_all(win_); }), "am_send");
    for (rank_t r : cap.messaged)
      await_ticket(r, peer_of(r).issued.load(std::memory_order_acquire), true);
  }
  send_ack(source, h.ticket, cap.pieces, cap.bytes.size(), hint, [&](std::byte* at) {
    oneside::detail::copy_bytes(at, cap.bytes.data(), cap.bytes.size());
  });
}

bool mpi_backend::poll() noexcept {
  std::unique_lock lock(poll_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  bool any = false;
  try {
    for (int i = 0; i < 64; ++i) {
      MPI_Status st;
      std::size_t bytes = 0;
      {
        const std::unique_lock quiet(window_mutex_, std::try_to_lock);
        if (!quiet.owns_lock()) return any;
        if (!receive(MPI_ANY_SOURCE, MPI_ANY_TAG, rx_, st, bytes)) break;
      }
      handle(st.MPI_SOURCE, st.MPI_TAG, std::span<const std::byte>(rx_.data(), bytes));
      any = true;
    }
    const std::unique_lock quiet(window_mutex_, std::try_to_lock);
    if (!quiet.owns_lock()) return any;
    reap_sends();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oneside: rank %d: MPI progress failed: %s; aborting\n", rank_, e.what());
    std::abort();
  }
  return any;
}

void mpi_backend::park_while_busy() noexcept {
  parked_.store(1, std::memory_order_seq_cst);
  while (in_mpi_.load(std::memory_order_seq_cst) > 0 && !stop_.load(std::memory_order_acquire)) {
    parked_.wait(1, std::memory_order_seq_cst);
    if (parked_.load(std::memory_order_seq_cst) == 1) continue;  // woken for nothing
    parked_.store(1, std::memory_order_seq_cst);                 // a thread may be in again
  }
  parked_.store(0, std::memory_order_relaxed);
}

void mpi_backend::progress_main() noexcept {
  ::pthread_setname_np(::pthread_self(), "oneside-mpi");
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // short sleeps really are short
  std::int64_t idle_since = now_ns();
  std::int64_t sleep_ns = 1000;
  while (!stop_.load(std::memory_order_acquire)) {
    if (in_mpi_.load(std::memory_order_acquire) > 0) {
      park_while_busy();
      // MPI was progressed until a moment ago: the next poll is due a longest sleep later.
      const timespec ts{0, static_cast<long>(std::max<std::int64_t>(opts_.poll_max_ns, 1000))};
      ::nanosleep(&ts, nullptr);
      continue;
    }
    if (poll()) {
      idle_since = now_ns();
      sleep_ns = 1000;
      continue;
    }
    const std::int64_t idle = now_ns() - idle_since;
    if (idle < opts_.spin_ns) continue;
    // Idle: sleep between polls, doubling up to poll_max_ns. Never longer: one-sided traffic
    // into this rank (on engines without hardware offload) moves only while someone polls.
    const std::int64_t cap = std::max<std::int64_t>(opts_.poll_max_ns, 1000);
    sleep_ns = std::min(sleep_ns, cap);
    timespec ts{0, static_cast<long>(sleep_ns)};
    ::nanosleep(&ts, nullptr);
    sleep_ns = std::min(sleep_ns * 2, cap);
  }
}

void mpi_backend::wake(rank_t r) noexcept {
  if (r < 0 || r >= size_ || closed_.load(std::memory_order_relaxed)) return;
  if (local_of(r) >= 0) {
    node_->wake(local_of(r));
    return;
  }
  try {
    send(r, tag_wake, nullptr, 0);
  } catch (const std::exception&) {
    // A lost wake-up only delays the sleeper until its next timeout.
  }
}

void mpi_backend::wake(std::span<const rank_t> ranks) noexcept {
  std::vector<rank_t> local;
  for (rank_t r : ranks) {
    if (r < 0 || r >= size_) continue;
    if (local_of(r) >= 0) {
      local.push_back(local_of(r));
    } else {
      wake(r);
    }
  }
  if (!local.empty()) node_->wake(std::span<const rank_t>(local));
}

// ---- completion -----------------------------------------------------------------------

void mpi_backend::release_staged(rank_t target, std::vector<std::unique_ptr<std::byte[]>>& out) {
  peer& p = peer_of(target);
  std::lock_guard lock(p.stage_mutex);
  for (auto& b : p.staged) out.push_back(std::move(b));
  p.staged.clear();
}

void mpi_backend::flush(rank_t target) {
  check_rank(target, "flush");
  if (local_of(target) >= 0) {
    node_->flush(local_of(target));
    return;
  }
  std::vector<std::unique_ptr<std::byte[]>> copies;
  release_staged(target, copies);  // issued before this flush: it completes them
  check(on_window([&] { return MPI_Win_flush(target, win_); }), "flush", target);
  await_acks(target);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void mpi_backend::flush_all() {
  check_rank(rank_, "flush_all");
  node_->flush_all();
  std::vector<std::unique_ptr<std::byte[]>> copies;
  for (rank_t r = 0; r < size_; ++r) {
    if (local_of(r) < 0) release_staged(r, copies);
  }
  check(on_window([&] { return MPI_Win_flush_all(win_); }), "flush_all");
  for (rank_t r = 0; r < size_; ++r) {
    if (local_of(r) < 0) await_acks(r);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void mpi_backend::flush_local(rank_t target) {
  check_rank(target, "flush_local");
  if (local_of(target) >= 0) {
    node_->flush_local(local_of(target));
    return;
  }
  std::vector<std::unique_ptr<std::byte[]>> copies;
  release_staged(target, copies);
  check(on_window([&] { return MPI_Win_flush_local(target, win_); }), "flush_local", target);
  await_acks(target);  // gets by message complete locally when their bytes arrive
}

void mpi_backend::flush_local_all() {
  check_rank(rank_, "flush_local_all");
  node_->flush_local_all();
  std::vector<std::unique_ptr<std::byte[]>> copies;
  for (rank_t r = 0; r < size_; ++r) {
    if (local_of(r) < 0) release_staged(r, copies);
  }
  check(on_window([&] { return MPI_Win_flush_local_all(win_); }), "flush_local_all");
  for (rank_t r = 0; r < size_; ++r) {
    if (local_of(r) < 0) await_acks(r);
  }
}

bool mpi_backend::test(completion& c) {
  auto& entries = c.entries();
  std::erase_if(entries, [&](const completion::pending& e) {
    const std::uint64_t kind = e.ticket >> kind_shift;
    const std::uint64_t value = e.ticket & ticket_mask;
    if (kind == kind_node) {
      completion one;
      one.entries().push_back({local_of(e.target), value});
      return node_->test(one);
    }
    if (kind == kind_am) {
      if (peer_of(e.target).acked.load(std::memory_order_acquire) >= value) return true;
      poll();
      return peer_of(e.target).acked.load(std::memory_order_acquire) >= value;
    }
    auto* req = reinterpret_cast<MPI_Request*>(static_cast<std::uintptr_t>(value));
    int done = 0;
    check(on_window([&] { return MPI_Test(req, &done, MPI_STATUS_IGNORE); }), "test", e.target);
    if (done != 0) delete req;
    return done != 0;
  });
  if (entries.empty()) std::atomic_thread_fence(std::memory_order_acquire);
  return entries.empty();
}

void mpi_backend::wait(completion& c) {
  if (test(c)) return;
  oneside::detail::wait_until(local_doorbell(), [&] { return test(c); });
}

}  // namespace

std::unique_ptr<runtime_backend> make_mpi_transport(oneside::detail::bootstrap& boot,
                                                    const mpi_options& opts) {
  return std::make_unique<mpi_backend>(boot, opts);
}

}  // namespace oneside::transport
