// The state behind oneside::file: the open descriptor, the view and its mapping from data
// positions to file bytes, the file pointers (the shared one in member 0's exposed memory,
// moved with transport atomics), the split collective in progress, and the file's I/O thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/error.hpp>
#include <oneside/runtime/file.hpp>
#include <oneside/runtime/info.hpp>
#include <oneside/runtime/team.hpp>

#include "runtime/transport.hpp"

namespace oneside::detail {

// A contiguous piece of the file.
struct file_piece {
  offset_t at;
  std::size_t len;
};

// A view: `filetype` tiled from byte `disp`, in units of `etype`. Data positions count the
// view's data bytes from its start (etype offset × etype size).
class file_view {
 public:
  // The default view: disp 0, etype = filetype = std::byte.
  file_view();
  // Checks the spec's rules (see file::set_view) and raises error(type)/(arg) naming `call`.
  file_view(offset_t disp, const datatype& etype, const datatype& filetype, std::string_view call);

  offset_t disp() const noexcept { return disp_; }
  const datatype& etype() const noexcept { return etype_; }
  const datatype& filetype() const noexcept { return filetype_; }
  std::size_t etype_size() const noexcept { return etype_.size(); }
  // Whether the view's data comes in runs of less than 1 MiB with holes between them (what
  // makes collective buffering pay: each member's accesses are many small pieces).
  bool interleaved() const noexcept {
    return !contiguous_ && tile_bytes_ / runs_.size() < (std::uint64_t{1} << 20);
  }
  // Whether the view is contiguous or its runs of data average at most `bytes`.
  bool contiguous_or_runs_at_most(std::uint64_t bytes) const noexcept {
    return contiguous_ || runs_.empty() || tile_bytes_ / runs_.size() <= bytes;
  }
  // Equal on members whose views are the same (IO-15's check).
  std::uint64_t signature() const noexcept { return signature_; }

  // Appends the pieces of the file that hold data bytes [pos, pos + n), in view order, merging
  // adjacent ones.
  void pieces(std::uint64_t pos, std::uint64_t n, std::vector<file_piece>& out) const;
  // The file byte holding data byte `pos`.
  offset_t byte_of(std::uint64_t pos) const;
  // The number of data bytes of the view before file byte `b`.
  std::uint64_t data_before(offset_t b) const;

 private:
  void init(std::string_view call);
  offset_t disp_;
  datatype etype_;
  datatype filetype_;
  std::vector<file_piece> runs_;       // one tile's data, offsets from the tile's start
  std::vector<std::uint64_t> before_;  // data bytes of the tile before run i
  std::uint64_t tile_bytes_ = 0;
  std::int64_t tile_extent_ = 0;
  bool contiguous_ = false;  // one run spanning the extent: data byte p is at disp + off + p
  std::uint64_t signature_ = 0;
};

// One access: where in the file, where in memory, and what happened.
struct file_op {
  // Filled by the caller before the op runs.
  std::vector<file_piece> pieces;
  std::uint64_t bytes = 0;  // requested data bytes
  bool write = false;
  bool atomic = false;          // hold a record lock over the accessed range
  std::byte* direct = nullptr;  // the user's buffer when contiguous (no staging)
  // When >= 0: piece p's data is at direct + (p.at - mapped_base) (a buffer mapping a file
  // range, collective buffering's), instead of packed one piece after the other.
  offset_t mapped_base = -1;
  std::vector<std::byte> staging;  // packed data (writes) or data read (reads)
  void* user = nullptr;            // reads through staging: unpacked here
  datatype type = datatype::of<std::byte>();
  count_t count = 0;
  int fd = -1;
  std::string call;  // names the call in errors
  std::string path;
  // Set by the runner.
  io_status status;
  std::exception_ptr error;
  std::atomic<bool> done{false};
};

// The status of an access of `bytes` data bytes of elements of `type`.
io_status make_status(const datatype& type, std::uint64_t bytes);

// Copies the first n packed bytes of `src` into count elements of `type` at `dst` (a read that
// ended early fills a prefix of the buffer).
void unpack_prefix(const datatype& type, count_t count, const std::byte* src, std::size_t n,
                   void* dst);

// Runs `op` on the calling thread (pread/pwrite underneath), sets its status or error, marks
// it done and rings the process's doorbell.
void run_file_op(file_op& op) noexcept;

// The file's I/O thread: runs submitted accesses in order, so a begin returns at once and the
// data moves while the caller computes. Started at the first submission.
class io_worker {
 public:
  io_worker() = default;
  io_worker(const io_worker&) = delete;
  io_worker& operator=(const io_worker&) = delete;
  ~io_worker();  // runs what is queued, then joins

  void submit(std::shared_ptr<file_op> op);
  // Returns once every submitted access completed.
  void drain();
  // Whether the thread moves pieces through an io_uring (ONESIDE_IO_ENGINE=uring, liburing in
  // the build, a ring the kernel granted); known once the thread ran an access.
  bool uses_ring() const noexcept { return ring_.load(std::memory_order_acquire); }

 private:
  void loop();
  std::mutex mu_;
  // The idle I/O thread's sleep. Not a wait of a rank's thread (those go through wait_until):
  // it waits for work, not for a peer, so the doorbell protocol has nothing to add.
  std::condition_variable cv_;
  std::deque<std::shared_ptr<file_op>> queue_;
  std::atomic<std::int64_t> outstanding_{0};
  bool stop_ = false;
  std::atomic<bool> ring_{false};
  std::thread thread_;
};

// A test hook: the engine of I/O threads started from now on, instead of ONESIDE_IO_ENGINE's
// (0: the setting, 1: threads, 2: uring).
extern std::atomic<int> io_engine_for_testing;

// A collective access going through collective buffering (two_phase.cpp): what end needs.
struct two_phase {
  bool write = false;
  std::string call;
  std::uint64_t bytes = 0;  // this member's requested data bytes
  datatype type = datatype::of<std::byte>();
  count_t count = 0;
  void* user = nullptr;  // reads into non-contiguous memory: unpacked here at end
  std::vector<std::byte> packed;
  std::uint64_t delivered = 0;  // reads: data bytes this member got (short at the end of file)
  // At an aggregator: its file accesses still running on the I/O thread, and whether any of
  // its accesses failed (the first error).
  std::vector<std::shared_ptr<file_op>> pending;
  std::exception_ptr error;
};

// A piece of a member's data in collective buffering, cut at domain and round boundaries.
struct cb_cut {
  std::uint32_t domain;
  std::uint32_t round;  // index into the call's rounds (before skipping empty ones)
  offset_t at;
  std::size_t len;
  std::uint64_t src;  // where its data is in the member's packed data
};

// Collective buffering's working lists (two_phase_begin), kept from call to call so that their
// memory stays mapped: an access of 4 KiB pieces has 32 768 of them per 128 MiB, and fresh
// vectors of that size cost a page fault per 4 KiB each call (a hypervisor exit on some VMs:
// 40 ms of a 0.18 s interleaved write of 1 GiB from 2 ranks, bench/RESULTS.md). They hold about
// 70 bytes per piece of the largest access until the file is closed.
struct cb_scratch {
  std::vector<cb_cut> cuts;
  std::vector<std::uint32_t> by_round;   // indices into cuts, grouped by round, in view order
  std::vector<std::size_t> round_first;  // round k's indices are [round_first[k], [k + 1])
  std::vector<std::int64_t> per_round;   // this member's cuts per round
  std::vector<std::int64_t> used;        // everybody's cuts per round
  std::vector<std::int64_t> out_list;    // (offset, length) pairs to each aggregator
  std::vector<std::int64_t> in_list;     // at an aggregator: the members' pairs, a run each
  std::vector<file_piece> spans;         // merged: what the aggregator's domain accesses
};

// Collective buffering's lasting state of a file (made by its first collective-buffered call,
// reused by every later one): the aggregators, and at each aggregator a buffer of two halves in
// exposed memory that the members put their pieces into (writes) or get them from (reads), one
// half per round, so that the next round's exchange overlaps this round's file access.
struct cb_state {
  bool ready = false;
  cb_scratch scratch;  // used only inside two_phase_begin (one collective per file at a time)
  std::vector<rank_t> aggregators;   // team ranks; domain d belongs to aggregators[d]
  std::vector<rank_t> world;         // the same, as world ranks
  std::vector<std::uintptr_t> addr;  // each aggregator's buffer
  std::size_t half = 0;              // bytes of one half: one round of a domain
  transport::segment own;            // this member's buffer when it is an aggregator
};

enum class split_kind : std::uint8_t {
  read_at_all,
  write_at_all,
  read_all,
  write_all,
  read_ordered,
  write_ordered
};

struct file_impl {
  oneside::team members;
  std::string path;
  file_mode mode = file_mode::none;
  int fd = -1;
  oneside::info hints;
  file::errors policy = file::errors::throws;
  bool atomic = false;

  // Guards the view, the individual pointer and the split state (independent calls may come
  // from several threads).
  mutable std::mutex mu;
  file_view view;
  bool view_interleaved = false;  // any member's view is interleaved() (set_view agrees)
  bool reads_two_phase = false;   // interleaved reads use collective buffering (set_view agrees)
  bool writes_two_phase = true;   // interleaved writes use collective buffering (set_view agrees)
  offset_t pointer = 0;           // individual file pointer, etypes

  // The shared file pointer (etypes): a word in member 0's exposed memory.
  transport::segment shared_word;  // member 0 only
  rank_t shared_owner = no_rank;   // world rank of member 0
  std::uintptr_t shared_addr = 0;

  struct split_state {
    split_kind kind;
    const void* buf;
    std::thread::id thread;
    std::shared_ptr<file_op> op;    // the access, or null with collective buffering
    std::shared_ptr<two_phase> tp;  // collective buffering's state
  };
  std::optional<split_state> split;

  cb_state cb;  // declared before the worker: the I/O thread is joined before it goes
  // Staged accesses' buffer (staged.cpp): two halves, made by the first staged access; one
  // staged access at a time holds it.
  std::mutex stage_mu;
  std::vector<std::byte> stage_buffer;
  io_worker worker;

  ~file_impl();

  // A request on `op` (file_request's constructor is private to the layer).
  static file_request request_of(std::shared_ptr<file_op> op) {
    return file_request(std::move(op));
  }

  // Raises error(ec) naming `call` and the file, or aborts under errors::fatal.
  [[noreturn]] void fail(error_class ec, std::string_view call, std::string_view what) const;
  // Raises the class of system error `err` (errno) of `call` on this file.
  [[noreturn]] void fail_errno(std::string_view call, std::string_view what, int err) const;

  // The shared pointer: fetch-and-add, load, store (transport atomics on member 0's word).
  offset_t shared_fetch_add(offset_t delta, std::string_view call);
  offset_t shared_load(std::string_view call) const;
  void shared_store(offset_t value, std::string_view call);

  // Waits for every outstanding access and releases the descriptor (not collective).
  void release() noexcept;
};

// A test hook: when set, the next file::open fails member 0's allocation of the shared file
// pointer's word (error no_mem), as a heap at its cap would; cleared by that open.
extern std::atomic<bool> fail_shared_pointer_for_testing;

// Whether the _all and _at_all forms on `f` use collective buffering: the hint
// collective_buffering says so ("true"/"false"), or, without it, any member's view is
// interleaved, for writes unless the members share one node and every member's writes of small
// pieces go through mappings (mapped_writes_pay), for reads when the members span several
// nodes or, on one node, when cb_reads_on_one_node() says so on any member (set_view agrees);
// never in atomic mode.
bool uses_two_phase(const file_impl& f, bool write);
// Whether this process would read interleaved views through collective buffering when the
// members share one node (ONESIDE_IO_CB_READS): "always", "across-nodes" (never on one node), or
// "auto": when a system call costs kernel_entry_costly_ns or more here. Each member's own read
// of its pieces costs a system call per piece (or a page fault per few), the exchange a few
// copies of them in user space; which wins is the price of entering the kernel (bench/RESULTS.md:
// 2.0-4.1x faster through the exchange on a VM whose system call costs 965 ns, 0.73-0.83x on
// one where direct reads took 1.07 us per 4 KiB piece).
bool cb_reads_on_one_node();
inline constexpr std::int64_t kernel_entry_costly_ns = 500;
// The cost of a null system call in this process, nanoseconds: the median of 5 batches of 64,
// measured at the first call.
std::int64_t kernel_entry_ns() noexcept;
// A test hook: 1 makes cb_reads_on_one_node() true, 2 false, 0 leaves it to the setting.
extern std::atomic<int> cb_reads_for_testing;
// Collective: moves the pieces of `mine` (an access built by make_op) through the aggregators'
// buffers, round by round; the aggregators' last file accesses may still run on the I/O thread
// when it returns.
std::shared_ptr<two_phase> two_phase_begin(file_impl& f, file_op& mine);
// Collective: waits for this member's aggregator access, sends read data back, returns the
// member's status; raises when any aggregator failed.
io_status two_phase_end(file_impl& f, two_phase& s);

// Staged access (staged.cpp). Whether the blocking access `op` on `f` goes through the file's
// staging buffer: its memory is contiguous, it is not atomic, and the hint staged_io says
// "true" (any access of more than two halves), or, without it, it is a write of at least eight
// halves (cb_buffer_size, 1 MiB by default) of runs averaging a half or more and this node's
// ranks do not outnumber its cores; "false": never.
bool stages(const file_impl& f, const file_op& op);
// Runs the blocking access `op` through the staging buffer with the I/O thread (see stages);
// returns its status, raises its error.
io_status run_staged(file_impl& f, file_op& op);
// The bytes of one half of the staging buffer and of collective buffering's buffers
// (the hint cb_buffer_size, 1 MiB by default).
std::size_t stage_half(const file_impl& f);
// A test hook: the number of accesses that went through a staging buffer.
extern std::atomic<std::int64_t> staged_accesses_for_testing;
// A test hook: counts the accesses that went through collective buffering (two_phase_begin).
extern std::atomic<std::int64_t> two_phase_accesses_for_testing;

// Reads of many small pieces (at least mapped_read_min_pieces, at most mapped_read_max_piece
// bytes each on average; ONESIDE_IO_MAPPED_READS, on by default) of a file on a local disk file
// system (maps_well) copy them out of read-only mappings of the file, 8 MiB of it at a time,
// instead of a pread each: a fault maps many pages of the page cache at once where a pread
// copies one piece. 2 ranks reading their 4 KiB blocks of 1 GiB on ext4: 1.44x faster (on
// tmpfs 0.95x: pread there). Pieces from the first one that reaches past the end of the file,
// or when the file cannot be mapped or shrinks under the mapping (another process truncated
// it: the SIGBUS is caught), are read with pread.
inline constexpr std::size_t mapped_read_min_pieces = 16;
inline constexpr std::size_t mapped_read_max_piece = std::size_t{256} << 10;
bool reads_mapped(const file_op& op);
// The magic number of the file system holding `fd` (statfs's f_type; 0 when unknown).
unsigned long file_system_of(int fd) noexcept;
inline constexpr unsigned long tmpfs_magic = 0x01021994UL;
// Whether the file system of `fd` is one whose reads go through mappings (ext4, XFS, Btrfs).
bool maps_well(int fd) noexcept;
// Whether reads of `fd` go through mappings: maps_well(fd), and a system call costs less than
// kernel_entry_costly_ns here (where kernel entries trap to a hypervisor, the faults and
// munmap's TLB shootdowns cost more than the preads they save: 0.56-0.65x a pread each, 2 ranks
// reading their 4 KiB blocks of 1 GiB on ext4 on a VM whose system call costs 965 ns).
bool mapped_reads_pay(int fd) noexcept;
// Copies op's pieces, in order, while it can; returns the index of the first piece not read
// (op.pieces.size() when all were) and adds the data bytes read to `done`.
std::size_t read_mapped(file_op& op, std::byte* data, std::uint64_t& done);
// Test hooks: the reads that went through mappings, a call made with the file's descriptor
// after each mapping is made (before its pieces are copied), and the faults caught.
extern std::atomic<std::int64_t> mapped_reads_for_testing;
extern std::atomic<void (*)(int fd)> mapped_read_hook_for_testing;
extern std::atomic<std::int64_t> mapped_read_faults_for_testing;
// A test hook: map files on any file system (tmpfs included).
extern std::atomic<bool> mapped_reads_on_any_fs_for_testing;

// Writes of many small pieces (as reads_mapped counts them; ONESIDE_IO_MAPPED_WRITES, on by
// default) to a file on tmpfs move each piece into the page cache through a shared mapping of
// the file, with process_vm_writev into this process's own mapping: the kernel copies each
// piece into the file's page without a system call per piece, a fault per page in user space
// (which costs a hypervisor exit on some VMs) or the file's inode lock (which lets only one
// pwrite into a file run at a time). 2 and 4 members writing interleaved 4 KiB blocks of 1 GiB
// this way ran at 0.94x and 0.91x one pwrite of the whole file (`dd`, medians of 9 launches),
// 1.35-1.5x faster than through collective buffering (bench/RESULTS.md). The file is first extended
// to the end of the last piece (fallocate of its last byte: never shrinks it); its modification
// time is set afterwards, as a write sets it. Pieces from the first one the kernel could not copy
// (the file shrank under the mapping, no space left), or all of them when the file cannot be
// mapped, are written with pwrite, which reports the error.
bool writes_mapped(const file_op& op);
// Whether writes of many small pieces to `fd` go through mappings: ONESIDE_IO_MAPPED_WRITES,
// the file is on tmpfs and open for reading and writing (a writable shared mapping needs both;
// files open write-only keep pwrite and collective buffering), and this process may use
// process_vm_writev (checked once).
bool mapped_writes_pay(int fd) noexcept;
// Writes op's pieces, in order, while it can; returns the index of the first piece not written
// (op.pieces.size() when all were) and sets `done` to the data bytes before it.
std::size_t write_mapped(file_op& op, const std::byte* data, std::uint64_t& done);
// Test hooks: the writes that went through mappings, and a call made with the file's
// descriptor after each mapping is made (before its pieces are copied).
extern std::atomic<std::int64_t> mapped_writes_for_testing;
extern std::atomic<void (*)(int fd)> mapped_write_hook_for_testing;

// The error class of system error `err` for file calls (ENOENT → no_such_file, …).
error_class file_error_class(int err) noexcept;

}  // namespace oneside::detail
