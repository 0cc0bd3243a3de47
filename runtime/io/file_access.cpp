// How an access moves bytes: pread/pwrite over the pieces of the file it touches (under a POSIX
// record lock in atomic mode), the user's memory walked through the datatype engine's runs,
// and the file's I/O thread that runs nonblocking and split accesses.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include <oneside/runtime/wait.hpp>

#if ONESIDE_HAVE_LIBURING
#include <liburing.h>
#endif

#include "io/file_impl.hpp"
#include "runtime/check.hpp"
#include "runtime/layout.hpp"
#include "runtime/settings.hpp"
#include "topology/binding.hpp"

namespace oneside::detail {

error_class file_error_class(int err) noexcept {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return error_class::no_such_file;
    case EEXIST:
      return error_class::file_exists;
    case EACCES:
    case EPERM:
      return error_class::access;
    case EROFS:
    case ETXTBSY:
      return error_class::read_only;
    case ENOSPC:
    case EFBIG:
      return error_class::no_space;
    case EDQUOT:
      return error_class::quota;
    case ENAMETOOLONG:
    case EISDIR:
      return error_class::bad_file;
    default:
      return error_class::io;
  }
}

namespace {

// Holds an open-file-description record lock over [lo, hi) (atomic mode, IO-3): exclusive for
// writes, shared for reads, against every other handle of the file in any process.
class range_lock {
 public:
  range_lock(int fd, offset_t lo, offset_t hi, bool exclusive) : fd_(fd), lo_(lo), len_(hi - lo) {
    struct flock l {};
    l.l_type = exclusive ? F_WRLCK : F_RDLCK;
    l.l_whence = SEEK_SET;
    l.l_start = lo_;
    l.l_len = len_;
    while (fcntl(fd_, F_OFD_SETLKW, &l) != 0) {
      if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "fcntl");
    }
  }
  ~range_lock() {
    struct flock l {};
    l.l_type = F_UNLCK;
    l.l_whence = SEEK_SET;
    l.l_start = lo_;
    l.l_len = len_;
    (void)fcntl(fd_, F_OFD_SETLK, &l);
  }
  range_lock(const range_lock&) = delete;
  range_lock& operator=(const range_lock&) = delete;

 private:
  int fd_;
  offset_t lo_;
  offset_t len_;
};

// Writes all of [p, p + len) at `at`; returns 0 or errno.
int write_fully(int fd, const std::byte* p, std::size_t len, offset_t at) {
  while (len > 0) {
    const ssize_t n = ::pwrite(fd, p, len, at);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    len -= static_cast<std::size_t>(n);
    at += n;
  }
  return 0;
}

// Reads up to len bytes at `at`; stops at the end of the file. Returns bytes read, or -errno.
ssize_t read_fully(int fd, std::byte* p, std::size_t len, offset_t at) {
  std::size_t got = 0;
  while (got < len) {
    const ssize_t n = ::pread(fd, p + got, len - got, at + static_cast<offset_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace

void unpack_prefix(const datatype& type, count_t count, const std::byte* src, std::size_t n,
                   void* dst) {
  auto* out = static_cast<std::byte*>(dst);
  for_each_byte_run(type, count, [&](std::ptrdiff_t off, std::size_t len) {
    const std::size_t take = std::min(len, n);
    if (take == 0) return;
    std::memcpy(out + off, src, take);
    src += take;
    n -= take;
  });
}

io_status make_status(const datatype& type, std::uint64_t bytes) {
  io_status s;
  s.bytes = static_cast<count_t>(bytes);
  if (type.size() == 0) return s;
  s.count = static_cast<count_t>(bytes / type.size());
  if (!type.is_mixed()) {
    const std::size_t b = basic_type_size(type.basic());
    s.elements = b == 0 ? 0 : static_cast<count_t>(bytes / b);
  } else {
    // A mixed type's partial element is not split into basic elements.
    s.elements = s.count * static_cast<count_t>(type.basic_count());
  }
  return s;
}

namespace {

// Moves op's pieces from `first` on with one pread/pwrite each on the calling thread. Returns
// 0 or errno; `done` counts the data bytes moved (a read stops at the end of the file).
int move_pieces(file_op& op, std::byte* data, std::uint64_t& done, std::size_t first = 0) {
  for (std::size_t i = first; i < op.pieces.size(); ++i) {
    const file_piece& p = op.pieces[i];
    if (op.mapped_base >= 0) done = static_cast<std::uint64_t>(p.at - op.mapped_base);
    if (op.write) {
      const int err = write_fully(op.fd, data + done, p.len, p.at);
      if (err != 0) return err;
      done += p.len;
    } else {
      const ssize_t n = read_fully(op.fd, data + done, p.len, p.at);
      if (n < 0) return static_cast<int>(-n);
      done += static_cast<std::uint64_t>(n);
      if (static_cast<std::size_t>(n) < p.len) break;  // the end of the file (IO-14)
    }
  }
  return 0;
}

#if ONESIDE_HAVE_LIBURING
// The I/O thread's io_uring (ONESIDE_IO_ENGINE=uring): an access's pieces are submitted as
// one batch of SQEs per io_uring_enter instead of one system call each, up to `depth` in
// flight; a piece the kernel completed short is finished with pread/pwrite.
struct io_ring {
  static constexpr unsigned depth = 256;
  io_uring ring{};
  bool ok = false;
  io_ring() { ok = io_uring_queue_init(depth, &ring, 0) == 0; }
  ~io_ring() {
    if (ok) io_uring_queue_exit(&ring);
  }
  io_ring(const io_ring&) = delete;
  io_ring& operator=(const io_ring&) = delete;

  int move(file_op& op, std::byte* data, std::uint64_t& done) {
    const std::size_t n = op.pieces.size();
    std::vector<std::uint64_t> src(n);  // where piece i's data is
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (op.mapped_base >= 0) at = static_cast<std::uint64_t>(op.pieces[i].at - op.mapped_base);
      src[i] = at;
      at += op.pieces[i].len;
    }
    std::vector<std::int64_t> res(n, 0);
    std::size_t next = 0;
    unsigned in_flight = 0;
    int failed = 0;
    while (next < n || in_flight > 0) {
      while (next < n && in_flight < depth) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        if (sqe == nullptr) break;
        const file_piece& p = op.pieces[next];
        // A piece over 2 GiB is left to the synchronous fix-up below (res 0: nothing done).
        const auto len = static_cast<unsigned>(std::min<std::size_t>(p.len, 1U << 30));
        if (op.write) {
          io_uring_prep_write(sqe, op.fd, data + src[next], len, static_cast<__u64>(p.at));
        } else {
          io_uring_prep_read(sqe, op.fd, data + src[next], len, static_cast<__u64>(p.at));
        }
        io_uring_sqe_set_data64(sqe, next);
        ++next;
        ++in_flight;
      }
      const int rc = io_uring_submit_and_wait(&ring, 1);
      if (rc < 0 && rc != -EINTR) {
        failed = -rc;
        break;
      }
      io_uring_cqe* cqe = nullptr;
      while (in_flight > 0 && io_uring_peek_cqe(&ring, &cqe) == 0 && cqe != nullptr) {
        res[io_uring_cqe_get_data64(cqe)] = cqe->res;
        io_uring_cqe_seen(&ring, cqe);
        --in_flight;
      }
    }
    if (failed != 0) {  // drain what is in flight before the buffers go
      while (in_flight > 0) {
        io_uring_cqe* cqe = nullptr;
        if (io_uring_wait_cqe(&ring, &cqe) != 0) break;
        io_uring_cqe_seen(&ring, cqe);
        --in_flight;
      }
      return failed;
    }
    // In view order: errors, short pieces finished synchronously, reads up to the end of file.
    for (std::size_t i = 0; i < n; ++i) {
      const file_piece& p = op.pieces[i];
      if (res[i] < 0 && res[i] != -EAGAIN && res[i] != -EINTR) return static_cast<int>(-res[i]);
      const std::size_t got = res[i] < 0 ? 0 : static_cast<std::size_t>(res[i]);
      if (op.mapped_base >= 0) done = src[i];
      if (op.write) {
        if (got < p.len) {
          const int err = write_fully(op.fd, data + src[i] + got, p.len - got,
                                      p.at + static_cast<offset_t>(got));
          if (err != 0) return err;
        }
        done += p.len;
      } else {
        std::size_t total = got;
        if (got < p.len) {
          const ssize_t more = read_fully(op.fd, data + src[i] + got, p.len - got,
                                          p.at + static_cast<offset_t>(got));
          if (more < 0) return static_cast<int>(-more);
          total += static_cast<std::size_t>(more);
        }
        done += total;
        if (total < p.len) break;  // the end of the file (IO-14)
      }
    }
    return 0;
  }
};
#else
struct io_ring {
  bool ok = false;
  int move(file_op&, std::byte*, std::uint64_t&) { return ENOSYS; }
};
#endif

void run_file_op(file_op& op, io_ring* ring) noexcept {
  try {
    std::byte* data = op.direct != nullptr ? op.direct : op.staging.data();
    std::optional<range_lock> lock;
    if (op.atomic && !op.pieces.empty()) {
      offset_t lo = op.pieces.front().at;
      offset_t hi = lo;
      for (const file_piece& p : op.pieces) {
        lo = std::min(lo, p.at);
        hi = std::max(hi, p.at + static_cast<offset_t>(p.len));
      }
      lock.emplace(op.fd, lo, hi, op.write);
    }
    std::uint64_t done = 0;
    // Reads of many small pieces out of mappings where the file system gains from it, writes
    // of them into mappings on tmpfs; the rest as before (what the mappings left, the end of
    // the file or a file that shrank, by pread or pwrite).
    const std::size_t mapped = reads_mapped(op)    ? read_mapped(op, data, done)
                               : writes_mapped(op) ? write_mapped(op, data, done)
                                                   : 0;
    int err = 0;
    if (mapped > 0) {
      if (mapped < op.pieces.size()) err = move_pieces(op, data, done, mapped);
    } else if (ring != nullptr && ring->ok && op.pieces.size() > 1) {
      // One piece gains nothing from the ring: a plain system call is one entry too.
      err = ring->move(op, data, done);
    } else {
      err = move_pieces(op, data, done);
    }
    if (err != 0) {
      raise(file_error_class(err), {.call = op.call, .bytes = op.bytes},
            std::string(op.write ? "writing " : "reading ") + op.path + ": " + std::strerror(err));
    }
    if (!op.write && op.direct == nullptr) {
      unpack_prefix(op.type, op.count, op.staging.data(), done, op.user);
    }
    op.status = make_status(op.type, done);
  } catch (const oneside::error&) {
    op.error = std::current_exception();
  } catch (const std::exception& e) {
    op.error = std::make_exception_ptr(
        error(error_class::io, format_error(error_class::io, {.call = op.call}, e.what())));
  }
  op.done.store(true, std::memory_order_release);
  notify(process_doorbell());
}

}  // namespace

void run_file_op(file_op& op) noexcept {
  run_file_op(op, nullptr);
}

std::atomic<int> io_engine_for_testing{0};

io_worker::~io_worker() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void io_worker::submit(std::shared_ptr<file_op> op) {
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> g(mu_);
    queue_.push_back(std::move(op));
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  cv_.notify_one();
}

void io_worker::drain() {
  wait_until([this] { return outstanding_.load(std::memory_order_acquire) == 0; });
}

void io_worker::loop() {
  mark_runtime_thread();
  // The thread mostly waits on the kernel's copies: on a PU no rank computes on, when the
  // launcher left some (ONESIDE_SPARE_PUS), a split collective's data moves while its rank
  // computes; otherwise it shares the rank's binding.
  (void)move_to_spare_pus();
  // ONESIDE_IO_ENGINE=uring: this thread submits each access's pieces through an io_uring.
  std::optional<io_ring> ring;
  const int forced = io_engine_for_testing.load();
  if (forced == 2 || (forced == 0 && setting_string("ONESIDE_IO_ENGINE") == "uring")) {
    ring.emplace();
    if (!ring->ok) ring.reset();  // no liburing, or the kernel refused: one call per piece
  }
  ring_.store(ring.has_value(), std::memory_order_release);
  for (;;) {
    std::shared_ptr<file_op> op;
    {
      std::unique_lock<std::mutex> g(mu_);
      cv_.wait(g, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything ran
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    run_file_op(*op, ring ? &*ring : nullptr);
    outstanding_.fetch_sub(1, std::memory_order_release);
    notify(process_doorbell());
  }
}

}  // namespace oneside::detail
