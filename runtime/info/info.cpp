// oneside::info: the key/value hints of windows (and later files).
#include <string>

#include <oneside/runtime/info.hpp>

#include "runtime/check.hpp"

namespace oneside {

namespace {
constexpr std::size_t max_info_length = 255;  // MPI_MAX_INFO_KEY, MPI_MAX_INFO_VAL
}

info& info::set(std::string_view key, std::string_view value) {
  ONESIDE_CHECK(!key.empty() && key.size() <= max_info_length, error_class::info,
                {.call = "info::set"}, "info keys have 1 to 255 characters");
  ONESIDE_CHECK(value.size() <= max_info_length, error_class::info, {.call = "info::set"},
                "info values have at most 255 characters");
  entries_.insert_or_assign(std::string(key), std::string(value));
  return *this;
}

std::optional<std::string> info::get(std::string_view key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void info::erase(std::string_view key) {
  auto it = entries_.find(key);
  if (it != entries_.end()) entries_.erase(it);
}

std::vector<std::string> info::keys() const {
  std::vector<std::string> k;
  k.reserve(entries_.size());
  for (const auto& [key, value] : entries_) k.push_back(key);
  return k;
}

}  // namespace oneside
