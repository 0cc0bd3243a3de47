// Error handling of windows (ERR-1 … ERR-3, ERR-10): which handler a failing call uses, the
// default (throw oneside::error: the C++ form of "errors return") and the fatal handler (the
// job's process aborts with a message naming the call and class), distinct error classes with
// names and descriptions, and overlapping puts, which are undefined but never an error (SEM-1).
#include <cstdint>
#include <cstdio>
#include <poll.h>
#include <set>
#include <signal.h>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"
#include "rma_test_util.hpp"

namespace oneside::test {
namespace {

class Errors : public RankTest {};

constexpr error_class every_class[] = {error_class::win,
                                       error_class::base,
                                       error_class::size,
                                       error_class::disp,
                                       error_class::locktype,
                                       error_class::assert_,
                                       error_class::rma_conflict,
                                       error_class::rma_sync,
                                       error_class::rma_range,
                                       error_class::rma_attach,
                                       error_class::rma_shared,
                                       error_class::rma_flavor,
                                       error_class::arg,
                                       error_class::count,
                                       error_class::type,
                                       error_class::op,
                                       error_class::rank,
                                       error_class::group,
                                       error_class::comm,
                                       error_class::info,
                                       error_class::request,
                                       error_class::truncate,
                                       error_class::io,
                                       error_class::no_mem,
                                       error_class::file,
                                       error_class::bad_file,
                                       error_class::no_such_file,
                                       error_class::file_exists,
                                       error_class::access,
                                       error_class::amode,
                                       error_class::read_only,
                                       error_class::no_space,
                                       error_class::quota,
                                       error_class::not_same,
                                       error_class::unsupported_datarep,
                                       error_class::unsupported_operation,
                                       error_class::not_open,
                                       error_class::intern,
                                       error_class::remote};

TEST_F(Errors, ClassesAreDistinctAndNamed) {
  covers("ERR-3", "ERR-15");
  std::set<std::string_view> names;
  for (error_class ec : every_class) {
    const std::string_view name = error_class_name(ec);
    EXPECT_FALSE(name.empty()) << static_cast<int>(ec);
    EXPECT_FALSE(error_class_description(ec).empty()) << name;
    EXPECT_TRUE(names.insert(name).second) << "two classes named " << name;
  }
  EXPECT_EQ(rma_wrong_flavor, error_class::rma_flavor);
}

TEST_F(Errors, CreationErrorsUseTheCallersHandlerAndWindowErrorsTheWindows) {
  covers("ERR-1", "ERR-2");
  rma::window w = rma::window::allocate(world(), 8, 8);
  EXPECT_EQ(w.error_handler(), rma::errors::throws) << "oneside's default handler throws";
  // A fatal window does not make the creation of another window fatal (ERR-1)…
  w.set_error_handler(rma::errors::fatal);
  EXPECT_EQ(w.error_handler(), rma::errors::fatal);
  expect_error(error_class::disp, "allocate", [&] { rma::window::allocate(world(), 8, 0); });
  // …nor errors on another window.
  rma::window other = rma::window::allocate(world(), 8, 8);
  EXPECT_EQ(other.error_handler(), rma::errors::throws);
  expect_error(error_class::rma_sync, "put", [&] { other.put(std::int64_t{1}, 0, 0); });
  w.set_error_handler(rma::errors::throws);
  expect_error(error_class::rma_sync, "put", [&] { w.put(std::int64_t{1}, 0, 0); });
}

// In a child process (so the job survives), an erroneous put on a window whose handler is
// errors::fatal aborts with a message naming the call and the class (ERR-2).
TEST_F(Errors, FatalHandlerAbortsTheProcessWithTheMessage) {
  covers("ERR-2", "ERR-11");
  rma::window w = rma::window::allocate(world(), 8, 8);
  int fds[2] = {-1, -1};
  EXPECT_EQ(::pipe(fds), 0);
  if (fds[0] >= 0) {
    std::fflush(nullptr);  // nothing buffered is written twice
    const pid_t child = ::fork();
    EXPECT_GE(child, 0) << "fork failed";
    if (child == 0) {
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      w.set_error_handler(rma::errors::fatal);
      try {
        w.put(std::int64_t{1}, 0, 0);  // no epoch: rma_sync
      } catch (...) {
        ::_exit(3);  // threw instead of aborting
      }
      ::_exit(4);  // no error at all
    }
    ::close(fds[1]);
    if (child < 0) ::close(fds[0]);
    std::string message;
    char buf[512];
    bool timed_out = false;
    for (; child > 0;) {
      pollfd pfd{fds[0], POLLIN, 0};
      const int ready = ::poll(&pfd, 1, 20000);
      if (ready <= 0) {
        timed_out = true;
        break;
      }
      const ssize_t got = ::read(fds[0], buf, sizeof buf);
      if (got <= 0) break;
      message.append(buf, static_cast<std::size_t>(got));
    }
    if (child > 0) ::close(fds[0]);
    if (timed_out && child > 0) ::kill(child, SIGKILL);
    int status = 0;
    if (child > 0) {
      EXPECT_EQ(::waitpid(child, &status, 0), child);
    }
    EXPECT_FALSE(timed_out) << "the child neither aborted nor exited";
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
        << "child status " << status << " (exit 3: threw, exit 4: no error); stderr: " << message;
    EXPECT_NE(message.find("rma_sync"), std::string::npos) << message;
    EXPECT_TRUE(names_call(message, "put")) << message;
  }
  barrier(world());
}

TEST_F(Errors, OverlappingPutsAreUndefinedButNeverAnError) {
  covers("SEM-1", "ERR-10");
  rma::window w = rma::window::allocate(world(), sizeof(std::int64_t), 8);
  *static_cast<std::int64_t*>(w.base()) = 0;
  settle(w);
  const std::int64_t mine = 0x0101010101010101 * (rank() % 100 + 1);
  w.fence();
  expect_ok("concurrent puts to one location", [&] {
    w.put(mine, 0, 0);
    w.put(mine + 1, 0, 0);  // and twice from one origin in one epoch
  });
  expect_ok("closing fence", [&] { w.fence(); });
  settle(w);
  expect_ok("lock_all epoch with overlapping puts", [&] {
    w.lock_all();
    w.put(mine, 0, 0);
    w.put(mine, 0, 0);
    w.unlock_all();
  });
  settle(w);
}

}  // namespace
}  // namespace oneside::test
