// Owning handles for file descriptors, and pipes made of them: every descriptor the launcher
// opens is closed by an owner, and is close-on-exec so that no rank inherits another's pipes.
#pragma once

#include <cstddef>
#include <unistd.h>
#include <utility>

namespace oneside::launcher {

class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct pipe_ends {
  unique_fd read;
  unique_fd write;
};

// A pipe with O_CLOEXEC and any extra pipe2 flags. Throws error(intern) on failure.
pipe_ends make_pipe(int flags = 0);
// Adds O_NONBLOCK to an open descriptor. Throws error(intern) on failure.
void set_nonblocking(int fd);
// Writes all of `data` to `fd`, waiting for room when the descriptor is non-blocking.
// Returns 0 or the errno that stopped it (EPIPE when the reader is gone).
int write_all(int fd, const void* data, std::size_t bytes) noexcept;

}  // namespace oneside::launcher
