// Hang diagnosis (issue 18): with ONESIDE_HANG_TIMEOUT, a job in which every rank waits in
// oneside and none makes progress is ended with status 125 after oneside-run printed what each
// rank waits for; computing ranks are never taken for hung ones; `oneside-run --dump` and
// SIGUSR1 print the same for a live job; a process alone ends itself.
#include <signal.h>
#include <thread>

#include <gtest/gtest.h>

#include "launcher_harness.hpp"

namespace oneside::test {
namespace {

using std::chrono::seconds;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string& hang_probe_path() {
  static const std::string p = ONESIDE_TEST_HANG_PROBE;
  return p;
}

// The job id rank 0 printed ("job <id>"), or empty.
std::string job_of(const std::string& out) {
  for (const std::string& line : lines_starting(out, "job ")) return line.substr(4);
  return {};
}

class Hang : public ::testing::Test {
 protected:
  void SetUp() override { become_subreaper(); }
  void TearDown() override { reap_adopted_children(); }

  static std::vector<std::string> job(int ranks, std::vector<std::string> probe_args) {
    std::vector<std::string> args{"-n", std::to_string(ranks), hang_probe_path()};
    args.insert(args.end(), probe_args.begin(), probe_args.end());
    return args;
  }
  static void expect_no_leftovers(const run_result& r) {
    const std::string id = job_of(r.out);
    ASSERT_FALSE(id.empty()) << r.out;
    EXPECT_EQ(job_shm_objects(id), std::vector<std::string>{});
  }
};

TEST_F(Hang, ALockCycleIsDiagnosedAndEndsTheJob) {
  const run_result r =
      run_launcher(job(3, {"lock-cycle"}), {{"ONESIDE_HANG_TIMEOUT", "2"}}, seconds(60));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_TRUE(contains(r.err, "oneside-run: no rank made progress for 2 s")) << r.err;
  // Rank 0 holds the lock and waits in the barrier; ranks 1 and 2 wait for the lock.
  EXPECT_TRUE(contains(r.err, "rank 0 (pid ")) << r.err;
  EXPECT_TRUE(contains(r.err, "barrier: world team, rank 0 of 3")) << r.err;
  EXPECT_TRUE(contains(r.err, "window::lock, waiting for the lock (target 0): window #")) << r.err;
  EXPECT_TRUE(contains(r.err, "lock word of target 0: held exclusively")) << r.err;

  // What rank 0 holds while it waits in the barrier.
  EXPECT_TRUE(contains(r.err, "open epochs of this rank: window #1: lock(exclusive, target 0)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "oneside-run: the job hangs; killing 3 ranks")) << r.err;
  expect_no_leftovers(r);
}

TEST_F(Hang, MismatchedSynchronizationShowsBothCalls) {
  const run_result r =
      run_launcher(job(2, {"fence-vs-barrier"}), {{"ONESIDE_HANG_TIMEOUT", "2"}}, seconds(60));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_TRUE(contains(r.err, "in window::fence: window #")) << r.err;
  EXPECT_TRUE(contains(r.err, "barrier: world team, rank 1 of 2")) << r.err;
  expect_no_leftovers(r);
}

TEST_F(Hang, WaitsOnUserWordsNameTheWord) {
  const run_result r = run_launcher(job(1, {"flag"}), {{"ONESIDE_HANG_TIMEOUT", "1"}}, seconds(60));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_TRUE(contains(r.err, "wait_until: the word at 0x")) << r.err;
  expect_no_leftovers(r);
}

// A rank that computes while the others wait for it is progress, not a hang: the job ends
// normally although the others wait longer than the timeout.
TEST_F(Hang, AComputingRankIsNotAHang) {
  const run_result r =
      run_launcher(job(3, {"compute", "4"}), {{"ONESIDE_HANG_TIMEOUT", "1"}}, seconds(60));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "no rank made progress")) << r.err;
}

// The same when a thread of the computing rank waits in oneside meanwhile: its other thread's
// CPU time says the rank works.
TEST_F(Hang, ComputingBesideAWaitingThreadIsNotAHang) {
  const run_result r =
      run_launcher(job(3, {"compute-waiting", "4"}), {{"ONESIDE_HANG_TIMEOUT", "1"}}, seconds(60));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "no rank made progress")) << r.err;
}

// Fibers: a thread whose fibers and own code all wait is waiting (the description names the
// wait of the context that waits for all of them)...
TEST_F(Hang, FibersThatAllWaitAreAHang) {
  const run_result r =
      run_launcher(job(2, {"fiber-flag"}), {{"ONESIDE_HANG_TIMEOUT", "1"}}, seconds(60));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_TRUE(contains(r.err, "wait_until: the word at 0x")) << r.err;
  expect_no_leftovers(r);
}

// ... and a fiber that computes while the thread's other contexts wait is computing.
TEST_F(Hang, AComputingFiberIsNotAHang) {
  const run_result r =
      run_launcher(job(3, {"fiber-compute", "4"}), {{"ONESIDE_HANG_TIMEOUT", "1"}}, seconds(60));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "no rank made progress")) << r.err;
}

// Without ONESIDE_HANG_TIMEOUT nothing ends a hung job; --dump and SIGUSR1 show what it waits for.
TEST_F(Hang, DumpAndSigusr1ShowALiveJob) {
  process_run job_run({launcher_path(), "-n", "3", hang_probe_path(), "lock-cycle"});
  const std::string pid = std::to_string(job_run.pid());
  // Waits are described once they last a second: ask until they are.
  run_result dump;
  for (int attempt = 0; attempt < 60; ++attempt) {
    dump = run_launcher({"--dump", pid}, {}, seconds(20));
    if (contains(dump.out, "waiting for the lock") && contains(dump.out, "barrier: world team"))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_EQ(dump.exit_code, 0) << dump.out << dump.err;
  EXPECT_TRUE(contains(dump.out, "(launcher pid " + pid + ", 3 ranks)")) << dump.out;
  EXPECT_TRUE(contains(dump.out, "window::lock, waiting for the lock (target 0)")) << dump.out;
  EXPECT_TRUE(contains(dump.out, "barrier: world team, rank 0 of 3")) << dump.out;
  // The same for every job of the user when none is named.
  const run_result all = run_launcher({"--dump"}, {}, seconds(20));
  EXPECT_EQ(all.exit_code, 0);
  EXPECT_TRUE(contains(all.out, "(launcher pid " + pid + ", 3 ranks)")) << all.out;

  ASSERT_EQ(::kill(job_run.pid(), SIGUSR1), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(::kill(job_run.pid(), SIGTERM), 0);
  const run_result r = job_run.wait(seconds(30));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_TRUE(contains(r.err, "oneside-run: what the ranks of job ")) << r.err;
  EXPECT_TRUE(contains(r.err, "window::lock, waiting for the lock (target 0)")) << r.err;
  EXPECT_FALSE(contains(r.err, "no rank made progress")) << r.err;
  expect_no_leftovers(r);
}

TEST_F(Hang, DumpOfNoJobSaysSo) {
  const run_result r = run_launcher({"--dump", "999999999"}, {}, seconds(20));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.out, "no running job 999999999 of this user")) << r.out;
}

// Nobody watches a process started alone: it ends itself with the same status and says why.
TEST_F(Hang, AProcessAloneEndsItself) {
  process_run alone({hang_probe_path(), "flag"}, {{"ONESIDE_HANG_TIMEOUT", "2"}});
  const run_result r = alone.wait(seconds(60));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_TRUE(contains(r.err, "no progress for 2 s (ONESIDE_HANG_TIMEOUT)")) << r.err;
  EXPECT_TRUE(contains(r.err, "wait_until: the word at 0x")) << r.err;
}

}  // namespace
}  // namespace oneside::test
