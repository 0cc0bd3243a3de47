// The reaper process: cleans up a job whose launcher died.
#include "launcher/reaper.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utility>

#include "runtime/check.hpp"
#include "transport/shm/shm_object.hpp"

namespace oneside::launcher {
namespace {

// Messages on the pipe: 'g' followed by the ranks' process group id, then 'd' when the
// launcher has cleaned up. Each message is one write of at most PIPE_BUF bytes: atomic.
constexpr char msg_group = 'g';
constexpr char msg_done = 'd';

// Leaves the pipe on descriptor 3 and the liveness record (if any) on 4, nothing else.
void close_other_descriptors(int pipe_fd, int liveness_fd) noexcept {
  // Hold nothing of the launcher's: above all not the pipes a caller reads the launcher's
  // output from, which would otherwise stay open until the reaper exits.
  const int dev_null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (dev_null >= 0) {
    ::dup2(dev_null, STDIN_FILENO);
    ::dup2(dev_null, STDOUT_FILENO);
  }
  // Out of the way first, so that neither lands on the other's place.
  constexpr int above = 10;
  const int pipe_copy = ::fcntl(pipe_fd, F_DUPFD, above);
  const int liveness_copy = liveness_fd >= 0 ? ::fcntl(liveness_fd, F_DUPFD, above) : -1;
  ::dup2(pipe_copy, 3);
  int first_closed = 4;
  if (liveness_copy >= 0) {
    ::dup2(liveness_copy, 4);
    first_closed = 5;
  }
  if (::close_range(static_cast<unsigned>(first_closed), ~0U, 0) != 0) {
    for (int fd = first_closed; fd < 1024; ++fd) ::close(fd);
  }
}

void pause_ms(long ms) noexcept {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

[[noreturn]] void reaper_main(int pipe_fd, int liveness_fd, const std::string& job_id,
                              pid_t launcher) noexcept {
  // Its own process group: a Ctrl-C on the terminal or a kill of the launcher's group must
  // not take the reaper down with the launcher. It ignores the polite signals for the same
  // reason; it ends when the launcher says so or is gone.
  ::setpgid(0, 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigemptyset(&ignore.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::sigaction(s, &ignore, nullptr);
  close_other_descriptors(pipe_fd, liveness_fd);

  pid_t group = 0;
  char buf[64];
  std::size_t have = 0;
  for (;;) {
    const ssize_t n = ::read(3, buf + have, sizeof buf - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file (or error): the launcher is gone
    have += static_cast<std::size_t>(n);
    std::size_t used = 0;
    while (used < have) {
      if (buf[used] == msg_done) ::_exit(0);
      if (buf[used] != msg_group) {
        ++used;  // not ours; cannot happen, but never wedge on it
        continue;
      }
      if (have - used < 1 + sizeof(pid_t)) break;  // the rest of the message is on its way
      std::memcpy(&group, buf + used + 1, sizeof(pid_t));
      used += 1 + sizeof(pid_t);
    }
    std::memmove(buf, buf + used, have - used);
    have -= used;
  }

  // The launcher died. Ranks die with it (PR_SET_PDEATHSIG); kill whatever they forked, then
  // remove the objects. A process killed in the middle of shm_open may still create its
  // object, so sweep a second time once the kill has surely taken effect.
  if (group > 0) ::kill(-group, SIGKILL);
  int removed = detail::sweep_job_shm(job_id);
  pause_ms(200);
  if (group > 0) ::kill(-group, SIGKILL);
  removed += detail::sweep_job_shm(job_id);
  std::fprintf(stderr,
               "oneside-run: the launcher (pid %d) died; its reaper killed the ranks of job %s "
               "and removed %d shared-memory objects\n",
               static_cast<int>(launcher), job_id.c_str(), removed);
  ::_exit(0);
}

}  // namespace

reaper reaper::start(const std::string& job_id, int liveness_fd) {
  pipe_ends p = make_pipe();
  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) detail::raise_system("fork", "cannot start the job's reaper", errno);
  if (pid == 0) {
    p.write.reset();
    reaper_main(p.read.get(), liveness_fd, job_id, launcher);
  }
  return reaper(pid, std::move(p.write));
}

reaper::reaper(reaper&& o) noexcept : pid_(std::exchange(o.pid_, -1)), pipe_(std::move(o.pipe_)) {}

reaper& reaper::operator=(reaper&& o) noexcept {
  if (this != &o) {
    dismiss();
    pid_ = std::exchange(o.pid_, -1);
    pipe_ = std::move(o.pipe_);
  }
  return *this;
}

reaper::~reaper() {
  dismiss();
}

void reaper::watch_group(pid_t pgid) noexcept {
  if (!pipe_) return;
  char msg[1 + sizeof(pid_t)];
  msg[0] = msg_group;
  std::memcpy(msg + 1, &pgid, sizeof(pid_t));
  write_all(pipe_.get(), msg, sizeof msg);  // a dead reaper (EPIPE) changes nothing here
}

void reaper::on_reaped() noexcept {
  pid_ = -1;
  pipe_.reset();
}

void reaper::dismiss() noexcept {
  if (pipe_) {
    write_all(pipe_.get(), &msg_done, 1);
    pipe_.reset();
  }
  if (pid_ > 0) {
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

}  // namespace oneside::launcher
