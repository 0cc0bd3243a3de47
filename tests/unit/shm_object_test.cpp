// Shared-memory objects (runtime/transport/shm/shm_object.hpp, issue 18): against squatting
// (names carry random bits, a taken name is reported to the caller, who retries, and an object
// that is not this user's alone is never mapped); reserved memory (an object is backed when it
// is made, or part by part, and what /dev/shm has no room for is no_mem naming its free space,
// leaving nothing behind).
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

}  // namespace
