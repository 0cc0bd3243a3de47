// The command line of oneside-run, in mpirun's conventions: options first, then the program
// and its arguments, which are passed on untouched (even when they look like options).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "topology/binding.hpp"

namespace oneside::launcher {

// A mistake of the user: reported as one line plus a hint to --help, exit status 2, before
// anything was started.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct launch_options {
  enum class action : std::uint8_t { run, help, version, settings, dump, cleanup };
  action what = action::run;
  int ranks = 0;                               // -n; 0 when absent
  std::optional<detail::bind_policy> bind_to;  // --bind-to; else ONESIDE_BIND_TO
  bool report_bindings = false;                // --report-bindings
  std::optional<std::int64_t> timeout_s;       // --timeout; else ONESIDE_TIMEOUT
  bool tag_output = false;                     // --tag-output
  std::vector<std::string> command;            // the program and its arguments
  std::string dump_job;                        // --dump [JOB]: a job id or launcher pid, or empty
};

// Parses argv[1..]. -n and --timeout take the ranges of ONESIDE_SIZE and ONESIDE_TIMEOUT. --help,
// --version, --settings, --dump and --cleanup win over everything after them; for `run`, -n and
// the program are required. Throws usage_error.
launch_options parse_command_line(std::span<const char* const> args);

// The text of --help.
std::string usage_text();

// Finds the program as execvp would: a name containing '/' is used as it is, any other is
// looked up in `path` (the PATH the ranks get; empty entries mean the current directory).
// Returns the path to execute. Throws usage_error when it is missing, a directory, or not
// executable.
std::string resolve_program(const std::string& name, std::string_view path);

}  // namespace oneside::launcher
