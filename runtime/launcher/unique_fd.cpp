// Pipes and whole writes for the launcher.
#include "launcher/unique_fd.hpp"

#include <cerrno>
#include <fcntl.h>
#include <poll.h>

#include "runtime/check.hpp"

namespace oneside::launcher {

pipe_ends make_pipe(int flags) {
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC | flags) != 0)
    detail::raise_system("pipe2", "cannot create a pipe", errno);
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

void set_nonblocking(int fd) {
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    detail::raise_system("fcntl", "cannot make a pipe non-blocking", errno);
  }
}

int write_all(int fd, const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n >= 0) {
      p += n;
      bytes -= static_cast<std::size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // Someone handed us a non-blocking stdout: block until it drains, as a plain write would.
      pollfd pfd{fd, POLLOUT, 0};
      ::poll(&pfd, 1, -1);
    } else if (errno != EINTR) {
      return errno;
    }
  }
  return 0;
}

}  // namespace oneside::launcher
