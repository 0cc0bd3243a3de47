// Records which checklist rules (../shared/spec/checklist.md) a test covers, as a GoogleTest
// property "covers" in the XML output, so spec coverage can be read off a test run.
#pragma once

#include <initializer_list>
#include <string_view>

namespace oneside::test {

void covers(std::initializer_list<std::string_view> ids);

template <class... Ids>
void covers(Ids... ids) {
  covers({std::string_view(ids)...});
}

}  // namespace oneside::test
