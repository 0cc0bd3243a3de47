// Compact text for lists of CPU, core and NUMA indices, as lstopo and taskset write them:
// {0,1,2,3,6} -> "0-3,6". Used by describe(), the launcher's --report-bindings and tests.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oneside::detail {

// `ids` in any order, duplicates allowed; "" for an empty list.
std::string format_index_list(std::span<const int> ids);
// The inverse: "0-3,6" -> {0,1,2,3,6}. Throws error(arg) on malformed text.
std::vector<int> parse_index_list(std::string_view text);

}  // namespace oneside::detail
