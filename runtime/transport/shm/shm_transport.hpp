// The shared-memory backend (the default transport, and the on-node half of the router):
// ranks of one node reach each other's exposed segments by load/store after mapping them
// lazily, reach memory the runtime did not allocate with cross-memory attach
// (process_vm_readv/writev), and run atomics on such memory at its owner, through the owner's
// agent thread. Completion is immediate for everything but active messages, whose completion
// is the owner's "applied" ticket in our rank page.
//
// Ranks are the job's: the backend serves the ranks of its bootstrap, which are the job's own
// or, under the router, those of one node (options::job_ranks says which job rank each is).
//
//   shm_transport.cpp  setup, teardown, rank checks
//   memory.cpp         segments, exposures, the segment table and peers' views of it
//   rma.cpp            put/get (+iovec) and atomics
//   messages.cpp       active messages: the queue in each rank page, the agent, wake-ups
//   completion.cpp     flush, test, wait
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

#include "runtime/transport.hpp"
#include "transport/runtime_backend.hpp"
#include "transport/shm/rank_page.hpp"
#include "transport/shm/shm_object.hpp"

namespace oneside::detail {
class bootstrap;
}

namespace oneside::transport {

class shm final : public runtime_backend, public reach_table {
 public:
  struct options {
    std::size_t am_slots = 256;
    std::size_t am_slot_bytes = 4096;
    bool agent_thread = true;            // false: messages run in progress() (ONESIDE_AGENT=poll)
    bool remap_user_memory = true;       // expose() moves user pages into shared memory
    std::int64_t agent_spin_ns = 50000;  // polling after a message before the agent sleeps
    bool load_store = true;              // false: peers are remote (ONESIDE_SHM_LOAD_STORE=0)
    // Puts and gets of at most this many bytes to memory this process cannot load and store
    // travel in a message the owner's agent applies, not by cross-memory attach (0: never;
    // ONESIDE_SHM_INLINE_BYTES). Gets: at most shm_detail::reply_bytes.
    std::size_t inline_bytes = 1024;
    // The job rank of each rank of the bootstrap (empty: the bootstrap's ranks are the job's),
    // and the job's size (0: the bootstrap's).
    std::vector<rank_t> job_ranks;
    int job_size = 0;
    // The transport the layers above use, which active-message handlers receive (null: this
    // backend).
    backend* front = nullptr;
  };

  // Collective over the bootstrap's ranks: creates this rank's page, maps every peer's,
  // starts the agent.
  shm(oneside::detail::bootstrap& boot, const options& opts);
  ~shm() override;

  // Collective: completes everything this rank issued, waits for every rank, stops the agent
  // and releases all shared memory of this rank. Later calls fail with error(not_open).
  void close() override;
  // Local teardown for a rank that is failing: stops the agent and releases this rank's shared
  // memory without waiting for anyone. Later calls fail with error(not_open).
  void abandon() noexcept override;

  std::string_view name() const noexcept override { return "shm"; }
  const transport_caps& caps() const noexcept override { return caps_; }
  rank_t rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::span<const rank_t> node_ranks() const noexcept override { return node_ranks_; }

  using backend::allocate_segment;
  segment allocate_segment(std::size_t bytes, const segment_request& how) override;
  void reserve(const segment& s, std::size_t offset, std::size_t bytes,
               std::string_view call) override;
  exposure expose(void* base, std::size_t bytes) override;
  exposure expose_optional(void* base, std::size_t bytes) override;

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
  bool is_complete(const completion::pending& p) override;

  void* direct(rank_t rank, std::uintptr_t addr, std::size_t len) noexcept override;
  pinned pin(rank_t rank, std::uintptr_t addr, std::size_t len) override;
  pinned pin_exposure(rank_t rank, std::uint64_t exposure_id, std::uintptr_t addr,
                      std::size_t len) override;
  reach_table& reach() noexcept override { return *this; }
  bool exposes(rank_t rank, std::uintptr_t addr, std::size_t len) override {
    return find(rank, addr, len).has_value();
  }
  void am_send(rank_t dst, am_handler_id handler, std::span<const std::byte> payload,
               completion* c) override;
  void progress() override;
  void wake(rank_t rank) noexcept override;
  void wake(std::span<const rank_t> ranks) noexcept override;
  oneside::detail::doorbell& local_doorbell() noexcept override;
  oneside::detail::doorbell* peer_doorbell(rank_t r) noexcept override;
  void release(segment& s) noexcept override;
  void release(exposure& e) noexcept override;

  // For tests: CPU time the agent thread has used, in nanoseconds (-1 without an agent).
  std::int64_t agent_cpu_ns() const noexcept;

 private:
  struct peer {
    shm_detail::page_view page;
    oneside::detail::shm_object page_object;
    pid_t pid = 0;
    std::mutex refresh_mutex;  // guards maps and orders the rewrites of the peer's reach table
    // Mappings of the peer's segments; pins share them, so a mapping lives until the peer
    // withdrew the segment and the last pin is gone.
    std::map<std::uint64_t, std::shared_ptr<oneside::detail::shm_object>> maps;
    std::mutex send_mutex;                 // orders tickets with queue positions
    std::atomic<std::uint64_t> issued{0};  // tickets of messages sent to this peer
  };

  // The index of job rank `r` among this backend's ranks, or -1.
  int index_of(rank_t r) const noexcept {
    return r >= 0 && r < size_ ? index_of_[static_cast<std::size_t>(r)] : -1;
  }
  peer& peer_at(int i) noexcept { return peers_[static_cast<std::size_t>(i)]; }
  // The index of `r`, after raising error(rank) for a rank outside the job or this node, and
  // error(not_open) once closed.
  int checked_index(rank_t r, std::string_view call) const;
  void check_open(std::string_view call) const;
  std::optional<entry> find_current(rank_t r, std::uintptr_t addr,
                                    std::size_t len) noexcept override;
  // Rewrites the reach table of the rank at `index` when its owner's version moved on, and
  // drops the mappings of segments it withdrew. Caller holds that peer's refresh_mutex.
  void refresh_locked(int index) noexcept;
  void* direct_at(int i, std::uintptr_t addr, std::size_t len) noexcept;
  void publish_table();
  bool remap_into_shared_memory(std::uint64_t id, std::uintptr_t begin, std::size_t len,
                                bool fenced);
  void release_all() noexcept;
  // put/get/putv/getv: load/store where the peer's memory is mapped, else cross-memory attach.
  template <bool Write, class Iov>
  void transfer(rank_t target, std::span<const Iov> local, std::span<const remote_iov> remote,
                std::string_view call);
  // Sends a message to index `i` whose `bytes` of payload write(at) writes in place; returns
  // its ticket (applied once the target ran it).
  template <class Write>
  std::uint64_t send(int i, shm_detail::message_kind kind, am_handler_id handler, std::size_t bytes,
                     Write&& write);
  template <class Write>
  void enqueue(int i, shm_detail::message_kind kind, am_handler_id handler, std::size_t bytes,
               std::uint64_t ticket, Write&& write);
  // Inline operations (messages.cpp): the pieces' bytes in one kind_put message; the pieces
  // of a kind_get message into `local`, copied from this rank's reply slot once applied.
  std::uint64_t put_inline(int i, std::span<const const_iov> local,
                           std::span<const remote_iov> remote);
  void get_inline(int i, std::span<const mutable_iov> local, std::span<const remote_iov> remote);
  void amo_inline(int i, std::uintptr_t addr, const amo_args& args, void* result, completion* c,
                  rank_t target);
  bool serve_inline(shm_detail::am_slot_header& s) noexcept;
  // Whether a transfer of `bytes` in `pieces` goes inline (options::inline_bytes, and it fits
  // one message, or for a get one reply).
  bool fits_inline(bool write, std::size_t bytes, std::size_t pieces) const noexcept;
  std::uint32_t take_reply_slot();
  void give_reply_slot(std::uint32_t slot) noexcept;
  void await_applied(int i, std::uint64_t ticket);
  std::size_t drain() noexcept;
  bool has_message() const noexcept;
  void agent_main() noexcept;
  void apply_message(shm_detail::am_slot_header& s) noexcept;
  bool is_applied(int i, std::uint64_t ticket) const noexcept;
  void stop_agent() noexcept;

  oneside::detail::bootstrap& boot_;
  // This process's hold on the job's liveness record (shm_object.hpp): made before any object
  // of the job, left after all of this rank's are gone.
  oneside::detail::job_liveness liveness_;
  rank_t rank_;                    // in the job
  int size_;                       // of the job
  int me_;                         // this rank's index among the backend's ranks
  int count_;                      // the backend's ranks
  std::vector<int> index_of_;      // by job rank: the index, or -1 off this node
  std::vector<rank_t> job_ranks_;  // by index: the job rank
  std::string job_;
  options opts_;
  backend* front_;
  transport_caps caps_{};
  std::vector<rank_t> node_ranks_;
  oneside::detail::shm_object own_page_object_;
  shm_detail::page_view own_;
  std::unique_ptr<peer[]> peers_;

  // A shared-memory object of this rank that peers may map: memory allocated by
  // allocate_segment (base = the object's mapping) or user memory an exposure moved into
  // shared memory in place (base = the user's pages).
  struct published_segment {
    oneside::detail::shm_object object;
    std::uintptr_t base;
    std::size_t len;
    bool moved = false;  // user pages an exposure of the same id moved here (moved_flag)
  };
  struct exposed_range {
    std::uintptr_t base;
    std::size_t len;
    bool remapped;               // its pages were moved into shared memory (segment `id`)
    bool fenced;                 // with stores held off while they moved (page_move.hpp)
    std::uintptr_t pages_begin;  // the remapped pages, when remapped
    std::size_t pages_len;
  };

  std::mutex segments_mutex_;  // guards segments_, exposures_ and the published table
  std::map<std::uint64_t, published_segment> segments_;
  std::map<std::uint64_t, exposed_range> exposures_;
  // A fresh id for a segment or exposure: 62 random bits (ids name shared-memory objects, which
  // another user must not guess), none in use. Caller holds segments_mutex_.
  std::uint64_t new_object_id() const;
  // expose() and expose_optional(): moves the pages of `e` into shared memory where it can
  // (only when stores can be fenced, for `optional`) and records it under a fresh `id`
  // (`optional`: only when the pages moved). False when nothing was recorded. Caller holds
  // segments_mutex_.
  bool expose_range(std::uint64_t& id, exposed_range& e, bool optional);
  // Gives the pages exposure `e` moved back to the program as private memory; with
  // `peers_write`, once no peer's cross-memory write into this rank is under way (rank_page.hpp).
  void move_back(const exposed_range& e, const oneside::detail::shm_object& object,
                 bool peers_write) noexcept;

  std::atomic_flag consumer_busy_ = ATOMIC_FLAG_INIT;  // one thread drains the queue at a time
  std::atomic<std::uint64_t> replies_free_{~std::uint64_t{0}};  // a bit per free reply slot
  // Active messages this process sent, and how many of them a flush_all has seen applied:
  // flush_all skips its walk over every peer when the two agree (the common fence).
  std::atomic<std::uint64_t> am_sent_{0};
  std::atomic<std::uint64_t> am_flushed_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> closed_{false};
  std::thread agent_;
  std::atomic<std::int64_t> agent_cpu_clock_{-1};
};

// Called (when set) by a sender that found a peer's queue full, before it waits for space:
// tests widen the window in which the queue drains completely.
extern std::atomic<void (*)()> queue_full_hook_for_testing;

}  // namespace oneside::transport
