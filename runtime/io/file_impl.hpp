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
  bool atomic = false;             // hold a record lock over the accessed range
  std::byte* direct = nullptr;     // the user's buffer when contiguous (no staging)
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

 private:
  void loop();
  std::mutex mu_;
  // The idle I/O thread's sleep. Not a wait of a rank's thread (those go through wait_until):
  // it waits for work, not for a peer, so the doorbell protocol has nothing to add.
  std::condition_variable cv_;
  std::deque<std::shared_ptr<file_op>> queue_;
  std::atomic<std::int64_t> outstanding_{0};
  bool stop_ = false;
  std::thread thread_;
};

// A collective access going through collective buffering (two_phase.cpp).
struct two_phase {
  bool write = false;
  std::string call;
  std::uint64_t bytes = 0;  // this member's requested data bytes
  datatype type = datatype::of<std::byte>();
  count_t count = 0;
  void* user = nullptr;
  std::byte* direct = nullptr;
  std::vector<rank_t> aggregators;  // team ranks; domain d belongs to aggregators[d]
  offset_t lo = 0;
  offset_t chunk = 0;
  // This member's pieces in view order: which domain, which of the pieces sent there, length.
  struct part {
    std::size_t domain;
    std::size_t index;
    std::size_t len;
  };
  std::vector<part> mine;
  // At an aggregator: each member's pieces of its domain, and its own file access.
  std::vector<std::vector<file_piece>> requests;
  std::shared_ptr<file_op> agg;
  bool submitted = false;  // agg runs on the I/O thread (split forms) or in end (blocking)
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
  offset_t pointer = 0;  // individual file pointer, etypes

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

// Whether the _all and _at_all forms on `f` use collective buffering (the hint
// collective_buffering=true, and not in atomic mode).
bool uses_two_phase(const file_impl& f);
// Collective: exchanges the pieces of `mine` (an access built by make_op) with the aggregators
// and starts each aggregator's file access on its I/O thread (or leaves it to end, which runs
// it on the calling thread, when not `on_io_thread`: the blocking collectives).
std::shared_ptr<two_phase> two_phase_begin(file_impl& f, file_op& mine, bool on_io_thread);
// Collective: waits for this member's aggregator access, sends read data back, returns the
// member's status; raises when any aggregator failed.
io_status two_phase_end(file_impl& f, two_phase& s);

// The error class of system error `err` for file calls (ENOENT → no_such_file, …).
error_class file_error_class(int err) noexcept;

}  // namespace oneside::detail
