// The ONESIDE_* settings, read-only view of the one registry (runtime/settings/settings.cpp).
// Every setting is declared there once, with its type, default and meaning; no other code
// reads the environment. `oneside-run --settings` prints this list.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace oneside {

enum class setting_type : std::uint8_t { boolean, integer, size, string, choice };

struct setting_info {
  std::string_view name;  // e.g. "ONESIDE_WAIT_SPIN_NS"
  setting_type type;
  std::string_view default_value;  // as text, as it would be written in the environment
  std::string_view meaning;        // one sentence, as in the README table
  std::string_view choices = {};   // for setting_type::choice: "thread|poll"
  bool set_by_launcher = false;    // part of the launcher-to-rank protocol, not for users
};

// Every setting, in the order of the README table.
std::span<const setting_info> all_settings() noexcept;

// The effective value of a setting as text (environment if set, else the default).
// Throws error(arg) for a name that is not in the registry.
std::string setting_value(std::string_view name);

}  // namespace oneside
