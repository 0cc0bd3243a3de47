// covers(): the checklist IDs a test covers, recorded as a GoogleTest property.
#include "covers.hpp"

#include <string>

#include <gtest/gtest.h>

namespace oneside::test {

void covers(std::initializer_list<std::string_view> ids) {
  std::string joined;
  for (std::string_view id : ids) {
    if (!joined.empty()) joined += ' ';
    joined += id;
  }
  ::testing::Test::RecordProperty("covers", joined);
}

}  // namespace oneside::test
