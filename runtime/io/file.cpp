// oneside::file: open/close and the management calls, views and file pointers, and every data
// access form, each checking its arguments first (nothing moves for a rejected call).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <oneside/runtime/collectives.hpp>
#include <oneside/runtime/file.hpp>
#include <oneside/runtime/wait.hpp>

#include "io/file_impl.hpp"
#include "runtime/check.hpp"
#include "runtime/layout.hpp"

namespace oneside {

using detail::file_impl;
using detail::file_op;
using detail::split_kind;

namespace detail {

std::atomic<bool> fail_shared_pointer_for_testing{false};

file_impl::~file_impl() {
  release();
}

void file_impl::release() noexcept {
  worker.drain();
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

void file_impl::fail(error_class ec, std::string_view call, std::string_view what) const {
  std::string w = path.empty() ? std::string(what) : "file " + path + ": " + std::string(what);
  if (policy == file::errors::fatal) {
    const std::string message = format_error(ec, {.call = call}, w);
    std::fprintf(stderr, "%s\n(the file's error handler is errors::fatal: aborting)\n",
                 message.c_str());
    std::fflush(stderr);
    std::abort();
  }
  raise(ec, {.call = call}, w);
}

void file_impl::fail_errno(std::string_view call, std::string_view what, int err) const {
  fail(file_error_class(err), call, std::string(what) + ": " + std::strerror(err));
}

offset_t file_impl::shared_fetch_add(offset_t delta, std::string_view call) {
  std::int64_t old = 0;
  transport::current(call).amo(shared_owner, shared_addr,
                               {.op = transport::amo_op::add,
                                .type = transport::amo_type::i64,
                                .operand = static_cast<std::uint64_t>(delta)},
                               &old);
  return old;
}

offset_t file_impl::shared_load(std::string_view call) const {
  std::int64_t v = 0;
  transport::current(call).amo(shared_owner, shared_addr,
                               {.op = transport::amo_op::load, .type = transport::amo_type::i64},
                               &v);
  return v;
}

void file_impl::shared_store(offset_t value, std::string_view call) {
  transport::current(call).amo(shared_owner, shared_addr,
                               {.op = transport::amo_op::store,
                                .type = transport::amo_type::i64,
                                .operand = static_cast<std::uint64_t>(value)},
                               nullptr);
}

}  // namespace detail

namespace {

bool has(file_mode m, file_mode bit) {
  return any(m & bit);
}

// True on every member when `ok` holds on every member (a collective's members agree to act).
bool all_agree(const team& t, bool ok) {
  return allreduce(t, ok ? 1 : 0, op::min) == 1;
}

const char* split_name(split_kind k) {
  switch (k) {
    case split_kind::read_at_all:
      return "read_at_all";
    case split_kind::write_at_all:
      return "write_at_all";
    case split_kind::read_all:
      return "read_all";
    case split_kind::write_all:
      return "write_all";
    case split_kind::read_ordered:
      return "read_ordered";
    case split_kind::write_ordered:
      return "write_ordered";
  }
  return "?";
}

bool is_write(split_kind k) {
  return k == split_kind::write_at_all || k == split_kind::write_all ||
         k == split_kind::write_ordered;
}

std::uint64_t hash_path(std::string_view p) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : p) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// Where an access's data goes in the file: an explicit offset, the individual pointer or the
// shared pointer.
enum class position { explicit_offset, individual, shared };

}  // namespace

// ---- file_request ---------------------------------------------------------------------

file_request::file_request(std::shared_ptr<file_op> op) noexcept : op_(std::move(op)) {}
file_request::file_request(file_request&&) noexcept = default;
file_request& file_request::operator=(file_request&& o) noexcept {
  if (this != &o) {
    if (op_)
      detail::wait_until([op = op_.get()] { return op->done.load(std::memory_order_acquire); });
    op_ = std::move(o.op_);
  }
  return *this;
}
file_request::~file_request() {
  if (op_)
    detail::wait_until([op = op_.get()] { return op->done.load(std::memory_order_acquire); });
}

bool file_request::test() const {
  ONESIDE_CHECK(op_ != nullptr, error_class::request, {.call = "file_request::test"},
                "the request is empty");
  return op_->done.load(std::memory_order_acquire);
}

io_status file_request::wait() {
  ONESIDE_CHECK(op_ != nullptr, error_class::request, {.call = "file_request::wait"},
                "the request is empty");
  detail::wait_scope scope("file_request::wait");
  file_op* op = op_.get();
  detail::wait_until([op] { return op->done.load(std::memory_order_acquire); });
  if (op->error) std::rethrow_exception(op->error);
  return op->status;
}

// ---- management -----------------------------------------------------------------------

file::file() noexcept = default;
file::file(std::unique_ptr<detail::file_impl> impl) noexcept : impl_(std::move(impl)) {}
file::file(file&&) noexcept = default;
file& file::operator=(file&& o) noexcept {
  impl_ = std::move(o.impl_);
  return *this;
}
file::~file() = default;

detail::file_impl& file::impl() const {
  ONESIDE_CHECK(impl_ != nullptr, error_class::file, {.call = "file"},
                "the file handle is null (never opened, moved from or closed)");
  return *impl_;
}

bool file::is_open() const noexcept {
  return impl_ != nullptr;
}

namespace {

// The hints of open: the five the layer knows, checked (a bad value is ignored, as the spec
// lets implementations do with hints), and every other key as given.
info file_hints(const info& given) {
  info out;
  for (const std::string& k : given.keys()) {
    const std::string v = *given.get(k);
    if (k == "cb_nodes" || k == "cb_buffer_size" || k == "striping_unit") {
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n <= 0) continue;
    } else if (k == "collective_buffering" || k == "staged_io") {
      if (v != "true" && v != "false") continue;
    }
    out.set(k, v);
  }
  return out;
}

}  // namespace

file file::open(const oneside::team& t, std::string_view path, file_mode mode, const info& hints) {
  constexpr std::string_view call = "file::open";
  auto impl = std::make_unique<file_impl>();
  impl->members = t;
  impl->path = std::string(path);
  impl->mode = mode;
  // Every member must pass the same path and mode.
  const std::uint64_t mine[4] = {static_cast<std::uint64_t>(mode),
                                 ~static_cast<std::uint64_t>(mode), hash_path(path),
                                 ~hash_path(path)};
  std::uint64_t most[4] = {};
  allreduce(t, mine, most, 4, datatype::of<std::uint64_t>(), op::max);
  if (most[0] != ~most[1] || most[2] != ~most[3]) {
    impl->fail(error_class::not_same, call, "the members passed different paths or modes");
  }
  const int access = (has(mode, file_mode::rdonly) ? 1 : 0) + (has(mode, file_mode::rdwr) ? 1 : 0) +
                     (has(mode, file_mode::wronly) ? 1 : 0);
  if (access != 1) {
    impl->fail(error_class::amode, call, "give exactly one of rdonly, rdwr, wronly");
  }
  if (has(mode, file_mode::rdonly) &&
      (has(mode, file_mode::create) || has(mode, file_mode::excl))) {
    impl->fail(error_class::amode, call, "rdonly cannot be combined with create or excl");
  }
  if (has(mode, file_mode::excl) && !has(mode, file_mode::create)) {
    impl->fail(error_class::amode, call, "excl needs create");
  }
  if (path.empty()) impl->fail(error_class::bad_file, call, "the path is empty");

  int flags = O_CLOEXEC;
  flags |= has(mode, file_mode::rdonly)   ? O_RDONLY
           : has(mode, file_mode::wronly) ? O_WRONLY
                                          : O_RDWR;
  // Member 0 creates the file; the others open what it made (excl applies to the creation).
  const bool root = t.rank() == 0;
  bool created = false;
  int err = 0;
  if (root) {
    int f = flags;
    if (has(mode, file_mode::create)) {
      struct stat st {};
      created = ::stat(impl->path.c_str(), &st) != 0;
      f |= O_CREAT;
      if (has(mode, file_mode::excl)) f |= O_EXCL;
    }
    impl->fd = ::open(impl->path.c_str(), f, 0666);
    if (impl->fd < 0) err = errno;
  }
  err = broadcast(t, err, 0);
  if (err != 0) impl->fail_errno(call, "cannot open", err);
  if (!root) {
    impl->fd = ::open(impl->path.c_str(), flags);
    if (impl->fd < 0) err = errno;
  }
  const int worst = allreduce(t, err, op::max);
  if (worst != 0) {
    if (root && created) ::unlink(impl->path.c_str());
    impl->fail_errno(call, err != 0 ? "cannot open" : "another member cannot open it",
                     err != 0 ? err : worst);
  }
  impl->hints = file_hints(hints);
  // The hints that steer collective accesses must be the same everywhere: member 0's win.
  auto number = [&](const char* key) -> std::int64_t {
    const auto v = impl->hints.get(key);
    return v ? std::stoll(*v) : 0;
  };
  const std::string cb = impl->hints.get("collective_buffering").value_or("");
  std::int64_t steer[4] = {cb == "true"    ? 1
                           : cb == "false" ? 2
                                           : 0,
                           number("cb_nodes"), number("striping_unit"), number("cb_buffer_size")};
  broadcast(t, steer, 4, datatype::of<std::int64_t>(), 0);
  const char* keys[4] = {"collective_buffering", "cb_nodes", "striping_unit", "cb_buffer_size"};
  for (int i = 0; i < 4; ++i) impl->hints.erase(keys[i]);
  if (steer[0] != 0) impl->hints.set("collective_buffering", steer[0] == 1 ? "true" : "false");
  for (int i = 1; i < 4; ++i) {
    if (steer[i] > 0) impl->hints.set(keys[i], std::to_string(steer[i]));
  }
  // The shared file pointer: a word in member 0's exposed memory.
  // Every member learns whether member 0 got it: a failure there is every member's error
  // (with the class member 0 saw), and the file member 0 created is removed.
  transport::backend& tp = transport::current(call);
  std::uint64_t word[2] = {0, 0};  // address, error class + 1 (0: allocated)
  std::string why;
  if (root) {
    try {
      if (detail::fail_shared_pointer_for_testing.exchange(false)) {
        detail::raise(error_class::no_mem, {.call = call}, "allocation failure forced by a test");
      }
      impl->shared_word = tp.allocate_segment(64, {.call = call});
      word[0] = impl->shared_word.address();
    } catch (const oneside::error& e) {
      word[1] = static_cast<std::uint64_t>(e.error_class()) + 1;
      why = std::string(": ") + e.what();
    }
  }
  broadcast(t, word, 2, datatype::of<std::uint64_t>(), 0);
  if (word[1] != 0) {
    if (root && created) ::unlink(impl->path.c_str());
    impl->fail(static_cast<error_class>(word[1] - 1), call,
               "member 0 cannot allocate the shared file pointer; the file is not open on any "
               "member" +
                   why);
  }
  impl->shared_addr = static_cast<std::uintptr_t>(word[0]);
  impl->shared_owner = t.to_world(0);
  if (has(mode, file_mode::append)) {
    struct stat st {};
    if (::fstat(impl->fd, &st) != 0) impl->fail_errno(call, "fstat", errno);
    impl->pointer = st.st_size;
    if (root) impl->shared_store(st.st_size, call);
  }
  barrier(t);  // the shared pointer is set before any member uses it
  return file(std::move(impl));
}

namespace {
void check_no_split(const file_impl& f, std::string_view call) {
  if (f.split) {
    f.fail(error_class::io, call,
           std::string("a split collective (") + split_name(f.split->kind) +
               "_begin) is active on this handle; no other collective call until its end "
               "[IO-11]");
  }
}
}  // namespace

void file::close() {
  file_impl& f = impl();
  check_no_split(f, "file::close");
  f.release();
  barrier(f.members);  // nobody uses the shared pointer or the file any more
  if (has(f.mode, file_mode::delete_on_close)) {
    if (f.members.rank() == 0) ::unlink(f.path.c_str());
    barrier(f.members);  // gone when close returns anywhere
  }
  impl_.reset();
}

void file::remove(std::string_view path, const info& hints) {
  (void)hints;
  constexpr std::string_view call = "file::remove";
  ONESIDE_CHECK(!path.empty(), error_class::bad_file, {.call = call}, "the path is empty");
  const std::string p(path);
  if (::unlink(p.c_str()) != 0) {
    const int err = errno;
    detail::raise(detail::file_error_class(err), {.call = call},
                  "file " + p + ": cannot delete: " + std::strerror(err));
  }
}

void file::set_size(offset_t bytes) {
  constexpr std::string_view call = "file::set_size";
  file_impl& f = impl();
  check_no_split(f, call);
  if (bytes < 0) f.fail(error_class::arg, call, "the size is negative");
  if (has(f.mode, file_mode::rdonly)) f.fail(error_class::read_only, call, "opened rdonly");
  // Every member's earlier accesses come first; the size is set when the call returns anywhere.
  barrier(f.members);
  int err = 0;
  if (f.members.rank() == 0 && ::ftruncate(f.fd, bytes) != 0) err = errno;
  err = broadcast(f.members, err, 0);
  if (err != 0) f.fail_errno(call, "ftruncate", err);
}

void file::preallocate(offset_t bytes) {
  constexpr std::string_view call = "file::preallocate";
  file_impl& f = impl();
  check_no_split(f, call);
  if (bytes < 0) f.fail(error_class::arg, call, "the size is negative");
  if (has(f.mode, file_mode::rdonly)) f.fail(error_class::read_only, call, "opened rdonly");
  barrier(f.members);
  int err = 0;
  if (f.members.rank() == 0 && bytes > 0) err = ::posix_fallocate(f.fd, 0, bytes);
  err = broadcast(f.members, err, 0);
  if (err != 0) f.fail_errno(call, "posix_fallocate", err);
}

offset_t file::get_size() const {
  const file_impl& f = impl();
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) f.fail_errno("file::get_size", "fstat", errno);
  return st.st_size;
}

void file::sync() {
  constexpr std::string_view call = "file::sync";
  file_impl& f = impl();
  check_no_split(f, call);
  const int err = ::fdatasync(f.fd) != 0 ? errno : 0;
  // Every member learns whether every member's data reached the device.
  const int worst = allreduce(f.members, err, op::max);
  if (worst != 0) f.fail_errno(call, err != 0 ? "fdatasync" : "fdatasync on another member", worst);
}

void file::set_atomicity(bool atomic) {
  constexpr std::string_view call = "file::set_atomicity";
  file_impl& f = impl();
  check_no_split(f, call);
  const int v = atomic ? 1 : 0;
  if (allreduce(f.members, v, op::min) != allreduce(f.members, v, op::max)) {
    f.fail(error_class::not_same, call, "the members passed different values");
  }
  std::lock_guard<std::mutex> g(f.mu);
  f.atomic = atomic;
}

bool file::get_atomicity() const {
  std::lock_guard<std::mutex> g(impl().mu);
  return impl().atomic;
}

info file::get_info() const {
  return impl().hints;
}
file_mode file::amode() const {
  return impl().mode;
}
const oneside::team& file::team() const {
  return impl().members;
}
void file::set_error_handler(errors policy) {
  impl().policy = policy;
}
file::errors file::error_handler() const {
  return impl().policy;
}

// ---- views and pointers ---------------------------------------------------------------

void file::set_view(offset_t disp, const datatype& etype, const datatype& filetype,
                    std::string_view datarep, const info& hints) {
  (void)hints;
  constexpr std::string_view call = "file::set_view";
  file_impl& f = impl();
  check_no_split(f, call);
  std::optional<detail::file_view> view;
  std::exception_ptr rejected;
  try {
    if (datarep != "native") {
      f.fail(error_class::unsupported_datarep, call,
             "only the \"native\" representation exists, not \"" + std::string(datarep) + "\"");
    }
    view.emplace(disp, etype, filetype, call);
  } catch (const oneside::error&) {
    rejected = std::current_exception();
  }
  // Every member keeps its old view when any member's arguments were rejected.
  if (!all_agree(f.members, rejected == nullptr)) {
    if (rejected) std::rethrow_exception(rejected);
    f.fail(error_class::io, call, "another member's view was rejected; the view is unchanged");
  }
  // Collective buffering's automatic choice (no collective_buffering hint): on when any
  // member's view interleaves small runs with holes, the same answer on every member.
  const int interleaved = allreduce(f.members, view->interleaved() ? 1 : 0, op::max);
  // Reads go through it when the members span nodes (each named by its lowest world rank) or
  // when any member finds the exchange the faster read on one node (cb_reads_on_one_node);
  // writes unless the members share one node and every member writes small pieces through
  // mappings of the file (mapped_writes_pay: tmpfs; a member whose view has larger runs keeps
  // collective buffering for all).
  bool reads_two_phase = false;
  bool writes_two_phase = true;
  if (interleaved != 0) {
    const rank_t node = local_team().to_world(0);
    const bool one_node =
        allreduce(f.members, node, op::max) == allreduce(f.members, node, op::min);
    reads_two_phase =
        !one_node || allreduce(f.members, detail::cb_reads_on_one_node() ? 1 : 0, op::max) != 0;
    const bool mapped = detail::mapped_writes_pay(f.fd) &&
                        view->contiguous_or_runs_at_most(detail::mapped_read_max_piece);
    writes_two_phase = !one_node || allreduce(f.members, mapped ? 1 : 0, op::min) == 0;
  }
  {
    std::lock_guard<std::mutex> g(f.mu);
    f.view = std::move(*view);
    f.view_interleaved = interleaved != 0;
    f.reads_two_phase = reads_two_phase;
    f.writes_two_phase = writes_two_phase;
    f.pointer = 0;
  }
  if (f.members.rank() == 0) f.shared_store(0, call);
  barrier(f.members);
}

offset_t file::view_disp() const {
  std::lock_guard<std::mutex> g(impl().mu);
  return impl().view.disp();
}
datatype file::view_etype() const {
  std::lock_guard<std::mutex> g(impl().mu);
  return impl().view.etype();
}
datatype file::view_filetype() const {
  std::lock_guard<std::mutex> g(impl().mu);
  return impl().view.filetype();
}

namespace {
// The view position (etypes) of the end of the file.
offset_t end_position(const file_impl& f, std::string_view call) {
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) f.fail_errno(call, "fstat", errno);
  return static_cast<offset_t>(f.view.data_before(st.st_size) / f.view.etype_size());
}
}  // namespace

void file::seek(offset_t offset, seek_from whence) {
  constexpr std::string_view call = "file::seek";
  file_impl& f = impl();
  std::lock_guard<std::mutex> g(f.mu);
  const offset_t base = whence == seek_from::set       ? 0
                        : whence == seek_from::current ? f.pointer
                                                       : end_position(f, call);
  if (base + offset < 0) f.fail(error_class::arg, call, "the position would be negative");
  f.pointer = base + offset;
}

offset_t file::get_position() const {
  std::lock_guard<std::mutex> g(impl().mu);
  return impl().pointer;
}

void file::seek_shared(offset_t offset, seek_from whence) {
  constexpr std::string_view call = "file::seek_shared";
  file_impl& f = impl();
  check_no_split(f, call);
  // Every member's earlier shared-pointer accesses come first (they all entered the call);
  // the new position is in effect when the call returns anywhere.
  barrier(f.members);
  offset_t next = -1;
  if (f.members.rank() == 0) {
    std::lock_guard<std::mutex> g(f.mu);
    const offset_t base = whence == seek_from::set       ? 0
                          : whence == seek_from::current ? f.shared_load(call)
                                                         : end_position(f, call);
    next = base + offset;
    if (next >= 0) f.shared_store(next, call);
  }
  next = broadcast(f.members, next, 0);
  if (next < 0) f.fail(error_class::arg, call, "the shared position would be negative");
}

offset_t file::get_position_shared() const {
  return impl().shared_load("file::get_position_shared");
}

offset_t file::get_byte_offset(offset_t offset) const {
  const file_impl& f = impl();
  if (offset < 0) f.fail(error_class::arg, "file::get_byte_offset", "the offset is negative");
  std::lock_guard<std::mutex> g(f.mu);
  return f.view.byte_of(static_cast<std::uint64_t>(offset) * f.view.etype_size());
}

// ---- data access ----------------------------------------------------------------------

namespace {

// Checks an access's arguments (R5: before anything moves). Returns its size in etypes.
offset_t check_access(const file_impl& f, std::string_view call, bool write, const void* buf,
                      count_t count, const datatype& type) {
  if (write && has(f.mode, file_mode::rdonly)) {
    f.fail(error_class::read_only, call, "the file was opened rdonly");
  }
  if (!write && has(f.mode, file_mode::wronly)) {
    f.fail(error_class::access, call, "the file was opened wronly");
  }
  if (count < 0) f.fail(error_class::count, call, "the count is negative");
  const std::size_t es = f.view.etype_size();
  if (type.size() % es != 0) {
    f.fail(error_class::type, call,
           "the datatype " + std::string(type.name()) + " (" + std::to_string(type.size()) +
               " bytes) is not a whole number of etypes of the view (" + std::to_string(es) +
               " bytes)");
  }
  if (buf == nullptr && count > 0 && type.size() > 0) {
    f.fail(error_class::arg, call, "the buffer is null");
  }
  return static_cast<offset_t>(static_cast<std::uint64_t>(count) * type.size() / es);
}

// Builds the op of an access of `count` elements of `type` at view position `pos` (etypes).
std::shared_ptr<file_op> make_op(const file_impl& f, std::string_view call, bool write,
                                 offset_t pos, const void* buf, count_t count,
                                 const datatype& type) {
  auto op = std::make_shared<file_op>();
  op->write = write;
  op->atomic = f.atomic;
  op->fd = f.fd;
  op->call = std::string(call);
  op->path = f.path;
  op->type = type;
  op->count = count;
  op->bytes = static_cast<std::uint64_t>(count) * type.size();
  f.view.pieces(static_cast<std::uint64_t>(pos) * f.view.etype_size(), op->bytes, op->pieces);
  if (type.is_contiguous()) {
    op->direct = static_cast<std::byte*>(const_cast<void*>(buf));
  } else {
    op->staging.resize(op->bytes);
    if (write) {
      detail::pack(type, count, buf, op->staging.data());
    } else {
      op->user = const_cast<void*>(buf);
    }
  }
  return op;
}

}  // namespace

// The common path of every independent access: check, take the position (moving the pointer
// it comes from), build the op.
static std::shared_ptr<file_op> start_access(file_impl& f, std::string_view call, bool write,
                                             position where, offset_t offset, const void* buf,
                                             count_t count, const datatype& type) {
  std::lock_guard<std::mutex> g(f.mu);
  const offset_t n = check_access(f, call, write, buf, count, type);
  offset_t pos = offset;
  if (where == position::explicit_offset) {
    if (offset < 0) f.fail(error_class::arg, call, "the offset is negative");
  } else if (where == position::individual) {
    pos = f.pointer;
    f.pointer += n;
  } else {
    pos = f.shared_fetch_add(n, call);
  }
  return make_op(f, call, write, pos, buf, count, type);
}

// Runs a blocking access on the calling thread, or staged with the I/O thread (staged.cpp).
static io_status finish_now(file_impl& f, file_op& op) {
  if (detail::stages(f, op)) return detail::run_staged(f, op);
  detail::run_file_op(op);
  if (op.error) std::rethrow_exception(op.error);
  return op.status;
}

io_status file::read_at(offset_t offset, void* buf, count_t count, const datatype& type) {
  return finish_now(impl(), *start_access(impl(), "file::read_at", false, position::explicit_offset,
                                          offset, buf, count, type));
}
io_status file::write_at(offset_t offset, const void* buf, count_t count, const datatype& type) {
  return finish_now(impl(), *start_access(impl(), "file::write_at", true, position::explicit_offset,
                                          offset, buf, count, type));
}
io_status file::read(void* buf, count_t count, const datatype& type) {
  return finish_now(impl(), *start_access(impl(), "file::read", false, position::individual, 0, buf,
                                          count, type));
}
io_status file::write(const void* buf, count_t count, const datatype& type) {
  return finish_now(impl(), *start_access(impl(), "file::write", true, position::individual, 0, buf,
                                          count, type));
}
io_status file::read_shared(void* buf, count_t count, const datatype& type) {
  return finish_now(impl(), *start_access(impl(), "file::read_shared", false, position::shared, 0,
                                          buf, count, type));
}
io_status file::write_shared(const void* buf, count_t count, const datatype& type) {
  return finish_now(impl(), *start_access(impl(), "file::write_shared", true, position::shared, 0,
                                          buf, count, type));
}

static file_request submit(file_impl& f, std::shared_ptr<file_op> op) {
  f.worker.submit(op);
  return file_impl::request_of(std::move(op));
}

file_request file::iread_at(offset_t offset, void* buf, count_t count, const datatype& type) {
  file_impl& f = impl();
  return submit(f, start_access(f, "file::iread_at", false, position::explicit_offset, offset, buf,
                                count, type));
}
file_request file::iwrite_at(offset_t offset, const void* buf, count_t count,
                             const datatype& type) {
  file_impl& f = impl();
  return submit(f, start_access(f, "file::iwrite_at", true, position::explicit_offset, offset, buf,
                                count, type));
}
file_request file::iread(void* buf, count_t count, const datatype& type) {
  file_impl& f = impl();
  return submit(f,
                start_access(f, "file::iread", false, position::individual, 0, buf, count, type));
}
file_request file::iwrite(const void* buf, count_t count, const datatype& type) {
  file_impl& f = impl();
  return submit(f,
                start_access(f, "file::iwrite", true, position::individual, 0, buf, count, type));
}
file_request file::iread_shared(void* buf, count_t count, const datatype& type) {
  file_impl& f = impl();
  return submit(
      f, start_access(f, "file::iread_shared", false, position::shared, 0, buf, count, type));
}
file_request file::iwrite_shared(const void* buf, count_t count, const datatype& type) {
  file_impl& f = impl();
  return submit(
      f, start_access(f, "file::iwrite_shared", true, position::shared, 0, buf, count, type));
}

// ---- collective and split collective access -------------------------------------------

namespace {

position position_of(split_kind k) {
  switch (k) {
    case split_kind::read_at_all:
    case split_kind::write_at_all:
      return position::explicit_offset;
    case split_kind::read_all:
    case split_kind::write_all:
      return position::individual;
    case split_kind::read_ordered:
    case split_kind::write_ordered:
      return position::shared;
  }
  return position::explicit_offset;
}

// Starts the collective access `k` (the begin of a split collective, or the first half of a
// blocking one): checks (IO-5/IO-11: no split collective active on the handle), takes the
// position and moves the pointer it comes from (IO-13), and builds the op. The _ordered forms
// learn every member's count (an allgather, which IO-8 lets a begin wait for) and check the
// members' views are the same (IO-15); when any member's arguments are rejected, every member
// raises and nothing moves.
// A collective access begun: the access itself, or collective buffering's state.
struct collective_access {
  std::shared_ptr<file_op> op;
  std::shared_ptr<detail::two_phase> tp;
};

collective_access start_collective(file_impl& f, std::string_view call, split_kind k,
                                   offset_t offset, const void* buf, count_t count,
                                   const datatype& type) {
  const bool write = is_write(k);
  const position where = position_of(k);
  std::unique_lock<std::mutex> g(f.mu);
  if (where != position::shared && !detail::uses_two_phase(f, write)) {
    check_no_split(f, call);
    const offset_t n = check_access(f, call, write, buf, count, type);
    offset_t pos = offset;
    if (where == position::explicit_offset) {
      if (offset < 0) f.fail(error_class::arg, call, "the offset is negative");
    } else {
      pos = f.pointer;
      f.pointer += n;
    }
    return {make_op(f, call, write, pos, buf, count, type), nullptr};
  }
  if (where != position::shared) {
    // Collective buffering: the members agree first (a member that raised alone would leave
    // the others in the exchange), then exchange their pieces.
    std::exception_ptr rejected;
    offset_t n = 0;
    try {
      check_no_split(f, call);
      n = check_access(f, call, write, buf, count, type);
      if (where == position::explicit_offset && offset < 0) {
        f.fail(error_class::arg, call, "the offset is negative");
      }
    } catch (const oneside::error&) {
      rejected = std::current_exception();
    }
    g.unlock();
    const bool agreed = all_agree(f.members, rejected == nullptr);
    g.lock();
    if (rejected) std::rethrow_exception(rejected);
    if (!agreed) f.fail(error_class::io, call, "another member's call was rejected");
    offset_t pos = offset;
    if (where == position::individual) {
      pos = f.pointer;
      f.pointer += n;
    }
    std::shared_ptr<file_op> mine = make_op(f, call, write, pos, buf, count, type);
    g.unlock();
    return {nullptr, detail::two_phase_begin(f, *mine)};
  }
  // _ordered: agree first, then take consecutive regions of the shared pointer in rank order.
  std::exception_ptr rejected;
  offset_t n = 0;
  try {
    check_no_split(f, call);
    n = check_access(f, call, write, buf, count, type);
  } catch (const oneside::error&) {
    rejected = std::current_exception();
  }
  const std::int64_t mine[3] = {rejected ? -1 : n, static_cast<std::int64_t>(f.view.signature()),
                                0};
  std::vector<std::int64_t> all(static_cast<std::size_t>(3 * f.members.size()));
  allgather(f.members, mine, 3, datatype::of<std::int64_t>(), all.data());
  const rank_t me = f.members.rank();
  bool any_rejected = false;
  bool same_view = true;
  offset_t before = 0;
  offset_t total = 0;
  for (rank_t r = 0; r < f.members.size(); ++r) {
    const std::int64_t nr = all[static_cast<std::size_t>(3 * r)];
    any_rejected = any_rejected || nr < 0;
    same_view = same_view && all[static_cast<std::size_t>(3 * r + 1)] == all[1];
    if (nr > 0 && r < me) before += nr;
    if (nr > 0) total += nr;
  }
  if (rejected) std::rethrow_exception(rejected);
  if (any_rejected) f.fail(error_class::io, call, "another member's call was rejected");
  if (!same_view) {
    f.fail(error_class::not_same, call,
           "the members' views differ; the shared file pointer needs the same view everywhere "
           "[IO-15]");
  }
  offset_t base = 0;
  if (me == 0) base = f.shared_fetch_add(total, call);
  g.unlock();  // the broadcast waits for member 0; independent calls of other threads go on
  base = broadcast(f.members, base, 0);
  g.lock();
  return {make_op(f, call, write, base + before, buf, count, type), nullptr};
}

}  // namespace

static io_status collective(file_impl& f, std::string_view call, split_kind k, offset_t offset,
                            const void* buf, count_t count, const datatype& type) {
  collective_access a = start_collective(f, call, k, offset, buf, count, type);
  if (a.tp) return detail::two_phase_end(f, *a.tp);
  return finish_now(f, *a.op);
}

io_status file::read_at_all(offset_t offset, void* buf, count_t count, const datatype& type) {
  return collective(impl(), "file::read_at_all", split_kind::read_at_all, offset, buf, count, type);
}
io_status file::write_at_all(offset_t offset, const void* buf, count_t count,
                             const datatype& type) {
  return collective(impl(), "file::write_at_all", split_kind::write_at_all, offset, buf, count,
                    type);
}
io_status file::read_all(void* buf, count_t count, const datatype& type) {
  return collective(impl(), "file::read_all", split_kind::read_all, 0, buf, count, type);
}
io_status file::write_all(const void* buf, count_t count, const datatype& type) {
  return collective(impl(), "file::write_all", split_kind::write_all, 0, buf, count, type);
}
io_status file::read_ordered(void* buf, count_t count, const datatype& type) {
  return collective(impl(), "file::read_ordered", split_kind::read_ordered, 0, buf, count, type);
}
io_status file::write_ordered(const void* buf, count_t count, const datatype& type) {
  return collective(impl(), "file::write_ordered", split_kind::write_ordered, 0, buf, count, type);
}

static void split_begin(file_impl& f, std::string_view call, split_kind k, offset_t offset,
                        const void* buf, count_t count, const datatype& type) {
  collective_access a = start_collective(f, call, k, offset, buf, count, type);
  {
    std::lock_guard<std::mutex> g(f.mu);
    f.split = file_impl::split_state{k, buf, std::this_thread::get_id(), a.op, a.tp};
  }
  if (a.op) f.worker.submit(std::move(a.op));
}

static io_status split_end(file_impl& f, std::string_view call, split_kind k, const void* buf) {
  std::shared_ptr<file_op> op;
  std::shared_ptr<detail::two_phase> tp;
  {
    std::lock_guard<std::mutex> g(f.mu);
    if (!f.split) {
      f.fail(error_class::io, call,
             std::string("no split collective is active: ") + split_name(k) +
                 "_end needs a matching " + split_name(k) + "_begin [IO-7]");
    }
    if (f.split->kind != k) {
      f.fail(error_class::io, call,
             std::string("the active split collective is ") + split_name(f.split->kind) +
                 "_begin; it ends with " + split_name(f.split->kind) + "_end [IO-7]");
    }
    if (f.split->thread != std::this_thread::get_id()) {
      f.fail(error_class::io, call,
             "the split collective began on another thread; begin and end must be called by "
             "the same thread [IO-12]");
    }
    if (f.split->buf != buf) {
      f.fail(error_class::arg, call, "the buffer is not the one given to the begin call [IO-10]");
    }
    op = f.split->op;
    tp = f.split->tp;
  }
  if (tp) {
    // Collective buffering's end is collective: the split is over whatever it raises.
    struct clear {
      file_impl& f;
      ~clear() {
        std::lock_guard<std::mutex> g(f.mu);
        f.split.reset();
      }
    } done{f};
    return detail::two_phase_end(f, *tp);
  }
  {
    detail::wait_scope scope("file split collective end");
    file_op* p = op.get();
    detail::wait_until([p] { return p->done.load(std::memory_order_acquire); });
  }
  {
    std::lock_guard<std::mutex> g(f.mu);
    f.split.reset();
  }
  if (op->error) std::rethrow_exception(op->error);
  return op->status;
}

bool file::split_test() const {
  const file_impl& f = impl();
  std::lock_guard<std::mutex> g(f.mu);
  if (!f.split) f.fail(error_class::io, "file::split_test", "no split collective is active");
  // Collective buffering ran its exchange rounds in begin; what is left is this member's file
  // accesses as an aggregator (its end then only agrees on errors with the others).
  if (f.split->tp) {
    for (const std::shared_ptr<file_op>& p : f.split->tp->pending) {
      if (!p->done.load(std::memory_order_acquire)) return false;
    }
    return true;
  }
  const std::shared_ptr<file_op>& op = f.split->op;
  return op == nullptr || op->done.load(std::memory_order_acquire);
}

void file::read_at_all_begin(offset_t offset, void* buf, count_t count, const datatype& type) {
  split_begin(impl(), "file::read_at_all_begin", split_kind::read_at_all, offset, buf, count, type);
}
io_status file::read_at_all_end(void* buf) {
  return split_end(impl(), "file::read_at_all_end", split_kind::read_at_all, buf);
}
void file::write_at_all_begin(offset_t offset, const void* buf, count_t count,
                              const datatype& type) {
  split_begin(impl(), "file::write_at_all_begin", split_kind::write_at_all, offset, buf, count,
              type);
}
io_status file::write_at_all_end(const void* buf) {
  return split_end(impl(), "file::write_at_all_end", split_kind::write_at_all, buf);
}
void file::read_all_begin(void* buf, count_t count, const datatype& type) {
  split_begin(impl(), "file::read_all_begin", split_kind::read_all, 0, buf, count, type);
}
io_status file::read_all_end(void* buf) {
  return split_end(impl(), "file::read_all_end", split_kind::read_all, buf);
}
void file::write_all_begin(const void* buf, count_t count, const datatype& type) {
  split_begin(impl(), "file::write_all_begin", split_kind::write_all, 0, buf, count, type);
}
io_status file::write_all_end(const void* buf) {
  return split_end(impl(), "file::write_all_end", split_kind::write_all, buf);
}
void file::read_ordered_begin(void* buf, count_t count, const datatype& type) {
  split_begin(impl(), "file::read_ordered_begin", split_kind::read_ordered, 0, buf, count, type);
}
io_status file::read_ordered_end(void* buf) {
  return split_end(impl(), "file::read_ordered_end", split_kind::read_ordered, buf);
}
void file::write_ordered_begin(const void* buf, count_t count, const datatype& type) {
  split_begin(impl(), "file::write_ordered_begin", split_kind::write_ordered, 0, buf, count, type);
}
io_status file::write_ordered_end(const void* buf) {
  return split_end(impl(), "file::write_ordered_end", split_kind::write_ordered, buf);
}

}  // namespace oneside
