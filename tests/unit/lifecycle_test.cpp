// The runtime's life in one process: using oneside before open or after close is a clear
// error (not a crash), opening twice is an error, a program without the launcher is a job
// of one rank, a closed runtime can be opened again, handles that outlive close are harmless,
// and bad settings end the process at the open with a line naming the setting.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include <oneside/oneside.hpp>

#include "runtime/transport.hpp"

namespace oneside {
namespace {

template <class F>
void expect_not_open(F&& f, const char* what) {
  try {
    f();
    ADD_FAILURE() << what << ": worked without an open runtime";
  } catch (const error& e) {
    EXPECT_EQ(e.error_class(), error_class::not_open) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("not open"), std::string::npos) << e.what();
  }
}

void expect_every_entry_point_refuses() {
  expect_not_open([] { (void)world(); }, "world()");
  expect_not_open([] { (void)local_team(); }, "local_team()");
  expect_not_open([] { (void)transport::current(); }, "transport::current()");
  expect_not_open([] { (void)this_rank_arena(); }, "this_rank_arena()");
  expect_not_open([] { barrier(team()); }, "barrier()");
  expect_not_open([] { (void)group({0}); }, "group()");
  EXPECT_FALSE(is_open());
}

TEST(Lifecycle, UseBeforeOpenIsAnError) {
  expect_every_entry_point_refuses();
}

TEST(Lifecycle, WithoutALauncherAProgramIsOneRank) {
  runtime rt;
  EXPECT_TRUE(is_open());
  EXPECT_EQ(rt.rank(), 0);
  EXPECT_EQ(rt.size(), 1);
  EXPECT_EQ(world().size(), 1);
  EXPECT_EQ(local_team().size(), 1);
  EXPECT_EQ(allreduce(world(), 5, op::sum), 5);
  barrier(world());
  EXPECT_GE(this_rank_arena().max_concurrency(), 1);
}

TEST(Lifecycle, UseAfterCloseIsAnErrorAndHandlesStayHarmless) {
  team kept;
  transport::segment seg;
  {
    runtime rt;
    kept = world();
    seg = transport::current().allocate_segment(4096);
    rt.close();
    rt.close();  // twice is harmless
    EXPECT_FALSE(is_open());
    expect_every_entry_point_refuses();
    expect_not_open([&] { (void)kept.size(); }, "a team kept past close");
  }
  // `kept` and `seg` are destroyed after the runtime: no crash.
}

TEST(Lifecycle, ContainersKeptPastCloseRefuseWithNotOpenAndStayHarmless) {
  std::optional<dist_hash_map<int, int>> map;
  std::optional<dist_bag<int>> bag;
  {
    runtime rt;
    map.emplace();
    bag.emplace();
    EXPECT_TRUE(map->insert(1, 10));
    bag->push_local(5);
    rt.close();
    expect_not_open([&] { (void)map->insert(2, 20); }, "dist_hash_map::insert");
    expect_not_open([&] { (void)map->find(1); }, "dist_hash_map::find");
    expect_not_open([&] { (void)map->erase_async(1); }, "dist_hash_map::erase_async");
    expect_not_open([&] { map->update(1, [](int& v) { ++v; }); }, "dist_hash_map::update");
    expect_not_open([&] { bag->push(0, 6); }, "dist_bag::push");
    expect_not_open([&] { bag->push_local(7); }, "dist_bag::push_local");
    // Nothing changed.
    EXPECT_EQ(map->local_size(), 1U);
    int seen = 0;
    map->for_each_local([&](const int& k, int& v) { seen += k * 100 + v; });
    EXPECT_EQ(seen, 110);
    EXPECT_EQ(bag->local_size(), 1U);
  }
  // Destroyed after the runtime: no crash.
  map.reset();
  bag.reset();
}

TEST(Lifecycle, OpeningTwiceIsAnErrorAndReopeningWorks) {
  {
    runtime rt;
    try {
      runtime again;
      ADD_FAILURE() << "a second runtime opened";
    } catch (const error& e) {
      // As runtime.hpp and docs/semantics.md say: arg, not not_open.
      EXPECT_EQ(e.error_class(), error_class::arg) << e.what();
      EXPECT_NE(std::string(e.what()).find("already open"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(is_open()) << "the failed open left the first runtime alone";
  }
  runtime rt2;
  EXPECT_EQ(allreduce(world(), 2, op::sum), 2);
}

// Shared-memory objects of oneside this process has mapped (a closed transport keeps its rank
// page mapped, and with it the page's memory, until it is destroyed).
int oneside_mappings() {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return -1;
  int n = 0;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    if (std::strstr(line, "/dev/shm/oneside.") != nullptr) ++n;
  }
  std::fclose(maps);
  return n;
}

TEST(Lifecycle, AClosedRuntimeGoesOnceNoHandleRefersToIt) {
  const int before = oneside_mappings();
  // Opened and closed many times: nothing of the closed runtimes stays (issue 18: every closed
  // transport used to stay until exit, with its rank page).
  for (int i = 0; i < 20; ++i) {
    runtime rt;
    barrier(world());
  }
  EXPECT_EQ(oneside_mappings(), before);
  // A handle that outlives the close keeps its transport (it may release into it) until it goes.
  transport::segment kept;
  {
    runtime rt;
    kept = transport::current().allocate_segment(4096);
  }
  EXPECT_GT(oneside_mappings(), before);
  kept = transport::segment();
  runtime rt;  // the next open sweeps it
  rt.close();
  EXPECT_EQ(oneside_mappings(), before);
}

TEST(Lifecycle, LeavingByExceptionClosesLocally) {
  try {
    runtime rt;
    throw std::runtime_error("rank fails");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(is_open());
  runtime rt;  // and the process can open again
  EXPECT_TRUE(is_open());
}

// A bad setting ends the process at the open, before anything is created: one line naming the
// setting and its valid values, exit status 2 (not an exception that aborts with "terminate
// called"; issue 18).
TEST(Lifecycle, BadSettingsEndTheProcessAtTheOpenNamingTheSetting) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // earlier tests started the runtime's threads
  struct env_guard {
    const char* name;
    ~env_guard() { ::unsetenv(name); }
  };
  for (const auto& [name, value, says] :
       {std::tuple{"ONESIDE_AM_SLOTS", "lots",
                   "ONESIDE_AM_SLOTS='lots' is not an integer; "
                   "valid: 2 to 65536"},
        std::tuple{"ONESIDE_COLL_SLOT_BYTES", "12Q",
                   "ONESIDE_COLL_SLOT_BYTES='12Q' has an unknown "
                   "unit"},
        std::tuple{"ONESIDE_AGENT", "sometimes",
                   "ONESIDE_AGENT='sometimes' is not one of "
                   "thread\\|poll"},
        std::tuple{"ONESIDE_TRANSPORT", "carrier-pigeon", "ONESIDE_TRANSPORT='carrier-pigeon'"},
        std::tuple{"ONESIDE_TASK_THREADS", "100000",
                   "ONESIDE_TASK_THREADS='100000' is out of "
                   "range; valid: 0 to 1024"}}) {
    env_guard g{name};
    ::setenv(name, value, 1);
    EXPECT_EXIT({ runtime rt; }, ::testing::ExitedWithCode(2), std::string("^oneside: ") + says);
  }
  EXPECT_FALSE(is_open());
  runtime rt;  // the environment is good again
  EXPECT_TRUE(is_open());
}

}  // namespace
}  // namespace oneside
