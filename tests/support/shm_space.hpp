// /dev/shm as the multi-rank tests see it: its free space, which the shm transport reserves
// shared memory from (so a request just above it must fail without filling it), and the objects
// of this job there (so a rejected call can be shown to leave none behind).
#pragma once

#include <algorithm>
#include <cstddef>
#include <dirent.h>
#include <string>
#include <string_view>
#include <sys/statvfs.h>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/runtime/error.hpp>

#include "bootstrap/bootstrap.hpp"
#include "context/context.hpp"
#include "expect_error.hpp"

namespace oneside::test {

// Free bytes of /dev/shm for this user, or 0 when it has no size limit (nothing can be shown
// then without exhausting the machine's memory).
inline std::size_t shm_free_bytes() {
  struct statvfs s {};
  if (::statvfs("/dev/shm", &s) != 0 || s.f_blocks == 0) return 0;
  return static_cast<std::size_t>(s.f_bavail) * static_cast<std::size_t>(s.f_frsize);
}

// The names of this job's objects in /dev/shm, sorted: "oneside.<job>.…" (an MPI job's nodes
// have job ids of their own, "<job>n<rank>", included). Other ranks make and remove objects of
// the job too: take it where every rank is between the same two barriers.
inline std::vector<std::string> job_shm_objects() {
  std::vector<std::string> out;
  const detail::context* c = detail::current_context();
  if (c == nullptr) return out;
  const std::string prefix = "oneside." + c->boot->job_id();
  if (DIR* dir = ::opendir("/dev/shm")) {
    while (const dirent* e = ::readdir(dir)) {
      const std::string_view n(e->d_name);
      if (n.starts_with(prefix)) out.emplace_back(n);
    }
    ::closedir(dir);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs `make`, which must raise no_mem naming `call` and /dev/shm's free space: where memory is
// made collectively, the members that could reserve theirs name instead the one that could not
// ("could not reserve"), when `or_another_member`.
template <class Make>
void expect_no_shared_memory(std::string_view call, Make&& make, bool or_another_member = false) {
  try {
    std::forward<Make>(make)();
    ADD_FAILURE() << call << " of more than /dev/shm has free succeeded";
  } catch (const oneside::error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.error_class(), error_class::no_mem) << what;
    EXPECT_TRUE(names_call(what, call)) << what;
    EXPECT_TRUE(what.find("/dev/shm has ") != std::string::npos ||
                (or_another_member && what.find("could not reserve") != std::string::npos))
        << what;
  }
}

}  // namespace oneside::test
