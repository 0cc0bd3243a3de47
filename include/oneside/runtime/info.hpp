// Info objects: string key/value hints given to windows (and later files), as in the spec.
// Hints never change semantics; unknown keys are accepted and ignored (WIN-21).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oneside {

class info {
 public:
  info() = default;
  info(std::initializer_list<std::pair<const std::string, std::string>> entries)
      : entries_(entries) {}

  // Sets `key` to `value` (replacing an earlier value). Throws error(info) for an empty key or
  // a key or value longer than 255 characters (MPI_MAX_INFO_KEY / MPI_MAX_INFO_VAL).
  info& set(std::string_view key, std::string_view value);
  std::optional<std::string> get(std::string_view key) const;
  bool contains(std::string_view key) const { return entries_.find(key) != entries_.end(); }
  void erase(std::string_view key);
  std::vector<std::string> keys() const;
  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }

  friend bool operator==(const info&, const info&) = default;

 private:
  std::map<std::string, std::string, std::less<>> entries_;
};

}  // namespace oneside
