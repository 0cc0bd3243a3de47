// Signals through a signalfd.
#include "launcher/signal_channel.hpp"

#include <cerrno>
#include <sys/signalfd.h>

#include "runtime/check.hpp"

namespace oneside::launcher {

signal_channel::signal_channel() {
  sigset_t set;
  ::sigemptyset(&set);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1}) ::sigaddset(&set, s);
  if (::sigprocmask(SIG_BLOCK, &set, &old_mask_) != 0) {
    detail::raise_system("sigprocmask", "cannot block signals", errno);
  }
  fd_.reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd_) {
    const int err = errno;
    ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    detail::raise_system("signalfd", "cannot receive signals", err);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, &old_pipe_action_);
}

signal_channel::~signal_channel() {
  ::sigaction(SIGPIPE, &old_pipe_action_, nullptr);
  ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

std::vector<int> signal_channel::read_pending() {
  std::vector<int> out;
  signalfd_siginfo info[16];
  for (;;) {
    const ssize_t n = ::read(fd_.get(), info, sizeof info);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      detail::raise_system("read", "cannot read the launcher's signals", errno);
    }
    const auto count = static_cast<std::size_t>(n) / sizeof(signalfd_siginfo);
    for (std::size_t i = 0; i < count; ++i) out.push_back(static_cast<int>(info[i].ssi_signo));
    if (count < std::size(info)) break;
  }
  return out;
}

void signal_channel::restore_in_child() const noexcept {
  ::sigaction(SIGPIPE, &old_pipe_action_, nullptr);
  ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace oneside::launcher
