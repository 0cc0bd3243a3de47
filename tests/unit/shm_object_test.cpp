// Shared-memory objects (runtime/transport/shm/shm_object.hpp, issue 18): against squatting
// (names carry random bits, a taken name is reported to the caller, who retries, and an object
// that is not this user's alone is never mapped); reserved memory (an object is backed when it
// is made, or part by part, and what /dev/shm has no room for is no_mem naming its free space,
// leaving nothing behind); and the liveness records that tell dead jobs' objects, which a sweep
// removes, from live ones.
#include "transport/shm/shm_object.hpp"

#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include <oneside/runtime/error.hpp>

namespace {

using oneside::detail::make_job_id;
using oneside::detail::shm_name;
using oneside::detail::shm_object;

std::string fresh_name() {
  return shm_name(make_job_id(), "test");
}

// Creates `name` outside shm_object, as another process would, with `mode`.
int make_raw(const std::string& name, mode_t mode) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd >= 0) {
    EXPECT_EQ(::ftruncate(fd, 4096), 0);
    EXPECT_EQ(::fchmod(fd, mode), 0);
  }
  return fd;
}

TEST(ShmObject, JobIdsCarryRandomBits) {
  const std::string a = make_job_id();
  const std::string b = make_job_id();
  EXPECT_NE(a, b);
  // "<pid>-<16 hex digits>"
  const std::size_t dash = a.find('-');
  ASSERT_NE(dash, std::string::npos);
  EXPECT_EQ(a.size() - dash - 1, 16U) << a;
  EXPECT_NE(oneside::detail::random_u64(), oneside::detail::random_u64());
}

TEST(ShmObject, ATakenNameIsReportedAndLeftAlone) {
  const std::string name = fresh_name();
  const int fd = make_raw(name, 0600);
  ASSERT_GE(fd, 0);
  shm_object out;
  EXPECT_FALSE(shm_object::try_create(out, name, 8192));
  EXPECT_EQ(out.data(), nullptr);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 4096) << "the existing object was changed";
  ::close(fd);
  ::shm_unlink(name.c_str());
  EXPECT_TRUE(shm_object::try_create(out, name, 8192));
  EXPECT_NE(out.data(), nullptr);
  out.unlink();
}

TEST(ShmObject, AnObjectOthersMayAccessIsRefused) {
  const std::string name = fresh_name();
  const int fd = make_raw(name, 0644);
  ASSERT_GE(fd, 0);
  ::close(fd);
  try {
    shm_object o(name, 0, shm_object::mode::open);
    ADD_FAILURE() << "an object of mode 0644 was opened";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), oneside::error_class::intern);
    EXPECT_NE(std::string(e.what()).find("not this job's"), std::string::npos) << e.what();
  }
  ::shm_unlink(name.c_str());
}

TEST(ShmObject, AnotherUsersObjectIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "making an object of another uid needs root";
  const std::string name = fresh_name();
  const int fd = make_raw(name, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fchown(fd, 65534, 65534), 0);
  ::close(fd);
  try {
    shm_object o(name, 0, shm_object::mode::open);
    ADD_FAILURE() << "another user's object was opened";
  } catch (const oneside::error& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to uid 65534"), std::string::npos) << e.what();
  }
  ::shm_unlink(name.c_str());
}

// ---- reserved memory -------------------------------------------------------------------

// Bytes of memory behind the object `name` (what tmpfs has allocated to it).
std::size_t backed_bytes(const std::string& name) {
  struct stat st {};
  if (::stat(("/dev/shm" + name).c_str(), &st) != 0) return 0;
  return static_cast<std::size_t>(st.st_blocks) * 512;
}

bool exists(const std::string& name) {
  struct stat st {};
  return ::lstat(("/dev/shm" + name).c_str(), &st) == 0;
}

std::size_t shm_free() {
  struct statvfs s {};
  if (::statvfs("/dev/shm", &s) != 0 || s.f_blocks == 0) return 0;
  return static_cast<std::size_t>(s.f_bavail) * static_cast<std::size_t>(s.f_frsize);
}

void expect_no_mem(const std::function<void()>& f, const std::string& call) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), oneside::error_class::no_mem) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find(call + ": cannot reserve "), std::string::npos) << what;
    EXPECT_NE(what.find(" of shared memory: /dev/shm has "), std::string::npos) << what;
    EXPECT_NE(what.find(" free"), std::string::npos) << what;
  }
}

TEST(ShmObject, ACreatedObjectIsReservedWhole) {
  const std::string name = fresh_name();
  shm_object o(name, 1 << 20, shm_object::mode::create);
  EXPECT_GE(backed_bytes(name), std::size_t{1} << 20);
  o.unlink();
}

TEST(ShmObject, AnObjectBeyondTheFreeSpaceIsNoMemAndLeavesNothing) {
  const std::size_t free = shm_free();
  if (free == 0) GTEST_SKIP() << "/dev/shm has no size limit";
  for (const std::size_t bytes : {free + (std::size_t{64} << 20), std::size_t{1} << 40}) {
    const std::string name = fresh_name();
    expect_no_mem([&] { shm_object o(name, bytes, shm_object::mode::create, {.call = "test"}); },
                  "test");
    EXPECT_FALSE(exists(name)) << name << " was left behind";
  }
}

TEST(ShmObject, PartOfAnObjectIsReservedOnRequest) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::string name = fresh_name();
  shm_object o(name, 8 << 20, shm_object::mode::create, {.call = "test", .front = 1, .back = 1});
  EXPECT_EQ(backed_bytes(name), 2 * page) << "the first and the last page";
  o.reserve(1 << 20, (1 << 20) - 10, "test");
  EXPECT_EQ(backed_bytes(name), 2 * page + (std::size_t{1} << 20));
  o.reserve(1 << 20, 1 << 20, "test");  // again: nothing more
  EXPECT_EQ(backed_bytes(name), 2 * page + (std::size_t{1} << 20));
  try {
    o.reserve(4 << 20, 8 << 20, "test");
    ADD_FAILURE() << "a range past the object was reserved";
  } catch (const oneside::error& e) {
    EXPECT_EQ(e.error_class(), oneside::error_class::intern) << e.what();
  }
  o.unlink();

  // An object larger than the free space, reserved in part, then asked for all of it.
  const std::size_t free = shm_free();
  if (free == 0) GTEST_SKIP() << "/dev/shm has no size limit";
  const std::string big = fresh_name();
  const std::size_t bytes = (free + (std::size_t{64} << 20)) / page * page;
  shm_object b(big, bytes, shm_object::mode::create, {.call = "test", .front = page, .back = 0});
  EXPECT_EQ(backed_bytes(big), page);
  expect_no_mem([&] { b.reserve(0, bytes, "test"); }, "test");
  EXPECT_EQ(backed_bytes(big), page) << "a failed reservation kept memory";
  b.unlink();
}

// ---- liveness records and the sweep -------------------------------------------------------

using oneside::detail::job_liveness;
using oneside::detail::sweep_dead_jobs;

// Creates object `what` of job `job` and returns its name; the object is left in /dev/shm.
std::string leave_object(const std::string& job, const std::string& what) {
  const std::string name = shm_name(job, what);
  shm_object(name, 4096, shm_object::mode::create);
  return name;
}

TEST(JobLiveness, AJobSomebodyHoldsIsNotSweptAndOneNobodyHoldsIs) {
  const std::string job = make_job_id();
  std::optional<job_liveness> held(job_liveness::join(job, "test"));
  const std::string record = shm_name(job, "live");
  ASSERT_TRUE(exists(record));
  struct stat st {};
  ASSERT_EQ(::stat(("/dev/shm" + record).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  const std::string a = leave_object(job, "a");
  const std::string b = leave_object(job, "b");
  (void)sweep_dead_jobs();
  EXPECT_TRUE(exists(a) && exists(b) && exists(record)) << "a live job was swept";
  held.reset();  // killed: nobody left the job, nobody holds it
  EXPECT_TRUE(exists(a) && exists(b) && exists(record));
  const oneside::detail::sweep_result r = sweep_dead_jobs();
  EXPECT_GE(r.jobs, 1);
  EXPECT_GE(r.objects, 3);
  EXPECT_FALSE(exists(a) || exists(b) || exists(record)) << "a dead job was left";
}

TEST(JobLiveness, TheLastProcessToLeaveRemovesWhatTheJobLeft) {
  const std::string job = make_job_id();
  job_liveness first = job_liveness::join(job, "test");
  job_liveness second = job_liveness::join(job, "test");  // another process, as flock sees it
  const std::string a = leave_object(job, "a");
  first.leave();
  EXPECT_TRUE(exists(a) && exists(shm_name(job, "live")));
  second.leave();
  EXPECT_FALSE(exists(a) || exists(shm_name(job, "live")));
}

// A sweeper that found the job dead removes the record while a process joins: the joiner
// notices (the record it locked has no name any more) and makes a fresh one.
TEST(JobLiveness, JoiningWhileASweeperRemovesTheRecordMakesItAgain) {
  const std::string job = make_job_id();
  const std::string record = shm_name(job, "live");
  const int sweeper = ::shm_open(record.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(sweeper, 0);
  ASSERT_EQ(::flock(sweeper, LOCK_EX), 0);
  std::optional<job_liveness> joined;
  std::thread joiner([&] { joined.emplace(job_liveness::join(job, "test")); });
  ::shm_unlink(record.c_str());
  ::close(sweeper);
  joiner.join();
  ASSERT_TRUE(joined.has_value());
  EXPECT_TRUE(exists(record));
  struct stat st {};
  ASSERT_EQ(::fstat(joined->fd(), &st), 0);
  EXPECT_GT(st.st_nlink, 0U) << "the joiner holds a record nobody can find";
  joined->leave();
  EXPECT_FALSE(exists(record));
}

// Objects of a job without a record (an older oneside's, alive or not) are left alone, and so
// is everything not this user's or not a plain object, whatever its name.
TEST(JobLiveness, WhatCannotBeToldDeadIsNeverSwept) {
  const std::string old_job = make_job_id();
  const std::string old_object = leave_object(old_job, "r0.s1");
  const oneside::detail::sweep_result r = sweep_dead_jobs();
  EXPECT_GE(r.unknown_jobs, 1);
  EXPECT_TRUE(exists(old_object));
  ::shm_unlink(old_object.c_str());

  // A dead job (its record nobody holds), with a symbolic link among its objects.
  const std::string job = make_job_id();
  { (void)job_liveness::join(job, "test"); }
  const std::string target = ::testing::TempDir() + "/shm_object_test_target";
  { std::ofstream(target) << "kept"; }
  const std::string link = shm_name(job, "link");
  ASSERT_EQ(::symlink(target.c_str(), ("/dev/shm" + link).c_str()), 0);
  (void)sweep_dead_jobs();
  EXPECT_FALSE(exists(shm_name(job, "live")));
  EXPECT_TRUE(exists(link)) << "a symbolic link was removed";
  std::string text;
  std::ifstream(target) >> text;
  EXPECT_EQ(text, "kept");
  ::unlink(("/dev/shm" + link).c_str());
  std::remove(target.c_str());
}

TEST(JobLiveness, AnotherUsersRecordIsRefusedAndItsJobNeverSwept) {
  if (::geteuid() != 0) GTEST_SKIP() << "making an object of another uid needs root";
  const std::string job = make_job_id();
  const std::string record = shm_name(job, "live");
  const int fd = make_raw(record, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fchown(fd, 65534, 65534), 0);
  ::close(fd);
  const std::string ours = leave_object(job, "r0.s1");
  try {
    (void)job_liveness::join(job, "test");
    ADD_FAILURE() << "another user's liveness record was used";
  } catch (const oneside::error& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to uid 65534"), std::string::npos) << e.what();
  }
  (void)sweep_dead_jobs();
  EXPECT_TRUE(exists(ours)) << "a job whose record is not ours was swept";
  EXPECT_TRUE(exists(record));
  ::shm_unlink(ours.c_str());
  ::shm_unlink(record.c_str());
}

}  // namespace
