// POSIX shared-memory objects of a job: naming, creation, mapping and the crash sweep.
#include "transport/shm/shm_object.hpp"

#include <cerrno>
#include <cstdio>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

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

int sweep_job_shm(std::string_view job_id) noexcept {
  const std::string prefix = shm_prefix(job_id);
  int removed = 0;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view n(e->d_name);
    if (n.substr(0, prefix.size()) == prefix) {
      std::string name(1, '/');
      name.append(n);
      if (::shm_unlink(name.c_str()) == 0) ++removed;
    }
  }
  ::closedir(dir);
  return removed;
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

namespace {

// Opens or creates `name`; -1 with errno set on failure. An opened object must be this
// user's and closed to everybody else: another user's object under a name of ours (made
// there first to hijack or to break the job) is refused.
int open_checked(const std::string& name, shm_object::mode m) {
  const int flags = m == shm_object::mode::create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR;
  const int fd = ::shm_open(name.c_str(), flags | O_NOFOLLOW, 0600);
  if (fd < 0 || m == shm_object::mode::create) return fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    ::close(fd);
    raise(error_class::intern, {.call = "shm_open"},
          "cannot open " + name + ": it belongs to uid " + std::to_string(st.st_uid) +
              " or others may access it (mode " + std::to_string(st.st_mode & 0777) +
              "), not this job's");
  }
  return fd;
}

}  // namespace

bool shm_object::try_create(shm_object& out, const std::string& name, std::size_t bytes) {
  const int fd = open_checked(name, mode::create);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    raise_system("shm_open", "cannot create " + name, errno);
  }
  shm_object made;
  made.name_ = name;
  made.finish(fd, bytes, mode::create);
  out = std::move(made);
  return true;
}

std::uint64_t shm_object::create_under_random_name(
    shm_object& out, std::size_t bytes, std::string_view call,
    const std::function<std::uint64_t()>& draw,
    const std::function<std::string(std::uint64_t)>& name_of) {
  constexpr int draws = 8;
  for (int attempt = 1;; ++attempt) {
    const std::uint64_t v = draw();
    if (try_create(out, name_of(v), bytes)) return v;
    ONESIDE_CHECK(attempt < draws, error_class::intern, {.call = call},
                  std::to_string(draws) +
                      " random names for a shared-memory object were taken already (another "
                      "process is creating objects under this job's names)");
  }
}

shm_object::shm_object(const std::string& name, std::size_t bytes, mode m) : name_(name) {
  const int fd = open_checked(name, m);
  if (fd < 0) {
    raise_system("shm_open", (m == mode::create ? "cannot create " : "cannot open ") + name, errno);
  }
  finish(fd, bytes, m);
}

void shm_object::finish(int fd, std::size_t bytes, mode m) {
  const std::string& name = name_;
  if (m == mode::create) {
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      const int err = errno;
      ::close(fd);
      ::shm_unlink(name.c_str());
      raise_system("shm_open", "cannot size " + name, err);
    }
  } else if (bytes == 0) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      raise_system("shm_open", "cannot stat " + name, err);
    }
    bytes = static_cast<std::size_t>(st.st_size);
  }
  size_ = bytes;
  if (bytes > 0) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      if (m == mode::create) ::shm_unlink(name.c_str());
      raise_system("mmap", "cannot map " + name, err);
    }
    base_ = p;
  }
  ::close(fd);
}

shm_object::shm_object(shm_object&& o) noexcept
    : name_(std::move(o.name_)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

shm_object& shm_object::operator=(shm_object&& o) noexcept {
  if (this != &o) {
    reset();
    name_ = std::move(o.name_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

shm_object::~shm_object() {
  reset();
}

void shm_object::reset() noexcept {
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
}

void shm_object::unlink() noexcept {
  if (!name_.empty()) ::shm_unlink(name_.c_str());
}

}  // namespace oneside::detail
