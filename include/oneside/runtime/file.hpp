// oneside::file: parallel file I/O as the spec's I/O chapter describes it (MPI-IO), for a team:
// collective open/close, views made of datatypes, individual and shared file pointers, and
// every data access form — explicit offset, individual pointer, shared pointer; blocking,
// nonblocking, collective and split collective (IO-1 … IO-17 of ../shared/spec/checklist.md).
//
// Offsets and counts. Offsets are in etypes of the current view (bytes under the default view,
// disp 0, etype = filetype = std::byte), counts are 64-bit (IO-16). The data of a call is
// `count` elements of `type` at `buf`, laid out in memory as the type says; in the file it goes
// to the view's data positions from the offset on: the filetype's data bytes, tiled from the
// view's displacement.
//
// Errors. Every call checks its arguments first and raises oneside::error before any byte moves
// (a rejected call writes nothing and moves no file pointer), with the spec's I/O error classes
// (no_such_file, file_exists, access, amode, read_only, no_space, quota, bad_file, file, io, …).
// A file's default error handler throws (the C++ form of the spec's default for files,
// MPI_ERRORS_RETURN, IO-17 — unlike windows, whose default handler is fatal in the spec);
// set_error_handler(errors::fatal) aborts the job with the message instead. Errors of the
// system calls underneath are mapped to the classes above; anything else is io.
//
// Consistency. As in the spec: a process sees its own writes at once; writes of another
// process after sync-barrier-sync, or at once in atomic mode (set_atomicity(true), which makes
// each access — a begin/end pair counts as one, IO-3 — atomic against every other access of
// the file's handles, with POSIX record locks).
//
// Threads. Independent calls may be made from several threads at once; collective calls follow
// the spec's collective ordering (each member issues them in the same order), and the begin and
// end of a split collective must be called by the same thread (IO-12, checked).
//
// Collective buffering (two-phase I/O: members put their pieces into a few aggregators'
// reused buffers over the transport, the aggregators write large contiguous spans; data
// sieving for reads) runs the _all and _at_all forms when the hint collective_buffering is
// "true", or, without the hint, when any member's view interleaves runs of less than 1 MiB with
// holes (set_view decides, collectively); "false" turns it off. Otherwise each member moves its
// own data.
//
// Staged accesses. A blocking access (independent, or collective without collective buffering)
// from contiguous memory that writes at least eight halves of cb_buffer_size bytes (1 MiB by
// default) of file runs averaging a half or more, on a node whose ranks do not outnumber its
// cores, goes through a reused buffer of two halves:
// the calling thread copies the next half in while the file's I/O thread writes the previous
// one, so no member holds the file's inode lock (which serializes buffered writes into one
// file) for more than a half. Each member decides per call from its own access; the hint
// staged_io ("true": every such access of more than two halves, reads too; "false": none)
// overrides the rule. Never in atomic mode, nor for nonblocking and split accesses. The result
// and the errors are those of an unstaged access (a half already handed to the I/O thread after
// the failing one may still be written). Not done: the "internal" and "external32"
// representations (unsupported_datarep).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <oneside/runtime/datatype.hpp>
#include <oneside/runtime/info.hpp>
#include <oneside/runtime/team.hpp>
#include <oneside/runtime/types.hpp>

namespace oneside {

namespace detail {
struct file_impl;
struct file_op;
}  // namespace detail

// A file offset: in etypes of the view for the data access calls, in bytes for sizes and
// displacements. Signed and 64-bit (MPI_Offset).
using offset_t = std::int64_t;

// Access modes of file::open (MPI_MODE_*), combined with |. Exactly one of rdonly, rdwr,
// wronly; create and excl not with rdonly; excl only with create.
enum class file_mode : unsigned {
  none = 0,
  rdonly = 1U << 0,
  rdwr = 1U << 1,
  wronly = 1U << 2,
  create = 1U << 3,
  excl = 1U << 4,
  delete_on_close = 1U << 5,
  unique_open = 1U << 6,  // a hint: nobody else opens the file meanwhile
  append = 1U << 7,       // every file pointer starts at the end of the file
};
constexpr file_mode operator|(file_mode a, file_mode b) noexcept {
  return static_cast<file_mode>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr file_mode operator&(file_mode a, file_mode b) noexcept {
  return static_cast<file_mode>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}
constexpr bool any(file_mode m) noexcept {
  return static_cast<unsigned>(m) != 0;
}

// Where seek counts from (MPI_SEEK_SET, _CUR, _END).
enum class seek_from : std::uint8_t { set, current, end };

// What a data access did (MPI_Status of a file access, MPI_Get_count / MPI_Get_elements).
// Reads stop at the end of the file: a read past it reports the shorter amount, which is not
// an error (IO-14).
struct io_status {
  count_t bytes = 0;     // data bytes read or written
  count_t count = 0;     // whole elements of the call's datatype (MPI_Get_count)
  count_t elements = 0;  // basic elements (MPI_Get_elements)
  friend bool operator==(const io_status&, const io_status&) = default;
};

// A nonblocking access in progress (iread_at, iwrite, …): a move-only handle. The access runs
// on the file's I/O thread; wait() returns its status once it completed (and rethrows its
// error), test() says whether it completed without blocking. The buffer belongs to the access
// until then. A request that is destroyed unfinished waits for its access first (the buffer
// must stay valid). This layer has no futures (they are the pgas layer's); a future is made
// from a request with pgas' async/then on wait().
class file_request {
 public:
  file_request() = default;
  file_request(file_request&&) noexcept;
  file_request& operator=(file_request&&) noexcept;
  file_request(const file_request&) = delete;
  file_request& operator=(const file_request&) = delete;
  ~file_request();

  // True once the access completed (then wait() does not block). Errors: request (empty).
  bool test() const;
  // Waits until the access completed and returns its status; rethrows its error. A second
  // wait returns the same status. Errors: request (empty), and the access's own.
  io_status wait();
  bool is_valid() const noexcept { return op_ != nullptr; }

 private:
  friend struct detail::file_impl;
  explicit file_request(std::shared_ptr<detail::file_op> op) noexcept;
  std::shared_ptr<detail::file_op> op_;
};

class file {
 public:
  enum class errors : std::uint8_t { throws, fatal };

  // A null handle: every call but is_open() raises error(file).
  file() noexcept;
  file(file&&) noexcept;
  file& operator=(file&&) noexcept;
  file(const file&) = delete;
  file& operator=(const file&) = delete;
  // Releases this process's part of an open file without the collective close (for unwinding):
  // waits for its outstanding accesses and closes its descriptor. Call close() normally.
  ~file();

  // ---- management --------------------------------------------------------------------

  // Opens `path` collectively over `t` (every member passes the same path and mode; they are
  // compared: not_same otherwise). Member 0 creates the file when asked, then every member
  // opens it; the file pointers start at 0 (at the end with append) and the view is the
  // default one. Hints (`hints`; other keys are kept and change nothing): collective_buffering
  // ("true"/"false": two-phase I/O for the _all and _at_all forms or not; without it, for
  // interleaved views), cb_nodes (aggregators; default one per node, every member when the
  // team is on one node), striping_unit (domains start on its multiples), cb_buffer_size (the
  // bytes of one round of an aggregator, 1 MiB by default; it holds two; also the staging
  // buffer's half) (positive integers; a bad value is dropped); member 0's values of these four
  // hold everywhere; staged_io ("true"/"false", each member's own: see Staged accesses above);
  // get_info() reports what holds. Errors (every member raises the same): amode (bad combination),
  // bad_file (empty path), no_such_file, file_exists, access, read_only, no_space, quota, io,
  // not_same.
  static file open(const team& t, std::string_view path, file_mode mode, const info& hints = {});
  // Collective: completes this member's outstanding accesses, closes, and, with
  // delete_on_close, member 0 deletes the file once every member closed. Errors: file,
  // io (a split collective is active, IO-11).
  void close();
  // Deletes the file at `path` (MPI_File_delete; `delete` is a keyword). Not collective.
  // Errors: bad_file, no_such_file, access, io.
  static void remove(std::string_view path, const info& hints = {});

  // Collective: the file's size becomes `bytes` (truncated or extended with zeros).
  // Errors: arg (negative), read_only (opened rdonly), io (split active, IO-11), no_space.
  void set_size(offset_t bytes);
  // Collective: reserves storage for the first `bytes` bytes; the size grows to at least that.
  void preallocate(offset_t bytes);
  // The file's size in bytes. Not collective.
  offset_t get_size() const;
  // Collective: this member's writes reach the storage device; with a barrier of the team
  // (sync-barrier-sync) they become visible to every member.
  void sync();
  // Collective (every member passes the same value: not_same otherwise).
  void set_atomicity(bool atomic);
  bool get_atomicity() const;
  // The hints in effect (see open), and the access mode and team the file was opened with.
  oneside::info get_info() const;
  file_mode amode() const;
  const oneside::team& team() const;
  bool is_open() const noexcept;
  void set_error_handler(errors policy);
  errors error_handler() const;

  // ---- views -------------------------------------------------------------------------

  // Collective: this member's view becomes `filetype` tiled from byte `disp`, accessed in
  // units of `etype`; both file pointers return to 0. The filetype's size must be a multiple of
  // the etype's, and its data must lie at non-negative, nondecreasing displacements (MPI's rule
  // for filetypes); etype and filetype may be any datatype of the datatype engine. Only the
  // "native" representation exists. Errors: arg (negative disp), type (the rules above),
  // unsupported_datarep, io (split active). A rejected call keeps the old view.
  void set_view(offset_t disp, const datatype& etype, const datatype& filetype,
                std::string_view datarep = "native", const info& hints = {});
  offset_t view_disp() const;
  datatype view_etype() const;
  datatype view_filetype() const;

  // ---- file pointers (in etypes of the view) -----------------------------------------

  // Moves the individual pointer. Errors: arg (a negative position results).
  void seek(offset_t offset, seek_from whence = seek_from::set);
  offset_t get_position() const;
  // Collective: moves the shared pointer (every member passes the same arguments).
  void seek_shared(offset_t offset, seek_from whence = seek_from::set);
  offset_t get_position_shared() const;
  // The absolute byte position in the file of view offset `offset`.
  offset_t get_byte_offset(offset_t offset) const;

  // ---- data access -------------------------------------------------------------------
  // Every form takes (buf, count, type); explicit-offset forms an offset first. Writes need a
  // file opened rdwr or wronly (read_only), reads one opened rdwr or rdonly (access). Other
  // errors: count (negative), arg (negative offset, null buffer with data), type (empty handle,
  // a type whose size is not a multiple of the etype's), file (null handle), io (the system
  // calls; for collective forms also: a split collective is active, IO-11), no_space, quota.

  // Explicit offset, individual pointer and shared pointer; blocking, independent.
  io_status read_at(offset_t offset, void* buf, count_t count, const datatype& type);
  io_status write_at(offset_t offset, const void* buf, count_t count, const datatype& type);
  io_status read(void* buf, count_t count, const datatype& type);
  io_status write(const void* buf, count_t count, const datatype& type);
  io_status read_shared(void* buf, count_t count, const datatype& type);
  io_status write_shared(const void* buf, count_t count, const datatype& type);

  // Nonblocking, independent: the pointers move at once (IO-13's rule for nonblocking access).
  file_request iread_at(offset_t offset, void* buf, count_t count, const datatype& type);
  file_request iwrite_at(offset_t offset, const void* buf, count_t count, const datatype& type);
  file_request iread(void* buf, count_t count, const datatype& type);
  file_request iwrite(const void* buf, count_t count, const datatype& type);
  file_request iread_shared(void* buf, count_t count, const datatype& type);
  file_request iwrite_shared(const void* buf, count_t count, const datatype& type);

  // Collective, blocking. _ordered: the members access the shared pointer's region in rank
  // order, one after the other, and it advances by the total (all members need the same view,
  // IO-15: not_same otherwise).
  io_status read_at_all(offset_t offset, void* buf, count_t count, const datatype& type);
  io_status write_at_all(offset_t offset, const void* buf, count_t count, const datatype& type);
  io_status read_all(void* buf, count_t count, const datatype& type);
  io_status write_all(const void* buf, count_t count, const datatype& type);
  io_status read_ordered(void* buf, count_t count, const datatype& type);
  io_status write_ordered(const void* buf, count_t count, const datatype& type);

  // Split collectives (IO-1 … IO-15): begin starts the access and returns — the file's I/O
  // thread moves the data while the caller computes — and moves the file pointers (IO-13);
  // end completes it and returns its status (IO-14). The buffer belongs to the access until
  // end, which takes the same buffer (IO-10). At most one split collective per handle and
  // process (IO-5); no other collective call on the handle until its end (IO-11); end matches
  // the begin of its own kind (IO-7) on the thread that called begin (IO-12). Violations raise
  // error(io) (arg for another buffer) and change nothing: the pending access can still be
  // ended. The _ordered begin waits for every member (it learns their counts: IO-8 allows it).
  void read_at_all_begin(offset_t offset, void* buf, count_t count, const datatype& type);
  io_status read_at_all_end(void* buf);
  void write_at_all_begin(offset_t offset, const void* buf, count_t count, const datatype& type);
  io_status write_at_all_end(const void* buf);
  void read_all_begin(void* buf, count_t count, const datatype& type);
  io_status read_all_end(void* buf);
  void write_all_begin(const void* buf, count_t count, const datatype& type);
  io_status write_all_end(const void* buf);
  void read_ordered_begin(void* buf, count_t count, const datatype& type);
  io_status read_ordered_end(void* buf);
  void write_ordered_begin(const void* buf, count_t count, const datatype& type);
  io_status write_ordered_end(const void* buf);

  // Whether the active split collective's access has completed on this member, so that its
  // end returns without waiting for data (a oneside extension, for the pgas layer's futures of
  // dist_array::save_async: MPI has no test for split collectives). Not collective; any thread.
  // With collective buffering: whether this member's aggregator access (if it is one)
  // completed; the end is still collective then. Errors: io (no split collective is active).
  bool split_test() const;

  detail::file_impl& impl() const;  // for the layers above; raises error(file) on a null handle

 private:
  explicit file(std::unique_ptr<detail::file_impl> impl) noexcept;
  std::unique_ptr<detail::file_impl> impl_;
};

}  // namespace oneside
