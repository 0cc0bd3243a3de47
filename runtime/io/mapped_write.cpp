// Writes of many small pieces moved into the page cache through a mapping of the file (see
// file_impl.hpp).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <vector>

#include "io/file_impl.hpp"
#include "runtime/settings.hpp"

namespace oneside::detail {

std::atomic<std::int64_t> mapped_writes_for_testing{0};
std::atomic<void (*)(int fd)> mapped_write_hook_for_testing{nullptr};

namespace {

// Bytes of the file one mapping covers (a piece larger than that gets a mapping of its own);
// the page tables of what was written are freed with each window. 2 and 4 ranks writing their
// 4 KiB blocks of 1 GiB on tmpfs: 1 GiB windows 1.1-1.3x faster than 64 MiB ones, 1.2-1.6x
// faster than 4 MiB ones (fewer mappings made and torn down).
constexpr std::size_t window_bytes = std::size_t{1} << 30;
// iovecs per process_vm_writev (the kernel's limit, IOV_MAX).
constexpr std::size_t max_iov = 1024;

// Whether this process may move memory into itself with process_vm_writev (a seccomp filter
// or an old kernel may refuse it).
bool cma_to_self_works() noexcept {
  static const bool works = [] {
    char from = 1;
    char to = 0;
    iovec local{&from, 1};
    iovec remote{&to, 1};
    return ::process_vm_writev(::getpid(), &local, 1, &remote, 1, 0) == 1 && to == 1;
  }();
  return works;
}

bool enabled() {
  static const bool on = setting_bool("ONESIDE_IO_MAPPED_WRITES");
  return on;
}

}  // namespace

bool writes_mapped(const file_op& op) {
  return enabled() && op.write && !op.atomic && op.pieces.size() >= mapped_read_min_pieces &&
         op.bytes <= op.pieces.size() * mapped_read_max_piece;
}

bool mapped_writes_pay(int fd) noexcept {
  // A shared writable mapping needs a descriptor open for reading and writing.
  return enabled() && fd >= 0 && (::fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR &&
         file_system_of(fd) == tmpfs_magic && cma_to_self_works();
}

std::size_t write_mapped(file_op& op, const std::byte* data, std::uint64_t& done) {
  struct stat st {};
  if (!mapped_writes_pay(op.fd) || ::fstat(op.fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  offset_t end = 0;
  for (const file_piece& p : op.pieces) end = std::max(end, p.at + static_cast<offset_t>(p.len));
  // The file reaches the end of the last piece before anything is mapped: a mapping past the
  // end of a file cannot be written. Allocating the last byte extends the file without ever
  // shrinking it (another member may be extending it further at the same time).
  if (end > st.st_size && ::fallocate(op.fd, 0, end - 1, 1) != 0) return 0;
  const auto page = static_cast<offset_t>(::sysconf(_SC_PAGESIZE));
  const pid_t self = ::getpid();
  std::vector<iovec> local;
  std::vector<iovec> remote;
  local.reserve(max_iov);
  remote.reserve(max_iov);
  std::size_t next = 0;
  std::uint64_t at = done;  // where piece `next`'s data is
  mapped_writes_for_testing.fetch_add(1, std::memory_order_relaxed);
  bool failed = false;
  while (next < op.pieces.size() && !failed) {
    const file_piece& first = op.pieces[next];
    if (first.len == 0) {
      if (op.mapped_base >= 0) at = static_cast<std::uint64_t>(first.at - op.mapped_base);
      ++next;
      continue;
    }
    const offset_t lo = first.at / page * page;
    const offset_t first_end = first.at + static_cast<offset_t>(first.len);
    const offset_t hi =
        std::max(lo + static_cast<offset_t>(window_bytes), (first_end + page - 1) / page * page);
    void* m = ::mmap(nullptr, static_cast<std::size_t>(hi - lo), PROT_READ | PROT_WRITE, MAP_SHARED,
                     op.fd, lo);
    if (m == MAP_FAILED) break;  // a file that cannot be mapped: pwrite
    if (auto* hook = mapped_write_hook_for_testing.load(); hook != nullptr) hook(op.fd);
    auto* base = static_cast<std::byte*>(m);
    // The pieces inside this window, a batch of iovecs at a time; a batch the kernel cut short
    // (the file shrank under the mapping, no space for a page) ends the mapped part at the
    // first piece it did not finish.
    while (next < op.pieces.size() && !failed) {
      local.clear();
      remote.clear();
      std::size_t last = next;
      std::uint64_t cursor = at;
      std::size_t batch_bytes = 0;
      while (last < op.pieces.size() && local.size() < max_iov) {
        const file_piece& p = op.pieces[last];
        if (p.at < lo || p.at + static_cast<offset_t>(p.len) > hi) break;
        if (op.mapped_base >= 0) cursor = static_cast<std::uint64_t>(p.at - op.mapped_base);
        if (p.len > 0) {
          local.push_back({const_cast<std::byte*>(data + cursor), p.len});
          remote.push_back({base + (p.at - lo), p.len});
          batch_bytes += p.len;
        }
        cursor += p.len;
        ++last;
      }
      if (last == next) break;  // the next piece lies outside this window
      const ssize_t n = local.empty() ? 0
                                      : ::process_vm_writev(self, local.data(), local.size(),
                                                            remote.data(), remote.size(), 0);
      if (n == static_cast<ssize_t>(batch_bytes)) {
        next = last;
        at = cursor;
        continue;
      }
      // Keep the pieces written whole; the rest go by pwrite.
      std::size_t moved = n > 0 ? static_cast<std::size_t>(n) : 0;
      while (next < last) {
        const file_piece& p = op.pieces[next];
        if (op.mapped_base >= 0) at = static_cast<std::uint64_t>(p.at - op.mapped_base);
        if (p.len > moved) break;
        moved -= p.len;
        at += p.len;
        ++next;
      }
      failed = true;
    }
    ::munmap(m, static_cast<std::size_t>(hi - lo));
  }
  // A write through a mapping of tmpfs leaves the times as they were; a write sets them.
  if (next > 0) (void)::futimens(op.fd, nullptr);
  if (next < op.pieces.size() && op.mapped_base >= 0) {
    at = static_cast<std::uint64_t>(op.pieces[next].at - op.mapped_base);
  }
  done = at;
  return next;
}

}  // namespace oneside::detail
