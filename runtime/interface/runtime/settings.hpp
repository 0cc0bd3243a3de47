// Typed access to the ONESIDE_* registry for oneside's own code. The registry (settings.cpp)
// is the only place that reads the environment. A malformed value raises error(arg) naming
// the setting; an unknown name raises error(arg) too (a typo in oneside's code, caught by tests).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <oneside/runtime/settings.hpp>

namespace oneside::detail {

// integer and size settings ("64K", "2M" and "1G" are accepted for sizes, powers of 1024).
std::int64_t setting_int(std::string_view name);
bool setting_bool(std::string_view name);  // 1/0, true/false, yes/no, on/off
// string and choice settings (a choice is checked against its list).
std::string setting_string(std::string_view name);
// True when the variable is present in the environment.
bool setting_is_set(std::string_view name);
// The job size an MPI launcher (mpirun, srun, mpiexec) announced to this process in its own
// variables, or 0 when no MPI launcher started it. The only foreign variables oneside reads.
int mpi_launcher_size() noexcept;

}  // namespace oneside::detail
