// Moving pages between private and shared memory in place (see page_move.hpp).
#include "transport/shm/page_move.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <mutex>
#include <pthread.h>
#include <string_view>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

namespace oneside::transport::shm_detail {
namespace {

// mmap and mremap over the program's live pages, as system calls: for the program nothing
// changes (same address, same contents), and a thread sanitizer, which takes an intercepted
// mmap over memory for a write racing with the program's own accesses, must not see a change.
void* map_over(void* at, std::size_t len, int fd) noexcept {
  const long r =
      ::syscall(SYS_mmap, at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0L);
  return r < 0 && r > -4096 ? MAP_FAILED : reinterpret_cast<void*>(r);
}
void* move_over(void* from, std::size_t len, void* to) noexcept {
  const long r = ::syscall(SYS_mremap, from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
  return r < 0 && r > -4096 ? MAP_FAILED : reinterpret_cast<void*>(r);
}

// Copies with a system call rather than memcpy: the pages at the edges of a window hold other
// data of the program too (for a sanitizer build, its redzones), which the copy must carry
// without the copy counting as the program's own access.
bool copy_pages(void* to, const void* from, std::size_t len) noexcept {
  iovec local{to, len};
  iovec remote{const_cast<void*>(from), len};
  return ::syscall(SYS_process_vm_readv, ::getpid(), &local, 1UL, &remote, 1UL, 0UL) ==
         static_cast<long>(len);
}

// Write-protects [begin, begin + len) with userfaultfd for its lifetime (nothing for len 0): a
// store to those pages meanwhile, by any thread or by the kernel on its behalf, waits until the
// protection goes (when the pages were replaced, the retried store lands in the new pages).
class write_fence {
 public:
  write_fence(std::uintptr_t begin, std::size_t len, bool shared_pages) noexcept
      : begin_(begin), len_(len) {
    if (len == 0) return;
    fd_ = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
    if (fd_ < 0) return;
    uffdio_api api{};
    api.api = UFFD_API;
    api.features = shared_pages ? UFFD_FEATURE_WP_HUGETLBFS_SHMEM : 0;
    uffdio_register reg{};
    reg.range = uffdio_range{begin, len};
    reg.mode = UFFDIO_REGISTER_MODE_WP;
    uffdio_writeprotect wp{};
    wp.range = uffdio_range{begin, len};
    wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
    ok_ = ::ioctl(fd_, UFFDIO_API, &api) == 0 && ::ioctl(fd_, UFFDIO_REGISTER, &reg) == 0 &&
          ::ioctl(fd_, UFFDIO_WRITEPROTECT, &wp) == 0;
    if (!ok_) lift();
  }
  write_fence(const write_fence&) = delete;
  write_fence& operator=(const write_fence&) = delete;
  ~write_fence() { lift(); }

  bool ok() const noexcept { return ok_; }
  // The pages were replaced: the protection went with them.
  void replaced() noexcept { replaced_ = true; }

 private:
  // Closing the descriptor wakes every waiting store (it retries); on pages that were not
  // replaced, the protection is cleared first so the retry succeeds.
  void lift() noexcept {
    if (fd_ < 0) return;
    if (!replaced_) {
      uffdio_writeprotect wp{};
      wp.range = uffdio_range{begin_, len_};
      wp.mode = 0;
      ::ioctl(fd_, UFFDIO_WRITEPROTECT, &wp);
    }
    ::close(fd_);
    fd_ = -1;
  }

  std::uintptr_t begin_;
  std::size_t len_;
  int fd_ = -1;
  bool ok_ = false;
  bool replaced_ = false;
};

// Every range of this process moved into shared memory, for fork(): the child gets private
// copies at once, so what it writes stays in the child, as with the copy-on-write pages the
// program had before (and the parent's later writes do not show in the child). A fixed table
// of atomics, since the child may not take locks other threads held at the fork.
struct moved_range {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::size_t> len{0};
};
constexpr std::size_t max_moved = 1024;
moved_range g_moved[max_moved];

// Private pages with the contents of [begin, begin + len), put in their place.
bool replace_with_private(std::uintptr_t begin, std::size_t len) noexcept {
  void* pages = reinterpret_cast<void*>(begin);
  void* copy = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED) return false;
  if (!copy_pages(copy, pages, len) || move_over(copy, len, pages) != pages) {
    ::munmap(copy, len);
    return false;
  }
  return true;
}

void privatize_in_child() noexcept {
  for (moved_range& r : g_moved) {
    const std::uintptr_t b = r.begin.load(std::memory_order_acquire);
    if (b != 0) replace_with_private(b, r.len.load(std::memory_order_relaxed));
  }
}

bool remember(std::uintptr_t begin, std::size_t len) noexcept {
  static std::once_flag registered;
  std::call_once(registered, [] { ::pthread_atfork(nullptr, nullptr, &privatize_in_child); });
  for (moved_range& r : g_moved) {
    std::uintptr_t expected = 0;
    if (r.begin.load(std::memory_order_relaxed) == 0) {
      r.len.store(len, std::memory_order_relaxed);
      if (r.begin.compare_exchange_strong(expected, begin, std::memory_order_release)) return true;
    }
  }
  return false;
}

void forget(std::uintptr_t begin) noexcept {
  for (moved_range& r : g_moved) {
    std::uintptr_t expected = begin;
    if (r.begin.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;
  }
}

// Whether the mappings of /proc/self/maps cover [begin, end) without a hole and `each(perms,
// inode, path)` holds for every one of them that [begin, end) touches.
template <class Each>
bool every_mapping(std::uintptr_t begin, std::uintptr_t end, Each&& each) {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  // One read for many lines: the kernel formats the file afresh at every read.
  char buffer[16384];
  std::setvbuf(maps, buffer, _IOFBF, sizeof buffer);
  std::uintptr_t covered = begin;
  char line[512];
  bool ok = true;
  while (ok && covered < end && std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long lo = 0, hi = 0, offset = 0, inode = 0;
    char perms[8] = {};
    char dev[16] = {};
    int path_at = 0;
    if (std::sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &lo, &hi, perms, &offset, dev, &inode,
                    &path_at) < 6) {
      continue;
    }
    if (hi <= covered || lo >= end) continue;
    if (lo > covered) ok = false;  // a hole
    std::string_view path(line + path_at);
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.remove_suffix(1);
    ok = ok && each(std::string_view(perms), inode, path);
    covered = hi;
  }
  std::fclose(maps);
  return ok && covered >= end;
}

// Whether `path`, as /proc shows a mapping's file, names the shared-memory object `object`
// (unlinked or not).
bool names_object(std::string_view path, std::string_view object) noexcept {
  constexpr std::string_view deleted = " (deleted)";
  if (path.ends_with(deleted)) path.remove_suffix(deleted.size());
  return !object.empty() && path.ends_with(object);
}

// Whether every page of [begin, end) maps the shared-memory object `object`: one readlink when
// [begin, end) is still one mapping (as move_to_shared left it), else a walk of the maps.
bool maps_object(std::uintptr_t begin, std::uintptr_t end, std::string_view object) noexcept {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/map_files/%lx-%lx",
                static_cast<unsigned long>(begin), static_cast<unsigned long>(end));
  char target[512];
  const ssize_t n = ::readlink(link, target, sizeof target);
  if (n > 0 && static_cast<std::size_t>(n) < sizeof target) {
    return names_object(std::string_view(target, static_cast<std::size_t>(n)), object);
  }
  return every_mapping(begin, end, [&](std::string_view, unsigned long, std::string_view path) {
    return names_object(path, object);
  });
}

}  // namespace

bool anonymous_private(std::uintptr_t begin, std::uintptr_t end) {
  return every_mapping(begin, end,
                       [](std::string_view perms, unsigned long inode, std::string_view path) {
                         const bool anonymous =
                             inode == 0 && (path.empty() || path == "[heap]" || path == "[stack]");
                         return anonymous && perms.substr(0, 4) == "rw-p";
                       });
}

stack_range this_thread_stack() noexcept {
  // Once per thread: for the main thread glibc reads all of /proc/self/maps to answer.
  thread_local const stack_range cached = [] {
    pthread_attr_t attr;
    if (::pthread_getattr_np(::pthread_self(), &attr) != 0) return stack_range{};
    void* addr = nullptr;
    std::size_t size = 0;
    stack_range r;
    if (::pthread_attr_getstack(&attr, &addr, &size) == 0) {
      r.lo = reinterpret_cast<std::uintptr_t>(addr);
      r.hi = r.lo + size;
    }
    ::pthread_attr_destroy(&attr);
    return r;
  }();
  return cached;
}

bool can_fence_writes() noexcept {
  static const bool can = [] {
    const long page = ::sysconf(_SC_PAGESIZE);
    void* p = ::mmap(nullptr, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    static_cast<volatile char*>(p)[0] = 1;
    bool ok = false;
    {
      // Shared pages are the harder case (and the one moving back needs).
      write_fence f(reinterpret_cast<std::uintptr_t>(p), static_cast<std::size_t>(page), true);
      ok = f.ok();
    }
    ::munmap(p, static_cast<std::size_t>(page));
    return ok;
  }();
  return can;
}

bool move_to_shared(int fd, std::uintptr_t begin, std::size_t len, bool fenced) noexcept {
  if (!remember(begin, len)) return false;
  void* pages = reinterpret_cast<void*>(begin);
  write_fence fence(begin, fenced ? len : 0, false);
  bool moved = false;
  if (!fenced || fence.ok()) {
    // Into the file without touching the program's memory as the program (see copy_pages).
    const bool copied = ::syscall(SYS_pwrite64, fd, pages, len, 0L) == static_cast<long>(len);
    // MAP_FIXED fails before replacing anything, so on failure the pages stay as they were.
    moved = copied && map_over(pages, len, fd) == pages;
    if (moved) fence.replaced();
  }
  if (!moved) forget(begin);
  return moved;
}

void move_to_private(std::uintptr_t begin, std::size_t len, bool fenced,
                     std::string_view object) noexcept {
  forget(begin);
  if (len == 0 || !maps_object(begin, begin + len, object)) return;
  // This call's frame and those of what it calls lie below the frame address (plus the return
  // address and what the ABI keeps beside it): pages of this thread's stack from there down
  // may hold them, and a fenced store of this thread to its own frames would wait for ever.
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const stack_range own = this_thread_stack();
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) + 256;
  std::uintptr_t from = begin;
  if (begin < own.hi && own.lo < begin + len && begin <= frame) {
    from = std::min(begin + len, (frame + page - 1) & ~(page - 1));
    if (from > begin) (void)remember(begin, from - begin);  // still shared: fork() must know
  }
  if (from == begin + len) return;
  write_fence fence(from, fenced ? begin + len - from : 0, true);
  // (Should the fence fail now, which it did not when the pages moved, move them anyway, as
  // if unfenced: leaving them shared would let a forked child share them.)
  if (replace_with_private(from, begin + len - from)) fence.replaced();
}

}  // namespace oneside::transport::shm_detail
