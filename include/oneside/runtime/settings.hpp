// The ONESIDE_* settings, read-only view of the one registry (runtime/settings/settings.cpp).
// Every setting is declared there once, with its type, default, valid values and meaning; no
// other code reads the environment. `oneside-run --settings` prints this list.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace oneside {

enum class setting_type : std::uint8_t { boolean, integer, size, string, choice };

// The valid values of an integer or size setting, both ends included, written as values are
// ("4K" for a size of 4096 bytes).
struct setting_range {
  std::string_view min;
  std::string_view max;
};

struct setting_info {
  std::string_view name;  // e.g. "ONESIDE_WAIT_SPIN_NS"
  setting_type type;
  std::string_view default_value;  // as text, as it would be written in the environment
  setting_range range;             // integer and size settings: the valid values
  std::string_view meaning;        // one sentence, as in the README table
  std::string_view choices = {};   // for setting_type::choice: "thread|poll"
  bool set_by_launcher = false;    // part of the launcher-to-rank protocol, not for users
};

// Every setting, in the order of the README table.
std::span<const setting_info> all_settings() noexcept;

// The effective value of a setting as text (environment if set, else the default).
// Throws error(arg) for a name that is not in the registry.
std::string setting_value(std::string_view name);

// The valid values of a setting in words: "2 to 65536", "4K to 64M", "auto|shm|mpi",
// "1/0, true/false, yes/no, on/off" (as the README's table and the error messages say them).
std::string valid_values(const setting_info& s);

}  // namespace oneside
