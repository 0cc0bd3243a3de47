// A fixture for tests that write files: one fresh directory under the system's temporary
// directory, made by rank 0 and named to every rank (the same verdict everywhere when making it
// fails), removed with everything in it after each test once every rank is done.
#pragma once

#include <cstring>
#include <filesystem>
#include <stdlib.h>
#include <string>
#include <system_error>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"

namespace oneside::test {

// A fresh directory made by rank 0 from mkdtemp template `templ` ("…XXXXXX"), named to every
// rank: empty everywhere when rank 0 cannot make it or `make` is false there. Collective.
inline std::string make_shared_dir(const std::string& templ, bool make = true) {
  char name[256] = {};
  if (world().rank() == 0 && make) {
    std::strncpy(name, templ.c_str(), sizeof name - 1);
    if (::mkdtemp(name) == nullptr) name[0] = '\0';
  }
  broadcast(world(), name, sizeof name, datatype::of<char>(), 0);
  return name;
}

class FileTestDir : public RankTest {
 protected:
  // `prefix` names the directory: <tmp>/<prefix>-XXXXXX.
  explicit FileTestDir(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    dir_ =
        make_shared_dir((std::filesystem::temp_directory_path() / (prefix_ + "-XXXXXX")).string());
    ASSERT_FALSE(dir_.empty()) << "mkdtemp failed";  // the same verdict on every rank
  }
  void TearDown() override {
    barrier(world());
    if (rank() == 0 && !dir_.empty()) {
      std::error_code ec;
      // A test may have taken the owner's permissions away (a permission-denied open).
      std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, ec);
      std::filesystem::remove_all(dir_, ec);
    }
    RankTest::TearDown();
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;

 private:
  std::string prefix_;
};

}  // namespace oneside::test
