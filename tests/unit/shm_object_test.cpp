// Shared-memory objects against squatting (runtime/transport/shm/shm_object.hpp, issue 18):
// names carry random bits, a taken name is reported to the caller (who retries), and an object
// that is not this user's alone is never mapped.
#include "transport/shm/shm_object.hpp"

#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
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

}  // namespace
