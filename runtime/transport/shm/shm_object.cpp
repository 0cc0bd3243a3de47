// POSIX shared-memory objects of a job: naming, creation, mapping and the crash sweep.
#include "transport/shm/shm_object.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <dirent.h>
#include <fcntl.h>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "runtime/check.hpp"

namespace oneside::detail {

std::string shm_prefix(std::string_view job_id) {
  std::string p = "oneside.";
  p += job_id;
  p += '.';
  return p;
}

std::string shm_name(std::string_view job_id, std::string_view what) {
  std::string n(1, '/');
  n.append(shm_prefix(job_id)).append(what);
  return n;
}

std::uint64_t random_u64() {
  std::uint64_t v = 0;
  auto* at = reinterpret_cast<unsigned char*>(&v);
  std::size_t got = 0;
  while (got < sizeof v) {
    const ssize_t n = ::getrandom(at + got, sizeof v - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      raise_system("getrandom", "cannot draw random bits for shared-memory names", errno);
    }
    got += static_cast<std::size_t>(n);
  }
  return v;
}

std::string make_job_id() {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%d-%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(random_u64()));
  return buf;
}

std::string human_bytes(std::size_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

namespace {

constexpr std::string_view shm_dir = "/dev/shm";
constexpr std::string_view object_stem = "oneside.";
constexpr std::string_view record_what = "live";

std::size_t page_bytes() noexcept {
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// Free bytes of the file system behind `fd` (/dev/shm), or nothing when it has no size limit.
std::optional<std::size_t> free_bytes(int fd) noexcept {
  struct statvfs s {};
  const int rc = fd >= 0 ? ::fstatvfs(fd, &s) : ::statvfs(std::string(shm_dir).c_str(), &s);
  if (rc != 0 || s.f_blocks == 0) return std::nullopt;
  return static_cast<std::size_t>(s.f_bavail) * static_cast<std::size_t>(s.f_frsize);
}

// Backs [offset, offset + len) of the object behind `fd`; 0 or the error number. A request
// beyond the free space fails at once: tmpfs would otherwise fill itself page by page (taking
// the memory from every other job meanwhile) before giving up.
int back_range(int fd, std::size_t offset, std::size_t len) noexcept {
  if (len == 0) return 0;
  if (const std::optional<std::size_t> free = free_bytes(fd)) {
    struct stat st {};
    // What the object holds already may be part of the range: counted as if it were.
    const std::size_t held =
        ::fstat(fd, &st) == 0 ? static_cast<std::size_t>(st.st_blocks) * 512 : 0;
    if (len > *free + held) return ENOSPC;
  }
  int err = 0;
  do {
    err = ::posix_fallocate(fd, static_cast<off_t>(offset), static_cast<off_t>(len));
  } while (err == EINTR);
  return err;
}

// Raises what a failed back_range means: no_mem naming the request and the free space when
// /dev/shm (or the memory behind it) is full, intern otherwise.
[[noreturn]] void raise_unreserved(std::string_view call, const std::string& name, std::size_t len,
                                   int err, int fd) {
  if (err != ENOSPC && err != ENOMEM && err != EFBIG) {
    raise_system(call, "cannot reserve memory for " + name, err);
  }
  const std::optional<std::size_t> free = free_bytes(fd);
  std::string what = "cannot reserve " + human_bytes(len) + " of shared memory: ";
  what += free ? std::string(shm_dir) + " has " + human_bytes(*free) + " free"
               : std::string(shm_dir) + " has no size limit, but the memory behind it ran out";
  raise(error_class::no_mem, {.call = call}, what);
}

// The owner of an opened object must be this user and nobody else may access it: another
// user's object under a name of ours (made there first to hijack or to break the job) is
// refused. Closes fd and raises otherwise.
void check_ours(int fd, const std::string& name, std::string_view call) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    raise_system(call, "cannot stat " + name, err);
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    raise(error_class::intern, {.call = call},
          "cannot open " + name + ": it belongs to uid " + std::to_string(st.st_uid) +
              " or others may access it (mode " + std::to_string(st.st_mode & 0777) +
              "), not this job's");
  }
}

// Opens or creates `name`; -1 with errno set on failure.
int open_checked(const std::string& name, shm_object::mode m) {
  const int flags = m == shm_object::mode::create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR;
  const int fd = ::shm_open(name.c_str(), flags | O_NOFOLLOW, 0600);
  if (fd >= 0 && m == shm_object::mode::open) check_ours(fd, name, "shm_open");
  return fd;
}

}  // namespace

bool shm_object::try_create(shm_object& out, const std::string& name, std::size_t bytes,
                            const reservation& r) {
  const int fd = open_checked(name, mode::create);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    raise_system("shm_open", "cannot create " + name, errno);
  }
  shm_object made;
  made.name_ = name;
  made.finish(fd, bytes, mode::create, r);
  out = std::move(made);
  return true;
}

std::uint64_t shm_object::create_under_random_name(
    shm_object& out, std::size_t bytes, const reservation& r,
    const std::function<std::uint64_t()>& draw,
    const std::function<std::string(std::uint64_t)>& name_of) {
  constexpr int draws = 8;
  for (int attempt = 1;; ++attempt) {
    const std::uint64_t v = draw();
    if (try_create(out, name_of(v), bytes, r)) return v;
    ONESIDE_CHECK(attempt < draws, error_class::intern, {.call = r.call},
                  std::to_string(draws) +
                      " random names for a shared-memory object were taken already (another "
                      "process is creating objects under this job's names)");
  }
}

shm_object::shm_object(const std::string& name, std::size_t bytes, mode m, const reservation& r)
    : name_(name) {
  const int fd = open_checked(name, m);
  if (fd < 0) {
    raise_system("shm_open", (m == mode::create ? "cannot create " : "cannot open ") + name, errno);
  }
  finish(fd, bytes, m, r);
}

void shm_object::finish(int fd, std::size_t bytes, mode m, const reservation& r) {
  const std::string& name = name_;
  // On failure the object is gone again (when we made it) and fd closed.
  const auto give_up = [&](int err) {
    ::close(fd);
    if (m == mode::create) ::shm_unlink(name.c_str());
    return err;
  };
  bool keep_fd = false;
  if (m == mode::create) {
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      raise_system("shm_open", "cannot size " + name, give_up(errno));
    }
    const std::size_t page = page_bytes();
    const auto pages = [page](std::size_t n) {
      return n / page * page + (n % page != 0 ? page : 0);
    };
    const std::size_t front = std::min(bytes, r.front >= bytes ? bytes : pages(r.front));
    const std::size_t back = std::min(bytes - front, pages(r.back));
    int err = back_range(fd, 0, front);
    if (err == 0) err = back_range(fd, bytes - back, back);
    // The free space named is measured once the object (and what it held) is gone.
    if (err != 0) raise_unreserved(r.call, name, front + back, give_up(err), -1);
    keep_fd = front + back < bytes;
  } else if (bytes == 0) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) raise_system("shm_open", "cannot stat " + name, give_up(errno));
    bytes = static_cast<std::size_t>(st.st_size);
  }
  size_ = bytes;
  if (bytes > 0) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) raise_system("mmap", "cannot map " + name, give_up(errno));
    base_ = p;
  }
  if (keep_fd) {
    fd_ = fd;
  } else {
    ::close(fd);
  }
}

void shm_object::reserve(std::size_t offset, std::size_t bytes, std::string_view call) const {
  ONESIDE_CHECK(offset <= size_ && bytes <= size_ - offset, error_class::intern, {.call = call},
                "the range [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                    ") lies outside " + name_ + " (" + std::to_string(size_) + " bytes)");
  if (fd_ < 0 || bytes == 0) return;  // reserved whole when it was made
  const std::size_t page = page_bytes();
  const std::size_t lo = offset / page * page;
  const std::size_t hi = std::min(size_, (offset + bytes + page - 1) / page * page);
  if (const int err = back_range(fd_, lo, hi - lo); err != 0) {
    raise_unreserved(call, name_, hi - lo, err, fd_);
  }
}

shm_object::shm_object(shm_object&& o) noexcept
    : name_(std::move(o.name_)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      fd_(std::exchange(o.fd_, -1)) {}

shm_object& shm_object::operator=(shm_object&& o) noexcept {
  if (this != &o) {
    reset();
    name_ = std::move(o.name_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

shm_object::~shm_object() {
  reset();
}

void shm_object::reset() noexcept {
  if (base_ != nullptr) ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

void shm_object::unlink() noexcept {
  if (!name_.empty()) ::shm_unlink(name_.c_str());
}

// ---- sweeping ---------------------------------------------------------------------------

namespace {

// The objects of this user in /dev/shm named like oneside's, by job: regular files only (a
// symbolic link or anything else planted there is never followed or removed).
std::map<std::string, std::vector<std::string>> own_objects_by_job(std::string_view only_job) {
  std::map<std::string, std::vector<std::string>> out;
  DIR* dir = ::opendir(std::string(shm_dir).c_str());
  if (dir == nullptr) return out;
  const uid_t me = ::geteuid();
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view n(e->d_name);
    if (!n.starts_with(object_stem)) continue;
    const std::size_t dot = n.find('.', object_stem.size());
    if (dot == std::string_view::npos || dot == object_stem.size()) continue;
    const std::string_view job = n.substr(object_stem.size(), dot - object_stem.size());
    if (!only_job.empty() && job != only_job) continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != me) continue;
    out[std::string(job)].emplace_back(n);
  }
  ::closedir(dir);
  return out;
}

// Unlinks the job's objects, its record last; the caller holds the record exclusively (or is
// the job's launcher or reaper, which outlive everything of the job). Returns how many.
int remove_job_objects(std::string_view job_id) noexcept {
  int removed = 0;
  try {
    const std::string record = shm_prefix(job_id).append(record_what);
    bool has_record = false;
    for (const auto& [job, names] : own_objects_by_job(job_id)) {
      for (const std::string& n : names) {
        if (n == record) {
          has_record = true;
          continue;
        }
        if (::shm_unlink(("/" + n).c_str()) == 0) ++removed;
      }
    }
    if (has_record && ::shm_unlink(("/" + record).c_str()) == 0) ++removed;
  } catch (...) {
    // Out of memory for a listing: what is left stays for the next sweep.
  }
  return removed;
}

void lock_or_retry(int fd, int how) noexcept {
  while (::flock(fd, how) != 0 && errno == EINTR) {
  }
}

bool is_linked(int fd) noexcept {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_nlink > 0;
}

}  // namespace

int sweep_job_shm(std::string_view job_id) noexcept {
  return remove_job_objects(job_id);
}

job_liveness job_liveness::join(std::string_view job_id, std::string_view call) {
  const std::string name = shm_name(job_id, record_what);
  constexpr int attempts = 8;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) raise_system(call, "cannot open the job's liveness record " + name, errno);
    check_ours(fd, name, call);
    lock_or_retry(fd, LOCK_SH);
    // A sweeper that found the job dead (locked before us) has removed the record meanwhile:
    // ours is a stale copy, make a fresh one.
    if (is_linked(fd)) {
      job_liveness l;
      l.job_ = job_id;
      l.fd_ = fd;
      return l;
    }
    ::close(fd);
  }
  raise(error_class::intern, {.call = call},
        "the job's liveness record " + name + " was removed " + std::to_string(attempts) +
            " times while this process joined the job");
}

job_liveness::job_liveness(job_liveness&& o) noexcept
    : job_(std::move(o.job_)), fd_(std::exchange(o.fd_, -1)) {}

job_liveness& job_liveness::operator=(job_liveness&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    job_ = std::move(o.job_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

job_liveness::~job_liveness() {
  if (fd_ >= 0) ::close(fd_);
}

void job_liveness::leave() noexcept {
  if (fd_ < 0) return;
  // Turning the shared lock into an exclusive one drops it first: of the last processes leaving
  // at once, one gets the record and the others leave it to that one.
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0 && is_linked(fd_)) remove_job_objects(job_);
  ::close(fd_);
  fd_ = -1;
}

sweep_result sweep_dead_jobs() noexcept {
  sweep_result r;
  try {
    for (const auto& [job, names] : own_objects_by_job({})) {
      const std::string record = shm_name(job, record_what);
      const int fd = ::shm_open(record.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
      struct stat st {};
      const bool ours = fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                        st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
      if (!ours) {
        // No record (an older oneside's job), or not a record of ours: alive or dead, nobody
        // can tell; left alone.
        if (fd >= 0) ::close(fd);
        ++r.unknown_jobs;
        r.unknown_objects += static_cast<int>(names.size());
        continue;
      }
      // Held by a live process of the job: alive. Unlinked meanwhile: another sweeper (or the
      // job's last process) removed the job.
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && is_linked(fd)) {
        if (const int n = remove_job_objects(job); n > 0) {
          ++r.jobs;
          r.objects += n;
        }
      }
      ::close(fd);
    }
  } catch (...) {
    // Out of memory for the listing: nothing swept.
  }
  return r;
}

}  // namespace oneside::detail
