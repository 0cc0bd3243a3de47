// Typed access to the ONESIDE_* registry for oneside's own code, and the check of the whole
// environment. The registry (settings.cpp) is the only place that reads the environment. A
// malformed or out-of-range value raises error(arg) naming the setting and its valid values;
// an unknown name raises error(arg) too (a typo in oneside's code, caught by tests).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <oneside/runtime/settings.hpp>

namespace oneside::detail {

// integer and size settings ("64K", "2M", "1G" and "1T" are accepted for sizes, powers of 1024).
std::int64_t setting_int(std::string_view name);
bool setting_bool(std::string_view name);  // 1/0, true/false, yes/no, on/off
// string and choice settings (a choice is checked against its list).
std::string setting_string(std::string_view name);
// True when the variable is present in the environment.
bool setting_is_set(std::string_view name);
// The smallest and largest valid value of an integer or size setting.
std::pair<std::int64_t, std::int64_t> setting_limits(std::string_view name);

// What is wrong with `value` as a value of `s` (one phrase that names it, its value and the
// valid values), or an empty string when it is valid.
std::string value_problem(const setting_info& s, std::string_view value);
// The registered setting that `name` (not one itself) is most likely a misspelling of, or an
// empty view when none is close: a small edit distance, ignoring case, or a missing suffix
// ("ONESIDE_KILL_GRACE" for ONESIDE_KILL_GRACE_MS).
std::string_view misspelt_setting(std::string_view name);

// One problem of the environment: a line without a prefix.
struct setting_problem {
  bool fatal = true;  // an error; else a warning (the variable is ignored)
  std::string text;
};
// Who checks the environment: oneside-run before it starts a job (its ranks will get the
// launcher-to-rank variables), or the runtime's open in the process itself.
enum class settings_reader : std::uint8_t { launcher, runtime };
// Every problem of the ONESIDE_* variables, in registry order, then unknown variables in
// environment order: invalid values; combinations that would exhaust memory; a transport the
// job cannot have; launcher-to-rank variables that do not describe a rank of a job (for the
// runtime) or that a user set by hand (for the launcher: warnings, they are replaced); and
// unknown ONESIDE_* variables (errors when they look like a misspelt setting, else warnings),
// as well as other variables that look like a misspelt setting (errors).
std::vector<setting_problem> check_environment(settings_reader who);

// True when oneside-run started this process's job (ONESIDE_JOB_ID is set and not empty).
bool started_by_launcher();
// The job size an MPI launcher (mpirun, srun, mpiexec) announced to this process in its own
// variables, or 0 when no MPI launcher started it; and this process's rank there, or -1. The
// only foreign variables oneside reads.
int mpi_launcher_size() noexcept;
int mpi_launcher_rank() noexcept;

}  // namespace oneside::detail
