// Faults (issue 18): a rank killed with SIGKILL at a random point of every synchronization mode
// (holding a lock, inside a fence, between start and complete, inside a collective or a heap
// operation) ends the job promptly, naming the rank, with no rank left running and nothing
// left in /dev/shm, on the shm transport (oneside-run) and on the MPI transport (mpirun).
// Each case draws fresh kill points, two per mode and transport (the seed is printed with any
// failure); the long version repeats them (--gtest_repeat=N, scripts/soak.sh).
#include <algorithm>
#include <filesystem>
#include <random>
#include <signal.h>
#include <sstream>

#include <gtest/gtest.h>

#include "launcher_harness.hpp"

namespace oneside::test {
namespace {

using std::chrono::seconds;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::vector<std::string> modes{"fence", "pscw", "lock", "lock_all", "collective", "pgas"};

constexpr int rounds_per_mode = 2;

std::uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) | rd();
}

// The job id rank 0 printed ("job <id>"), or empty.
std::string job_of(const std::string& out) {
  for (const std::string& line : lines_starting(out, "job ")) return line.substr(4);
  return {};
}

class Fault : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { become_subreaper(); }
  void TearDown() override { reap_adopted_children(); }
};

TEST_P(Fault, ARankKilledAnywhereEndsTheJobCleanlyOnShm) {
  const std::string probe = ONESIDE_TEST_FAULT_PROBE;
  for (int i = 0; i < rounds_per_mode; ++i) {
    const std::uint64_t seed = fresh_seed();
    const int victim = static_cast<int>(seed % 3);
    std::ostringstream what;
    what << "mode " << GetParam() << ", victim " << victim << ", seed " << seed;
    const run_result r =
        run_launcher({"-n", "3", probe, GetParam(), std::to_string(victim), std::to_string(seed)},
                     {{"ONESIDE_HANG_TIMEOUT", "30"}}, seconds(60));
    ASSERT_FALSE(r.timed_out) << what.str() << ": the job hung\n" << r.err;
    EXPECT_EQ(r.exit_code, 128 + SIGKILL) << what.str() << "\n" << r.err;
    EXPECT_TRUE(contains(
        r.err, "oneside-run: rank " + std::to_string(victim) + " killed by signal 9 (Killed)"))
        << what.str() << "\n"
        << r.err;
    EXPECT_LT(r.elapsed, seconds(20)) << what.str();
    const std::string job = job_of(r.out);
    ASSERT_FALSE(job.empty()) << what.str() << "\n" << r.out;
    EXPECT_EQ(job_shm_objects(job), std::vector<std::string>{}) << what.str();
  }
}

#if defined(ONESIDE_TEST_MPIEXEC)
// The names of oneside's objects in /dev/shm that start with `prefix`.
std::vector<std::string> objects_starting(const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(prefix)) names.push_back(name);
  }
  return names;
}

// mpirun ends the job when a rank dies; nothing the job made in /dev/shm survives the next
// sweep of dead jobs (its objects are named after rank 0's pid).
TEST_P(Fault, ARankKilledAnywhereEndsTheJobCleanlyOnMpi) {
  const std::string probe = ONESIDE_TEST_FAULT_PROBE;
  std::vector<std::string> mpirun;
  std::istringstream flags(ONESIDE_TEST_MPIEXEC);
  for (std::string f; std::getline(flags, f, '|');) mpirun.push_back(f);
  for (int i = 0; i < rounds_per_mode; ++i) {
    const std::uint64_t seed = fresh_seed();
    const int victim = static_cast<int>(seed % 3);
    std::ostringstream what;
    what << "mode " << GetParam() << ", victim " << victim << ", seed " << seed;
    std::vector<std::string> argv = mpirun;
    argv.insert(argv.end(),
                {"-n", "3", probe, GetParam(), std::to_string(victim), std::to_string(seed)});
    process_run run(argv, {{"ONESIDE_TRANSPORT", "mpi"},
                           {"ONESIDE_HANG_TIMEOUT", "30"},
                           {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                           {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}});
    const run_result r = run.wait(seconds(90));
    ASSERT_FALSE(r.timed_out) << what.str() << ": the job hung\n" << r.err;
    EXPECT_NE(r.exit_code, 0) << what.str() << "\n" << r.err;
    EXPECT_LT(r.elapsed, seconds(60)) << what.str();
    const std::vector<std::string> pid = lines_starting(r.out, "pid ");
    ASSERT_EQ(pid.size(), 1U) << what.str() << "\n" << r.out;
    // mpirun may return while the ranks it signalled are still exiting (they hold their
    // liveness records until then); none may be left running.
    EXPECT_TRUE(wait_for_adopted_children(seconds(30))) << what.str() << ": ranks outlived mpirun";
    // Ranks that mpirun killed leave their liveness records (and what a SIGKILL cut short):
    // the next oneside-run, or --cleanup, removes what no live process holds.
    const run_result cleanup = run_launcher({"--cleanup"}, {}, seconds(20));
    EXPECT_EQ(cleanup.exit_code, 0) << cleanup.out << cleanup.err;
    EXPECT_EQ(objects_starting("oneside." + pid[0].substr(4) + "-"), std::vector<std::string>{})
        << what.str();
  }
}
#endif

INSTANTIATE_TEST_SUITE_P(EverySyncMode, Fault, ::testing::ValuesIn(modes),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           std::erase(name, '_');
                           return name;
                         });

}  // namespace
}  // namespace oneside::test
