// Compact index lists: "0-3,6".
#include "topology/index_list.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "runtime/check.hpp"

namespace oneside::detail {

std::string format_index_list(std::span<const int> ids) {
  std::vector<int> v(ids.begin(), ids.end());
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out.append("-").append(std::to_string(v[j]));
    i = j + 1;
  }
  return out;
}

std::vector<int> parse_index_list(std::string_view text) {
  auto bad = [&]() {
    std::string what = "malformed index list '";
    what.append(text).append("' (expected e.g. 0-3,6)");
    raise(error_class::arg, {.call = "parse_index_list"}, what);
  };
  auto number = [&](std::string_view s) {
    int n = -1;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || ptr != s.data() + s.size() || n < 0) bad();
    return n;
  };
  std::vector<int> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const std::size_t dash = item.find('-');
    const int first = number(item.substr(0, dash));
    const int last = dash == std::string_view::npos ? first : number(item.substr(dash + 1));
    if (last < first) bad();
    for (int i = first; i <= last; ++i) out.push_back(i);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) bad();
  }
  return out;
}

}  // namespace oneside::detail
