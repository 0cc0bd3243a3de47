// Tests of oneside-run, the launcher: each runs the real launcher with launcher_probe as the
// rank program and checks the exit status, the one line that explains a failure, that no
// rank (or anything a rank forked) survives the job, and that nothing of the job is left in
// /dev/shm — after a normal run, a failing rank, a crash, a kill -9, a timeout, an interrupt
// and a killed launcher. Also: bad usage, bad settings (every setting's bad values through
// the launcher and at a bare program's open), --help/--version/--settings, --tag-output, binding.
#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

#include <gtest/gtest.h>

#include <oneside/runtime/settings.hpp>
#include <oneside/runtime/topology.hpp>
#include <oneside/runtime/version.hpp>

#include "launcher_harness.hpp"
#include "runtime/settings.hpp"
#include "topology/binding.hpp"
#include "transport/shm/shm_object.hpp"

namespace oneside::test {
namespace {

using std::chrono::seconds;
namespace fs = std::filesystem;

// How long a sleeping rank would live if nobody killed it; every test that uses sleepers
// checks that the job ended long before.
constexpr int sleeper_s = 60;
constexpr auto well_before_sleepers = seconds(30);

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<pid_t> pids_of(const std::map<int, rank_record>& records) {
  std::vector<pid_t> pids;
  for (const auto& [rank, rec] : records) pids.push_back(rec.pid);
  return pids;
}

// After the assertions: whatever a failed test left behind (ranks, their children, shared
// memory) is removed, so one failure does not leak into the machine or the next test.
void clean_up_after(const std::string& dir) {
  for (const auto& [rank, rec] : read_records(dir)) {
    for (pid_t p : {rec.pid, rec.grandchild}) {
      if (p > 0 && !process_gone(p)) ::kill(p, SIGKILL);
    }
    if (!rec.job.empty()) detail::sweep_job_shm(rec.job);
  }
}

class Launcher : public ::testing::Test {
 protected:
  void SetUp() override { become_subreaper(); }
  void TearDown() override {
    clean_up_after(dir_.path());
    reap_adopted_children();
  }

  std::vector<std::string> probe(std::vector<std::string> args) const {
    args.insert(args.begin(), probe_path());
    return args;
  }
  std::vector<std::string> with_record(std::vector<std::string> launcher_args,
                                       std::vector<std::string> probe_args) const {
    probe_args.insert(probe_args.begin(), {"--record", dir_.path()});
    for (std::string& a : probe(probe_args)) launcher_args.push_back(std::move(a));
    return launcher_args;
  }

  // The job's records must show `n` ranks of one job; returns them.
  std::map<int, rank_record> records(int n) const {
    std::map<int, rank_record> recs = read_records(dir_.path());
    EXPECT_EQ(static_cast<int>(recs.size()), n);
    return recs;
  }

  // Every rank is gone and the job left nothing in /dev/shm.
  void expect_job_cleaned_up(const std::map<int, rank_record>& recs) const {
    ASSERT_FALSE(recs.empty());
    const std::string job = recs.begin()->second.job;
    ASSERT_FALSE(job.empty());
    for (pid_t p : pids_of(recs)) {
      EXPECT_TRUE(process_gone(p)) << "rank process " << p << " is still running";
    }
    EXPECT_EQ(job_shm_objects(job), std::vector<std::string>{}) << "job " << job;
  }

  // stderr holds exactly one line of the launcher, containing `what`.
  static void expect_one_launcher_line(const run_result& r, const std::string& what) {
    const std::vector<std::string> lines = lines_starting(r.err, "oneside-run: ");
    ASSERT_EQ(lines.size(), 1U) << r.err;
    EXPECT_TRUE(contains(lines[0], what)) << lines[0];
  }

  scratch_dir dir_;
};

// --- Normal runs -------------------------------------------------------------------------

TEST_F(Launcher, NormalRunStartsDistinctRanksAndCleansUp) {
  const run_result r = run_launcher(with_record({"-n", "4"}, {"--shm", "--wait-all"}));
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto recs = records(4);
  std::set<pid_t> pids;
  for (int rank = 0; rank < 4; ++rank) {
    ASSERT_TRUE(recs.contains(rank));
    const rank_record& rec = recs.at(rank);
    EXPECT_EQ(rec.size, 4);
    EXPECT_EQ(rec.local_rank, rank);
    EXPECT_EQ(rec.local_size, 4);
    EXPECT_EQ(rec.job, recs.at(0).job);
    EXPECT_TRUE(rec.binding == "core" || rec.binding == "numa" || rec.binding == "none");
    pids.insert(rec.pid);
  }
  EXPECT_EQ(pids.size(), 4U);
  expect_job_cleaned_up(recs);
}

TEST_F(Launcher, AcceptsEverySpellingOfTheRankCount) {
  const std::vector<std::vector<std::string>> spellings = {
      {"-n", "3"}, {"-np", "3"}, {"-n=3"}, {"--np", "3"}, {"--np=3"}, {"-n", "3", "--"}};
  for (const auto& spelling : spellings) {
    const scratch_dir d;
    std::vector<std::string> args = spelling;
    for (const std::string& a : probe({"--record", d.path()})) args.push_back(a);
    const run_result r = run_launcher(args);
    EXPECT_EQ(r.exit_code, 0) << spelling[0] << "\n" << r.err;
    const auto recs = read_records(d.path());
    EXPECT_EQ(recs.size(), 3U) << spelling[0];
    if (!recs.empty()) expect_job_cleaned_up(recs);
    clean_up_after(d.path());
  }
}

TEST_F(Launcher, PassesProgramArgumentsUntouched) {
  const run_result r =
      run_launcher(with_record({"-n", "1"}, {"--", "-n", "5", "--help", "two words", "--timeout"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto recs = records(1);
  ASSERT_TRUE(recs.contains(0));
  EXPECT_EQ(recs.at(0).args,
            (std::vector<std::string>{"-n", "5", "--help", "two words", "--timeout"}));
}

TEST_F(Launcher, FindsTheProgramThroughPath) {
  const std::string probe_dir = fs::path(probe_path()).parent_path().string();
  const run_result r =
      run_launcher({"-n", "2", "launcher_probe", "--record", dir_.path()},
                   {{"PATH", cat("/nonexistent-oneside-dir:", probe_dir, ":/usr/bin:/bin")}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_job_cleaned_up(records(2));
}

// --- A failing rank ends the job ------------------------------------------------------------

TEST_F(Launcher, FirstFailingRankSetsTheExitCodeAndIsNamedOnce) {
  const run_result r = run_launcher(with_record(
      {"-n", "4"}, {"--shm", "--wait-all", "--exit", "2:3", "--sleep", std::to_string(sleeper_s)}));
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  expect_one_launcher_line(r, "rank 2 exited with status 3; killing the other 3 ranks");
  EXPECT_LT(r.elapsed, well_before_sleepers);
  expect_job_cleaned_up(records(4));
}

// A rank that exits with status 0 while its runtime is open would leave the others waiting in
// their next collective forever (issue 18): the launcher names it and ends the job.
TEST_F(Launcher, ExitingWithTheRuntimeOpenEndsTheJob) {
  const run_result r = run_launcher(with_record({"-n", "3"}, {"--wait-all", "--runtime-exit", "1"}),
                                    {}, std::chrono::seconds(30));
  ASSERT_FALSE(r.timed_out) << "the job hung:\n" << r.err;
  EXPECT_EQ(r.exit_code, 3);
  expect_one_launcher_line(r, "rank 1 exited with status 0 without closing the oneside runtime");
  expect_job_cleaned_up(records(3));
}

// A oneside program a rank starts inherits the launcher's variables; it must start a job of its
// own instead of joining (and hanging) its parent's (issue 18).
TEST_F(Launcher, AProgramStartedByARankIsAJobOfItsOwn) {
  const run_result r =
      run_launcher(with_record({"-n", "3"}, {"--wait-all", "--runtime", "--spawn-solo"}), {},
                   std::chrono::seconds(45));
  ASSERT_FALSE(r.timed_out) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_job_cleaned_up(records(3));
}

// The control: ranks that open and close the runtime end the job with status 0.
TEST_F(Launcher, ClosingTheRuntimeBeforeExitingIsANormalEnd) {
  const run_result r = run_launcher(with_record({"-n", "3"}, {"--wait-all", "--runtime"}));
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_job_cleaned_up(records(3));
}

TEST_F(Launcher, DeathBySignalIsNamed) {
  const run_result r = run_launcher(with_record(
      {"-n", "3"}, {"--shm", "--wait-all", "--segv", "1", "--sleep", std::to_string(sleeper_s)}));
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV);
  expect_one_launcher_line(r, "rank 1 killed by signal 11 (Segmentation fault)");
  EXPECT_LT(r.elapsed, well_before_sleepers);
  expect_job_cleaned_up(records(3));
}

TEST_F(Launcher, KillNineOfOneRankEndsTheJob) {
  const run_result r =
      run_launcher(with_record({"-n", "4"}, {"--shm", "--wait-all", "--kill-self", "3", "--sleep",
                                             std::to_string(sleeper_s)}));
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  expect_one_launcher_line(r, "rank 3 killed by signal 9 (Killed)");
  EXPECT_LT(r.elapsed, well_before_sleepers);
  expect_job_cleaned_up(records(4));
}

TEST_F(Launcher, RanksIgnoringSigtermAreKilledAfterTheGracePeriod) {
  const run_result r =
      run_launcher(with_record({"-n", "3"}, {"--ignore-term", "--shm", "--wait-all", "--exit",
                                             "0:5", "--sleep", std::to_string(sleeper_s)}),
                   {{"ONESIDE_KILL_GRACE_MS", "200"}});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 5);
  expect_one_launcher_line(r, "rank 0 exited with status 5");
  EXPECT_LT(r.elapsed, well_before_sleepers);
  expect_job_cleaned_up(records(3));
}

TEST_F(Launcher, WhatRanksForkedDiesWithTheJob) {
  // After a failure, and after a normal end: the ranks' process group goes as a whole.
  for (const bool fail : {true, false}) {
    const scratch_dir d;
    std::vector<std::string> args{"-n", "2"};
    std::vector<std::string> p{"--record", d.path(), "--fork-child", "--wait-all"};
    if (fail) p.insert(p.end(), {"--exit", "1:4", "--sleep", std::to_string(sleeper_s)});
    for (const std::string& a : probe(p)) args.push_back(a);
    const run_result r = run_launcher(args);
    EXPECT_EQ(r.exit_code, fail ? 4 : 0) << r.err;
    const auto recs = read_records(d.path());
    ASSERT_EQ(recs.size(), 2U);
    std::vector<pid_t> grandchildren;
    for (const auto& [rank, rec] : recs) grandchildren.push_back(rec.grandchild);
    EXPECT_EQ(wait_until_gone(grandchildren, seconds(10)), std::vector<pid_t>{})
        << "a process forked by a rank survived the job (fail=" << fail << ")";
    expect_job_cleaned_up(recs);
    clean_up_after(d.path());
  }
}

// --- Timeout and signals to the launcher -----------------------------------------------------

TEST_F(Launcher, TimeoutKillsTheJobAndSaysSo) {
  const run_result r = run_launcher(
      with_record({"-n", "3", "--timeout", "2"}, {"--shm", "--sleep", std::to_string(sleeper_s)}));
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124);
  expect_one_launcher_line(r, "job timed out after 2 s; killing 3 ranks");
  EXPECT_GE(r.elapsed, seconds(1));
  EXPECT_LT(r.elapsed, well_before_sleepers);
  expect_job_cleaned_up(records(3));
}

TEST_F(Launcher, TimeoutComesFromTheEnvironmentToo) {
  const run_result r = run_launcher(
      with_record({"-n", "2"}, {"--sleep", std::to_string(sleeper_s)}), {{"ONESIDE_TIMEOUT", "1"}});
  EXPECT_EQ(r.exit_code, 124);
  expect_one_launcher_line(r, "job timed out after 1 s");
  EXPECT_LT(r.elapsed, well_before_sleepers);
  expect_job_cleaned_up(records(2));
}

TEST_F(Launcher, SigintOrSigtermToTheLauncherEndsEveryRank) {
  for (const int sig : {SIGINT, SIGTERM}) {
    const scratch_dir d;
    std::vector<std::string> args{launcher_path(), "-n", "3"};
    for (const std::string& a :
         probe({"--record", d.path(), "--shm", "--sleep", std::to_string(sleeper_s)})) {
      args.push_back(a);
    }
    process_run launcher(args);
    ASSERT_TRUE(wait_for_records(d.path(), 3, seconds(30)));
    ::kill(launcher.pid(), sig);
    const run_result r = launcher.wait();
    ASSERT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 128 + sig);
    expect_one_launcher_line(r, cat("interrupted by signal ", std::to_string(sig)));
    EXPECT_LT(r.elapsed, well_before_sleepers);
    expect_job_cleaned_up(read_records(d.path()));
    clean_up_after(d.path());
  }
}

TEST_F(Launcher, ReaperCleansUpWhenTheLauncherIsKilled) {
  std::vector<std::string> args{launcher_path(), "-n", "3"};
  for (const std::string& a : probe({"--record", dir_.path(), "--shm", "--fork-child", "--sleep",
                                     std::to_string(sleeper_s)})) {
    args.push_back(a);
  }
  process_run launcher(args);
  ASSERT_TRUE(wait_for_records(dir_.path(), 3, seconds(30)));
  ::kill(launcher.pid(), SIGKILL);
  const run_result r = launcher.wait();
  EXPECT_EQ(r.term_signal, SIGKILL);
  const auto recs = records(3);
  std::vector<pid_t> pids = pids_of(recs);
  for (const auto& [rank, rec] : recs) pids.push_back(rec.grandchild);
  // Ranks die of PR_SET_PDEATHSIG, their children of the reaper's kill; all are orphans that
  // this process (a subreaper) reaps.
  EXPECT_EQ(wait_until_gone(pids, seconds(10)), std::vector<pid_t>{});
  const std::string job = recs.begin()->second.job;
  // wait() read stderr to its end, which comes when the reaper exits after its sweep.
  EXPECT_TRUE(contains(r.err, "reaper")) << r.err;
  EXPECT_EQ(job_shm_objects(job), std::vector<std::string>{});
}

// PR_SET_PDEATHSIG on its own: with the reaper killed first, the ranks still die with the
// launcher (what they forked and the job's objects would then stay: the reaper's job).
TEST_F(Launcher, RanksDieWithTheLauncherEvenWithoutItsReaper) {
  std::vector<std::string> args{launcher_path(), "-n", "2"};
  for (const std::string& a :
       probe({"--record", dir_.path(), "--sleep", std::to_string(sleeper_s)})) {
    args.push_back(a);
  }
  process_run launcher(args);
  ASSERT_TRUE(wait_for_records(dir_.path(), 2, seconds(30)));
  const auto recs = records(2);
  const std::vector<pid_t> ranks = pids_of(recs);
  const std::vector<pid_t> children = children_of(launcher.pid());
  if (children.empty()) GTEST_SKIP() << "no /proc/<pid>/task/<tid>/children on this kernel";
  std::vector<pid_t> others;
  for (pid_t c : children) {
    if (std::find(ranks.begin(), ranks.end(), c) == ranks.end()) others.push_back(c);
  }
  ASSERT_EQ(others.size(), 1U) << "the launcher's children besides its ranks: its reaper";
  ::kill(others[0], SIGKILL);
  ASSERT_EQ(wait_until_gone(others, seconds(10)), std::vector<pid_t>{});
  ::kill(launcher.pid(), SIGKILL);
  const run_result r = launcher.wait();
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_EQ(wait_until_gone(ranks, seconds(10)), std::vector<pid_t>{});
  detail::sweep_job_shm(recs.begin()->second.job);  // nobody else will
}

// The control experiment for every "nothing left in /dev/shm" above: without the launcher's
// sweep the probe's object does stay behind.
TEST_F(Launcher, ProbeObjectsOutliveTheProbeWithoutTheLauncher) {
  const std::string job = cat("probe-control-", std::to_string(::getpid()));
  process_run p({probe_path(), "--shm", "--record", dir_.path()},
                {{"ONESIDE_JOB_ID", job}, {"ONESIDE_RANK", "0"}, {"ONESIDE_SIZE", "1"}});
  const run_result r = p.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(job_shm_objects(job), std::vector<std::string>{cat("oneside.", job, ".probe.r0")});
  detail::sweep_job_shm(job);
  EXPECT_EQ(job_shm_objects(job), std::vector<std::string>{});
}

// --- Dead jobs, concurrent jobs, other users ---------------------------------------------

// A live job: ranks of launcher_probe with the runtime open and an object each in /dev/shm,
// holding until release() (--hold). What no other job, no cleanup and no other user may break.
class held_job {
 public:
  explicit held_job(int ranks) : ranks_(ranks) {
    launcher_ = std::make_unique<process_run>(std::vector<std::string>{
        launcher_path(), "-n", std::to_string(ranks), "--bind-to", "none", probe_path(), "--record",
        dir_.path(), "--shm", "--runtime", "--hold", go()});
  }
  held_job(const held_job&) = delete;
  held_job& operator=(const held_job&) = delete;
  ~held_job() {
    if (keep_objects_) {
      for (const auto& [rank, rec] : records()) {
        if (rec.pid > 0 && !process_gone(rec.pid)) ::kill(rec.pid, SIGKILL);
      }
    } else {
      clean_up_after(dir_.path());
    }
  }
  // The destructor leaves the job's objects in /dev/shm (a dead job's, for a cleanup to find).
  void keep_objects() { keep_objects_ = true; }

  // Waits until every rank holds (runtime open, past its first barrier); the job's id.
  std::string wait_holding() const {
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    for (int r = 0; r < ranks_; ++r) {
      while (!fs::exists(cat(go(), ".r", std::to_string(r)))) {
        if (std::chrono::steady_clock::now() > deadline) return {};
        ::usleep(10000);
      }
    }
    const auto recs = read_records(dir_.path());
    return recs.empty() ? std::string() : recs.begin()->second.job;
  }
  // Lets the ranks check that their objects are still there and end; the launcher's result.
  run_result release() {
    std::ofstream(go()).flush();
    return launcher_->wait();
  }
  const process_run& launcher() const { return *launcher_; }
  std::map<int, rank_record> records() const { return read_records(dir_.path()); }

 private:
  std::string go() const { return cat(dir_.path(), "/go"); }
  scratch_dir dir_;
  int ranks_;
  bool keep_objects_ = false;
  std::unique_ptr<process_run> launcher_;
};

// Removes a job's objects at scope exit, whatever the test found.
struct sweep_at_exit {
  std::string job;
  ~sweep_at_exit() {
    if (!job.empty()) detail::sweep_job_shm(job);
  }
};

// A job killed as nothing can clean up after it: its reaper and its launcher die of SIGKILL,
// its ranks with them. Returns its id and the objects it left; empty when this kernel does not
// list a process's children (the reaper cannot be found).
std::pair<std::string, std::vector<std::string>> make_dead_job() {
  held_job dead(2);
  dead.keep_objects();
  const std::string job = dead.wait_holding();
  EXPECT_FALSE(job.empty()) << "the job never started";
  const std::vector<pid_t> ranks = pids_of(dead.records());
  std::vector<pid_t> reaper;
  for (pid_t c : children_of(dead.launcher().pid())) {
    if (std::find(ranks.begin(), ranks.end(), c) == ranks.end()) reaper.push_back(c);
  }
  if (reaper.size() != 1) return {};
  ::kill(reaper[0], SIGKILL);
  EXPECT_EQ(wait_until_gone(reaper, seconds(10)), std::vector<pid_t>{});
  ::kill(dead.launcher().pid(), SIGKILL);
  EXPECT_EQ(wait_until_gone(ranks, seconds(10)), std::vector<pid_t>{});
  std::vector<std::string> left = job_shm_objects(job);
  EXPECT_FALSE(left.empty()) << "the dead job left nothing to clean up";
  return {job, left};
}

// A job whose launcher and reaper were killed, beside a live one: `sweep` (a cleanup, a launch)
// must remove what the dead one left and leave the live one alone, which then ends normally.
// Returns what `sweep` gave; nothing when this kernel does not list a process's children.
std::optional<run_result> sweep_beside_a_live_job(const std::function<run_result()>& sweep) {
  const auto [dead, left] = make_dead_job();
  if (dead.empty()) return std::nullopt;
  const sweep_at_exit leftovers{dead};
  held_job live(2);
  const std::string live_job = live.wait_holding();
  EXPECT_FALSE(live_job.empty());
  const std::vector<std::string> live_objects = job_shm_objects(live_job);
  EXPECT_FALSE(live_objects.empty());

  const run_result r = sweep();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(job_shm_objects(dead), std::vector<std::string>{}) << r.out;
  EXPECT_EQ(job_shm_objects(live_job), live_objects) << "the live job was touched";

  const run_result held = live.release();
  EXPECT_EQ(held.exit_code, 0) << held.err;
  EXPECT_EQ(job_shm_objects(live_job), std::vector<std::string>{});
  return r;
}

TEST_F(Launcher, CleanupRemovesWhatAJobWithoutLauncherAndReaperLeft) {
  const auto r = sweep_beside_a_live_job([] { return run_launcher({"--cleanup"}); });
  if (!r) GTEST_SKIP() << "no /proc/<pid>/task/<tid>/children on this kernel";
  // "removed N shared-memory objects of M dead jobs": at least this one's (other dead jobs of
  // this user may be on the machine too).
  EXPECT_TRUE(contains(r->out, "oneside-run: removed ")) << r->out;
  EXPECT_TRUE(contains(r->out, " dead job")) << r->out;
}

TEST_F(Launcher, EveryLaunchRemovesWhatDeadJobsLeft) {
  const auto r = sweep_beside_a_live_job([&] {
    return run_launcher(with_record({"-n", "1"}, {"--runtime"}));
  });
  if (!r) GTEST_SKIP() << "no /proc/<pid>/task/<tid>/children on this kernel";
  EXPECT_EQ(r->err, "");
}

// Two jobs of one user side by side: each runs to its end normally, and neither's launch,
// end or --cleanup touches the other's objects.
TEST_F(Launcher, TwoConcurrentJobsRunSideBySideAndCleanUpOnlyTheirOwn) {
  held_job a(2);
  held_job b(3);
  const std::string job_a = a.wait_holding();
  const std::string job_b = b.wait_holding();
  ASSERT_FALSE(job_a.empty());
  ASSERT_FALSE(job_b.empty());
  ASSERT_NE(job_a, job_b);
  const std::vector<std::string> objects_a = job_shm_objects(job_a);
  const std::vector<std::string> objects_b = job_shm_objects(job_b);
  ASSERT_FALSE(objects_a.empty());
  ASSERT_FALSE(objects_b.empty());

  const run_result cleanup = run_launcher({"--cleanup"});
  EXPECT_EQ(cleanup.exit_code, 0) << cleanup.err;
  EXPECT_EQ(job_shm_objects(job_a), objects_a);
  EXPECT_EQ(job_shm_objects(job_b), objects_b);

  const run_result rb = b.release();
  EXPECT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(job_shm_objects(job_b), std::vector<std::string>{});
  EXPECT_EQ(job_shm_objects(job_a), objects_a) << "b's end touched a";
  const run_result ra = a.release();
  EXPECT_EQ(ra.exit_code, 0) << ra.err;
  EXPECT_EQ(job_shm_objects(job_a), std::vector<std::string>{});
}

// Another local user sees /dev/shm's listing, so it knows the job's id. It can neither open the
// job's liveness record (to make a dead job look alive, or to lock it), nor remove it (to make a
// live job look dead), and what it creates under the job's names (objects, a symbolic link to a
// file of ours, a record of a made-up job) is neither used nor followed nor removed by the job,
// its end or a cleanup. Needs root, to act as another uid (65534) in a child.
TEST_F(Launcher, AnotherUserCannotBreakOrHijackAJobThroughItsObjects) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another uid needs root";
  held_job live(2);
  const std::string job = live.wait_holding();
  ASSERT_FALSE(job.empty());
  const std::vector<std::string> objects = job_shm_objects(job);
  const std::string record = cat("/oneside.", job, ".live");
  ASSERT_TRUE(fs::exists(cat("/dev/shm", record))) << "no liveness record " << record;
  const scratch_dir target_dir;
  const std::string target = cat(target_dir.path(), "/ours");
  std::ofstream(target) << "ours";
  ::chmod(target_dir.path().c_str(), 0755);
  const std::string fake_job = cat(std::to_string(::getpid()), "-squatter");
  const std::vector<std::string> planted{cat("oneside.", job, ".squat"),
                                         cat("oneside.", fake_job, ".live"),
                                         cat("oneside.", fake_job, ".r0.s1")};
  const std::string link = cat("oneside.", job, ".link");

  // The squatter: 0 when every attempt failed as it must, else the number of the first that
  // succeeded.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(100);
    if (const int fd = ::shm_open(record.c_str(), O_RDONLY, 0); fd >= 0) ::_exit(1);
    if (::shm_unlink(record.c_str()) == 0) ::_exit(2);
    for (const std::string& name : planted) {
      const int fd = ::shm_open(cat("/", name).c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
      if (fd < 0) ::_exit(3);
      ::close(fd);
    }
    if (::symlink(target.c_str(), cat("/dev/shm/", link).c_str()) != 0) ::_exit(4);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 100) GTEST_SKIP() << "cannot become uid 65534 here";
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "the squatter's attempt " << WEXITSTATUS(status) << " succeeded";

  EXPECT_EQ(run_launcher({"--cleanup"}).exit_code, 0);
  const run_result other = run_launcher(with_record({"-n", "2"}, {"--runtime"}));
  EXPECT_EQ(other.exit_code, 0) << other.err;
  for (const std::string& name : planted) {
    EXPECT_TRUE(fs::exists(cat("/dev/shm/", name))) << name << " of the other user was removed";
  }
  EXPECT_TRUE(fs::is_symlink(cat("/dev/shm/", link)));
  EXPECT_EQ(job_shm_objects(job).size(), objects.size() + 2) << "the job's objects changed";
  const run_result held = live.release();
  EXPECT_EQ(held.exit_code, 0) << held.err;
  // The job's end removed its own objects only.
  for (const std::string& name : planted) {
    EXPECT_TRUE(fs::exists(cat("/dev/shm/", name))) << name << " of the other user was removed";
  }
  EXPECT_TRUE(fs::is_symlink(cat("/dev/shm/", link)));
  std::string text;
  std::ifstream(target) >> text;
  EXPECT_EQ(text, "ours") << "the job followed the squatter's link";
  for (const std::string& name : planted) ::shm_unlink(cat("/", name).c_str());
  ::unlink(cat("/dev/shm/", link).c_str());
  EXPECT_EQ(job_shm_objects(job), std::vector<std::string>{});
}

// --- Usage ---------------------------------------------------------------------------------

TEST_F(Launcher, BadUsageExitsWithStatusTwoBeforeStartingAnything) {
  const std::string not_executable = cat(dir_.path(), "/not_executable");
  std::ofstream(not_executable) << "#!/bin/sh\n";
  fs::permissions(not_executable, fs::perms::owner_read | fs::perms::owner_write);
  const scratch_dir rec;
  const std::string p = probe_path();
  const std::vector<std::string> record{"--record", rec.path()};
  struct usage_case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<usage_case> cases = {
      {{}, "missing -n"},
      {{p, "--record", rec.path()}, "missing -n"},
      {{"-n", "0", p}, "-n '0'"},
      {{"-n", "-2", p}, "-n '-2'"},
      {{"-n", "many", p}, "-n 'many'"},
      {{"-n"}, "needs a value"},
      {{"-n", "2"}, "missing the program"},
      {{"-n", "2", "--"}, "missing the program"},
      {{"-n", "2", "/nonexistent/oneside/program"}, "does not exist"},
      {{"-n", "2", "no_such_program_for_oneside_tests"}, "not found in PATH"},
      {{"-n", "2", not_executable}, "is not executable"},
      {{"-n", "2", rec.path()}, "is a directory"},
      {{"--frobnicate", "-n", "2", p}, "unknown option '--frobnicate'"},
      {{"-n", "2", "--bind-to", "socket", p}, "--bind-to 'socket'"},
      {{"-n", "2", "--timeout", "soon", p}, "--timeout 'soon'"},
      {{"-n", "2", "--timeout", "-1", p}, "--timeout '-1'"},
      {{"-n", "2", "--timeout", "1000000001", p}, "from 0 to 1000000000"},
      {{"-n", "65537", p}, "from 1 to 65536"},
      {{"-n", "2", "--tag-output=yes", p}, "takes no value"},
  };
  for (const usage_case& c : cases) {
    std::vector<std::string> args = c.args;
    if (args.size() > 1 && args.back() == p) args.insert(args.end(), record.begin(), record.end());
    const run_result r = run_launcher(args);
    std::string shown;
    for (const std::string& a : c.args) shown.append(a).append(" ");
    EXPECT_EQ(r.exit_code, 2) << shown << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.message)) << shown << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "--help")) << shown << "\n" << r.err;
    EXPECT_EQ(r.out, "") << shown;
  }
  EXPECT_TRUE(read_records(rec.path()).empty()) << "a rank was started despite bad usage";
}

// --- Settings (issue 18, item 6) -----------------------------------------------------------

// Bad values of `s`, one of each kind it can have: out of range on either side, malformed,
// an unknown unit, not a boolean, not one of the choices.
std::vector<std::string> bad_values(const setting_info& s) {
  switch (s.type) {
    case setting_type::integer:
    case setting_type::size: {
      const auto [low, high] = detail::setting_limits(s.name);
      std::vector<std::string> v{std::to_string(high + 1), "12x", "-1", ""};
      if (low > 0) v.push_back(std::to_string(low - 1));
      if (s.type == setting_type::size) v.emplace_back("4Q");
      return v;
    }
    case setting_type::boolean:
      return {"maybe"};
    case setting_type::choice:
      return {"bogus"};
    case setting_type::string:
      break;
  }
  return {};
}

struct bad_setting {
  std::vector<std::pair<std::string, std::string>> env;
  std::string name;   // the setting the one line must name
  std::string valid;  // and what it must say is valid
};

// Every setting a user sets, with each of its bad values.
std::vector<bad_setting> bad_user_settings() {
  std::vector<bad_setting> out;
  for (const setting_info& s : all_settings()) {
    if (s.set_by_launcher) continue;
    for (const std::string& v : bad_values(s)) {
      out.push_back({{{std::string(s.name), v}}, std::string(s.name), valid_values(s)});
    }
  }
  return out;
}

std::string shown(const std::vector<std::pair<std::string, std::string>>& env) {
  std::string s;
  for (const auto& [k, v] : env) s.append(k).append("='").append(v).append("' ");
  return s;
}

// Through oneside-run: status 2, one line naming the setting and its valid values (and the
// pointer to --settings), no rank started, no shared memory created.
TEST_F(Launcher, EveryBadSettingStopsTheLauncherBeforeAnythingStarts) {
  const std::vector<bad_setting> cases = bad_user_settings();
  ASSERT_GT(cases.size(), 60U);
  for (const bad_setting& c : cases) {
    std::vector<std::string> argv = with_record({"-n", "2"}, {"--runtime"});
    argv.insert(argv.begin(), launcher_path());
    process_run p(argv, c.env);
    const pid_t launcher = p.pid();
    const run_result r = p.wait();
    EXPECT_EQ(r.exit_code, 2) << shown(c.env) << "\n" << r.err;
    const std::vector<std::string> lines = lines_starting(r.err, "oneside-run: ");
    ASSERT_EQ(lines.size(), 1U) << shown(c.env) << "\n" << r.err;
    EXPECT_TRUE(contains(lines[0], c.name)) << lines[0];
    EXPECT_TRUE(contains(lines[0], c.valid)) << lines[0];
    EXPECT_EQ(lines_of(r.err).size(), 2U) << r.err;
    EXPECT_TRUE(contains(r.err, "--settings")) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(shm_objects_of_process(launcher), std::vector<std::string>{}) << shown(c.env);
  }
  EXPECT_TRUE(read_records(dir_.path()).empty()) << "a rank was started despite bad settings";
}

// The launcher-to-rank variables by hand, as a program started without oneside-run would see
// them (ONESIDE_JOB_ID makes the runtime join a launcher's job).
std::vector<bad_setting> bad_protocol_settings() {
  const std::vector<std::pair<std::string, std::string>> good = {
      {"ONESIDE_JOB_ID", "123-abc"}, {"ONESIDE_RANK", "1"},       {"ONESIDE_SIZE", "2"},
      {"ONESIDE_LOCAL_RANK", "1"},   {"ONESIDE_LOCAL_SIZE", "2"}, {"ONESIDE_BINDING", "none"}};
  auto with = [&](const std::string& name, const std::string& value) {
    auto env = good;
    for (auto& [k, v] : env) {
      if (k == name) v = value;
    }
    return env;
  };
  auto without = [&](const std::string& name) {
    auto env = good;
    std::erase_if(env, [&](const auto& kv) { return kv.first == name; });
    return env;
  };
  return {
      {with("ONESIDE_JOB_ID", "../etc"), "ONESIDE_JOB_ID", "do not set them by hand"},
      {with("ONESIDE_RANK", "one"), "ONESIDE_RANK", "0 to 65535"},
      {with("ONESIDE_RANK", "2"), "ONESIDE_RANK=2", "ONESIDE_SIZE=2"},
      {with("ONESIDE_SIZE", "0"), "ONESIDE_SIZE", "1 to 65536"},
      {with("ONESIDE_LOCAL_SIZE", "3"), "ONESIDE_LOCAL_SIZE=3", "ONESIDE_SIZE=2"},
      {with("ONESIDE_BINDING", "socket"), "ONESIDE_BINDING", "core|numa|none"},
      {[&] {
         auto env = good;
         env.emplace_back("ONESIDE_SPARE_PUS", "1-x");
         return env;
       }(),
       "ONESIDE_SPARE_PUS=1-x", "list of PU indices"},
      {without("ONESIDE_SIZE"), "ONESIDE_JOB_ID is set without ONESIDE_SIZE",
       "do not set them by hand"},
  };
}

// A program started bare (or by mpirun) checks the same at the runtime's open: status 2 and
// one line, no "terminate called" abort, no shared memory.
TEST_F(Launcher, EveryBadSettingStopsABareProgramAtTheOpen) {
  std::vector<bad_setting> cases = bad_user_settings();
  for (bad_setting& c : bad_protocol_settings()) cases.push_back(std::move(c));
  for (const bad_setting& c : cases) {
    process_run p({probe_path(), "--runtime"}, c.env);
    const pid_t program = p.pid();
    const run_result r = p.wait();
    EXPECT_EQ(r.exit_code, 2) << shown(c.env) << "\n" << r.err;
    const std::vector<std::string> lines = lines_of(r.err);
    ASSERT_EQ(lines.size(), 1U) << shown(c.env) << "\n" << r.err;
    EXPECT_TRUE(lines[0].starts_with("oneside: ")) << lines[0];
    EXPECT_TRUE(contains(lines[0], c.name)) << lines[0];
    EXPECT_TRUE(contains(lines[0], c.valid)) << lines[0];
    EXPECT_FALSE(contains(r.err, "terminate called")) << r.err;
    EXPECT_EQ(shm_objects_of_process(program), std::vector<std::string>{}) << shown(c.env);
  }
}

// The three cases of the issue: an abort of every rank, an unbounded allocation, a crash at
// close. Each is now refused with one line, through the launcher and at a bare open.
TEST_F(Launcher, TheIssuesBadSettingsAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ONESIDE_TRANSPORT", "foo"},
      {"ONESIDE_AM_SLOTS", "100000000"},
      {"ONESIDE_TASK_THREADS", "100000"}};
  for (const auto& setting : cases) {
    const run_result launched = run_launcher(with_record({"-n", "2"}, {"--runtime"}), {setting});
    EXPECT_EQ(launched.exit_code, 2) << setting.first << "\n" << launched.err;
    expect_one_launcher_line(launched, setting.first);
    process_run bare({probe_path(), "--runtime"}, {setting});
    const run_result r = bare.wait();
    EXPECT_EQ(r.exit_code, 2) << setting.first << "\n" << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1U) << r.err;
    EXPECT_TRUE(contains(r.err, setting.first)) << r.err;
  }
  EXPECT_TRUE(read_records(dir_.path()).empty());
}

// All problems are reported, one line each, not only the first.
TEST_F(Launcher, EveryProblemOfTheEnvironmentIsReported) {
  const run_result r =
      run_launcher(with_record({"-n", "2"}, {"--runtime"}), {{"ONESIDE_AM_SLOTS", "1"},
                                                             {"ONESIDE_TRANSPORT", "foo"},
                                                             {"ONESIDE_AM_SLOT_BYTES", "16M"},
                                                             {"ONESIDE_COLL_SLOTS", "64"},
                                                             {"ONESIDE_COLL_SLOT_BYTES", "64M"},
                                                             {"ONESIDE_TIMOUT", "5"}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const std::vector<std::string> lines = lines_starting(r.err, "oneside-run: ");
  ASSERT_EQ(lines.size(), 4U) << r.err;
  // In the registry's order, then the combinations, then unknown names.
  EXPECT_TRUE(contains(lines[0], "ONESIDE_TRANSPORT='foo' is not one of auto|shm|mpi"));
  EXPECT_TRUE(contains(lines[1], "ONESIDE_AM_SLOTS='1' is out of range; valid: 2 to 65536"));
  EXPECT_TRUE(contains(lines[2], "ONESIDE_COLL_SLOTS=64 times ONESIDE_COLL_SLOT_BYTES=64M"))
      << lines[2];
  EXPECT_TRUE(contains(lines[3],
                       "ONESIDE_TIMOUT is not a oneside setting; did you mean "
                       "ONESIDE_TIMEOUT?"))
      << lines[3];
  EXPECT_TRUE(read_records(dir_.path()).empty());
}

// A misspelt setting is an error with a suggestion, through the launcher and at the open; an
// unknown name far from every setting is a warning, and the job runs.
TEST_F(Launcher, MisspeltSettingsAreErrorsAndOtherNamesWarnings) {
  const std::vector<std::pair<std::string, std::string>> misspelt = {
      {"ONESIDE_AM_SLOT", "ONESIDE_AM_SLOTS"},
      {"ONESIDE_KILL_GRACE", "ONESIDE_KILL_GRACE_MS"},
      {"oneside_transport", "ONESIDE_TRANSPORT"},
      {"ONESDIE_TASK_THREADS", "ONESIDE_TASK_THREADS"},
      {"ONESIDE_WAIT_SPIN_US", "ONESIDE_WAIT_SPIN_NS"}};
  for (const auto& [name, meant] : misspelt) {
    const std::string line = cat(name, " is not a oneside setting; did you mean ", meant, "?");
    const run_result r = run_launcher(with_record({"-n", "1"}, {}), {{name, "1"}});
    EXPECT_EQ(r.exit_code, 2) << name << "\n" << r.err;
    expect_one_launcher_line(r, line);
    process_run bare({probe_path(), "--runtime"}, {{name, "1"}});
    const run_result b = bare.wait();
    EXPECT_EQ(b.exit_code, 2) << name << "\n" << b.err;
    EXPECT_EQ(b.err, cat("oneside: ", line, "\n"));
  }
  EXPECT_TRUE(read_records(dir_.path()).empty());

  const std::string warning = "ONESIDE_FROBNICATE is not a oneside setting and is ignored";
  const run_result r =
      run_launcher(with_record({"-n", "2"}, {"--runtime"}), {{"ONESIDE_FROBNICATE", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_one_launcher_line(r, cat("warning: ", warning));
  expect_job_cleaned_up(records(2));
  process_run bare({probe_path(), "--runtime"}, {{"ONESIDE_FROBNICATE", "1"}});
  const run_result b = bare.wait();
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_TRUE(contains(b.err, cat("oneside: warning: ", warning))) << b.err;
}

// Launcher-to-rank variables set by hand for oneside-run are replaced, and the user is told.
TEST_F(Launcher, LauncherVariablesSetByHandAreReplacedWithAWarning) {
  const run_result r = run_launcher(with_record({"-n", "2"}, {"--runtime"}),
                                    {{"ONESIDE_SIZE", "8"}, {"ONESIDE_RANK", "5"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "oneside-run: warning: ONESIDE_RANK='5' is ignored: oneside-run "
                       "sets it for each rank\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err,
                       "oneside-run: warning: ONESIDE_SIZE='8' is ignored: oneside-run "
                       "sets it for each rank (use -n)\n"))
      << r.err;
  const auto recs = records(2);
  for (const auto& [rank, rec] : recs) EXPECT_EQ(rec.size, 2);
  expect_job_cleaned_up(recs);
}

TEST_F(Launcher, SettingsFlagsInvalidValuesAndUnknownNames) {
  const run_result r = run_launcher(
      {"--settings"}, {{"ONESIDE_AM_SLOTS", "0"}, {"ONESIDE_AM_SLOT", "1"}, {"ONESIDE_ZZZ", "1"}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.out,
                       "current: 0 (from the environment)  INVALID: ONESIDE_AM_SLOTS='0' "
                       "is out of range; valid: 2 to 65536\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  error: ONESIDE_AM_SLOTS='0' is out of range")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "  error: ONESIDE_AM_SLOT is not a oneside setting; did you mean "
                       "ONESIDE_AM_SLOTS?\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  warning: ONESIDE_ZZZ is not a oneside setting")) << r.out;
  // Warnings alone do not fail it.
  const run_result w = run_launcher({"--settings"}, {{"ONESIDE_ZZZ", "1"}});
  EXPECT_EQ(w.exit_code, 0) << w.err;
}

TEST_F(Launcher, HelpListsEveryOption) {
  for (const char* flag : {"--help", "-h"}) {
    const run_result r = run_launcher({flag});
    EXPECT_EQ(r.exit_code, 0);
    for (const char* option :
         {"-n", "-np", "--bind-to", "--report-bindings", "--timeout", "--tag-output", "--settings",
          "--cleanup", "--help", "--version", "124"}) {
      EXPECT_TRUE(contains(r.out, option)) << option;
    }
  }
}

TEST_F(Launcher, VersionPrintsTheVersion) {
  const run_result r = run_launcher({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, cat("oneside-run (oneside) ", version_string, "\n"));
}

TEST_F(Launcher, SettingsListsTheWholeRegistry) {
  const run_result r = run_launcher({"--settings"}, {{"ONESIDE_TIMEOUT", "7"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const setting_info& s : all_settings()) {
    EXPECT_TRUE(contains(r.out, cat(s.name, "\n"))) << s.name;
    EXPECT_TRUE(contains(r.out, std::string(s.meaning))) << s.name;
  }
  EXPECT_TRUE(contains(r.out, "current: 7 (from the environment)")) << r.out;
  EXPECT_TRUE(contains(r.out, "default: 256   valid: 2 to 65536\n")) << r.out;
  EXPECT_FALSE(contains(r.out, "INVALID")) << r.out;
}

// --- Output ----------------------------------------------------------------------------------

TEST_F(Launcher, TagOutputPrefixesEveryLineAndKeepsStreamsApart) {
  const run_result r = run_launcher({"-n", "3", "--tag-output", probe_path(), "--print-lines"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> out = lines_of(r.out);
  const std::vector<std::string> err = lines_of(r.err);
  EXPECT_EQ(out.size(), 9U) << r.out;
  EXPECT_EQ(err.size(), 6U) << r.err;
  for (const std::string& l : out) {
    EXPECT_TRUE(l.size() > 4 && l[0] == '[' && l[2] == ']' && l[3] == ' ') << l;
    EXPECT_FALSE(contains(l, "err")) << l;
  }
  for (int rank = 0; rank < 3; ++rank) {
    const std::string tag = cat("[", std::to_string(rank), "] ");
    for (const char* text : {"out one", "out two", "out partial"}) {
      EXPECT_EQ(std::count(out.begin(), out.end(), cat(tag, text)), 1) << tag << text;
    }
    for (const char* text : {"err one", "err partial"}) {
      EXPECT_EQ(std::count(err.begin(), err.end(), cat(tag, text)), 1) << tag << text;
    }
  }
}

TEST_F(Launcher, WithoutTagOutputOutputIsUntouched) {
  const run_result r = run_launcher({"-n", "1", probe_path(), "--print-lines"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "out one\nout two\nout partial");
  EXPECT_EQ(r.err, "err one\nerr partial");
}

// --- Binding ---------------------------------------------------------------------------------

TEST_F(Launcher, BindToCoreGivesEachRankItsOwnCore) {
  if (detail::available_resources().cores < 2) GTEST_SKIP() << "needs at least two cores";
  const run_result r = run_launcher(with_record({"-n", "2", "--bind-to", "core"}, {}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto recs = records(2);
  ASSERT_EQ(recs.size(), 2U);
  const rank_record& a = recs.at(0);
  const rank_record& b = recs.at(1);
  for (const rank_record* rec : {&a, &b}) {
    EXPECT_EQ(rec->binding, "core");
    EXPECT_FALSE(rec->affinity.empty());
    EXPECT_EQ(rec->topo_cores.size(), 1U) << "rank " << rec->rank << " spans several cores";
    EXPECT_TRUE(rec->topo_bound);
  }
  std::vector<int> common;
  std::set_intersection(a.affinity.begin(), a.affinity.end(), b.affinity.begin(), b.affinity.end(),
                        std::back_inserter(common));
  EXPECT_TRUE(common.empty()) << "ranks 0 and 1 share PUs";
  EXPECT_NE(a.topo_cores, b.topo_cores);
}

TEST_F(Launcher, DefaultBindsToCoreWhileRanksFit) {
  const run_result r = run_launcher(with_record({"-n", "1"}, {}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto recs = records(1);
  ASSERT_TRUE(recs.contains(0));
  EXPECT_EQ(recs.at(0).binding, "core");
  EXPECT_EQ(recs.at(0).topo_cores.size(), 1U);
}

TEST_F(Launcher, OversubscribedJobsAreNotBoundByDefault) {
  const int n = std::max(8, this_machine().cores + 1);
  const run_result r = run_launcher(with_record({"-n", std::to_string(n)}, {}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto recs = records(n);
  for (const auto& [rank, rec] : recs) {
    EXPECT_EQ(rec.binding, "none") << rank;
    EXPECT_EQ(rec.affinity, own_affinity()) << rank;
  }
}

TEST_F(Launcher, BindToCoreWithMoreRanksThanCoresIsAnError) {
  const int n = this_machine().cores + 1;
  const run_result r =
      run_launcher(with_record({"-n", std::to_string(n), "--bind-to", "core"}, {}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--bind-to none")) << r.err;
  EXPECT_TRUE(read_records(dir_.path()).empty());
}

TEST_F(Launcher, BindToNumaPlacesRanksRoundRobin) {
  const int n = this_machine().numa_nodes + 1;  // at least one node gets two ranks
  const run_result r =
      run_launcher(with_record({"-n", std::to_string(n), "--bind-to", "numa"}, {}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto recs = records(n);
  for (const auto& [rank, rec] : recs) {
    EXPECT_EQ(rec.binding, "numa");
    EXPECT_FALSE(rec.affinity.empty());
  }
  EXPECT_EQ(recs.at(0).affinity, recs.at(n - 1).affinity) << "rank " << n - 1 << " wraps around";
}

TEST_F(Launcher, ReportBindingsPrintsOneLinePerRank) {
  const run_result none =
      run_launcher({"-n", "3", "--bind-to", "none", "--report-bindings", probe_path()});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  const std::vector<std::string> lines = lines_starting(none.err, "oneside-run: rank ");
  ASSERT_EQ(lines.size(), 3U) << none.err;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(lines[static_cast<std::size_t>(rank)].starts_with(
        cat("oneside-run: rank ", std::to_string(rank), " not bound (PUs ")))
        << lines[static_cast<std::size_t>(rank)];
  }
  const run_result core =
      run_launcher({"-n", "1", "--bind-to", "core", "--report-bindings", probe_path()});
  EXPECT_EQ(core.exit_code, 0) << core.err;
  const std::vector<std::string> core_lines = lines_starting(core.err, "oneside-run: rank ");
  ASSERT_EQ(core_lines.size(), 1U) << core.err;
  EXPECT_TRUE(core_lines[0].starts_with("oneside-run: rank 0 bound to core ")) << core_lines[0];
}

}  // namespace
}  // namespace oneside::test
