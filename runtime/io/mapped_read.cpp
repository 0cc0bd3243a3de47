// Reads of many small pieces copied out of read-only mappings of the file (see file_impl.hpp).
#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "io/file_impl.hpp"
#include "runtime/settings.hpp"

namespace oneside::detail {

std::atomic<std::int64_t> mapped_reads_for_testing{0};
std::atomic<void (*)(int fd)> mapped_read_hook_for_testing{nullptr};
std::atomic<std::int64_t> mapped_read_faults_for_testing{0};
std::atomic<bool> mapped_reads_on_any_fs_for_testing{false};

namespace {

// Bytes of the file one mapping covers (a piece larger than that gets a mapping of its own).
// Measured on 2 ranks reading 4 KiB blocks of 1 GiB: 4-16 MiB windows equally fast, 256 MiB
// and the whole file 10 % slower (their page tables).
constexpr std::size_t window_bytes = std::size_t{8} << 20;

// A copy out of a mapping: a SIGBUS inside [lo, hi) (the file shrank under the mapping, another
// process truncated it) jumps back to where the copy started instead of ending the process.
struct guarded_copy {
  sigjmp_buf env;
  std::uintptr_t lo;
  std::uintptr_t hi;
};
// Volatile: the compiler must not drop the stores around a memcpy it knows does not read it.
thread_local guarded_copy* volatile t_guard [[gnu::tls_model("initial-exec")]] = nullptr;
struct sigaction g_previous {};

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const guarded_copy* g = t_guard;
  const auto at = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (g != nullptr && at >= g->lo && at < g->hi) siglongjmp(t_guard->env, 1);
  // Not a guarded copy's fault: what the program had before.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    // The fault repeats on return and ends the process, as it would have without us.
    (void)::signal(SIGBUS, SIG_DFL);
  }
}

// Installs the handler once (SA_NODEFER: a jump out of it leaves SIGBUS unblocked, so the jump
// needs no signal mask saved, which would cost a system call per copy).
bool guard_installed() noexcept {
  static const bool installed = [] {
    struct sigaction a {};
    a.sa_sigaction = on_sigbus;
    a.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&a.sa_mask);
    return ::sigaction(SIGBUS, &a, &g_previous) == 0;
  }();
  return installed;
}

// Where a copy stands, in memory a jump back finds it in.
struct progress {
  volatile std::size_t next;    // the first piece not copied
  volatile std::uint64_t done;  // data bytes copied
};

// Copies the pieces from pr.next on that lie inside [lo, hi) of the file, mapped at `m`, and
// before `size` (the end of the file: the rest of its last page reads as zeros) to `data` as
// move_pieces() places them. False when the mapping faulted (the file shrank).
bool copy_window(const file_op& op, std::byte* data, const std::byte* m, offset_t lo, offset_t hi,
                 offset_t size, progress& pr) {
  guarded_copy g{};
  g.lo = reinterpret_cast<std::uintptr_t>(m);
  g.hi = g.lo + static_cast<std::uintptr_t>(hi - lo);
  if (sigsetjmp(g.env, 0) != 0) {
    t_guard = nullptr;
    mapped_read_faults_for_testing.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  t_guard = &g;
  while (pr.next < op.pieces.size()) {
    const file_piece& p = op.pieces[pr.next];
    if (p.at < lo || p.at + static_cast<offset_t>(p.len) > std::min(hi, size)) break;
    const std::uint64_t to =
        op.mapped_base >= 0 ? static_cast<std::uint64_t>(p.at - op.mapped_base) : pr.done;
    std::memcpy(data + to, m + (p.at - lo), p.len);
    pr.done = to + p.len;
    pr.next = pr.next + 1;
  }
  t_guard = nullptr;
  return true;
}

}  // namespace

bool reads_mapped(const file_op& op) {
  static const bool enabled = setting_bool("ONESIDE_IO_MAPPED_READS");
  return enabled && !op.write && op.pieces.size() >= mapped_read_min_pieces &&
         op.bytes <= op.pieces.size() * mapped_read_max_piece;
}

unsigned long file_system_of(int fd) noexcept {
  struct statfs fs {};
  return ::fstatfs(fd, &fs) == 0 ? static_cast<unsigned long>(fs.f_type) : 0;
}

// Local disk file systems whose page cache a fault maps many pages of at once (large folios
// and fault-around). On tmpfs a mapped read of 4 KiB pieces measured 0.95x (2 ranks) and 0.85x
// (4 ranks on 2 cores) a pread each.
bool maps_well(int fd) noexcept {
  switch (file_system_of(fd)) {
    case 0xEF53UL:      // ext2/3/4
    case 0x58465342UL:  // XFS
    case 0x9123683EUL:  // Btrfs
      return true;
    default:
      return false;
  }
}

bool mapped_reads_pay(int fd) noexcept {
  return maps_well(fd) && kernel_entry_ns() < kernel_entry_costly_ns;
}

std::size_t read_mapped(file_op& op, std::byte* data, std::uint64_t& done) {
  struct stat st {};
  if (!(mapped_reads_pay(op.fd) || mapped_reads_on_any_fs_for_testing.load()) ||
      !guard_installed() || ::fstat(op.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return 0;
  }
  const auto page = static_cast<offset_t>(::sysconf(_SC_PAGESIZE));
  const offset_t size = st.st_size;
  const offset_t end = (size + page - 1) / page * page;
  progress pr{0, done};
  mapped_reads_for_testing.fetch_add(1, std::memory_order_relaxed);
  while (pr.next < op.pieces.size()) {
    const file_piece& p = op.pieces[pr.next];
    const offset_t piece_end = p.at + static_cast<offset_t>(p.len);
    if (piece_end > size) break;  // up to the end of the file: pread says how much there is
    if (p.len == 0) {
      if (op.mapped_base >= 0) pr.done = static_cast<std::uint64_t>(p.at - op.mapped_base);
      pr.next = pr.next + 1;
      continue;
    }
    const offset_t lo = p.at / page * page;
    const offset_t hi = std::min(end, std::max(lo + static_cast<offset_t>(window_bytes),
                                               (piece_end + page - 1) / page * page));
    void* m = ::mmap(nullptr, static_cast<std::size_t>(hi - lo), PROT_READ, MAP_SHARED, op.fd, lo);
    if (m == MAP_FAILED) break;  // a file system without mappings: pread
    if (auto* hook = mapped_read_hook_for_testing.load(); hook != nullptr) hook(op.fd);
    const bool whole = copy_window(op, data, static_cast<const std::byte*>(m), lo, hi, size, pr);
    ::munmap(m, static_cast<std::size_t>(hi - lo));
    if (!whole) break;
  }
  done = pr.done;
  return pr.next;
}

}  // namespace oneside::detail
