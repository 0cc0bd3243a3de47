// oneside-run: starts the N ranks of a oneside job on this node and supervises them
// (mpirun's conventions). This file turns the command line and the ONESIDE_* settings into a
// job_spec; job.cpp runs it. Usage mistakes exit with status 2 before anything starts.
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include <oneside/runtime/error.hpp>
#include <oneside/runtime/settings.hpp>
#include <oneside/runtime/version.hpp>

#include "launcher/job.hpp"
#include "launcher/options.hpp"
#include "launcher/unique_fd.hpp"
#include "launcher/wait_report.hpp"
#include "runtime/settings.hpp"
#include "topology/binding.hpp"
#include "transport/shm/shm_object.hpp"

namespace oneside::launcher {
namespace {

// The environment holds invalid settings; check_settings said which.
struct settings_failure {};

void print(int fd, const std::string& text) {
  write_all(fd, text.data(), text.size());
}

// Descriptors 0-2 closed by our caller would be reused by our own pipes and then clobbered
// in the ranks by dup2: give them /dev/null first.
void ensure_standard_descriptors() noexcept {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) ::open("/dev/null", O_RDWR);
  }
}

// PATH as the ranks will see it (not a oneside setting: the registry is not involved).
// Unset means execvp's default.
std::string ranks_path() {
  constexpr std::string_view key = "PATH=";
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with(key)) return std::string(entry.substr(key.size()));
  }
  return "/bin:/usr/bin";
}

// The registry with each setting's current value, marking invalid ones, then every problem of
// the environment (unknown variables among them). Sets `failed` when one is an error.
std::string settings_text(bool& failed) {
  std::string out =
      "oneside settings (environment variables; oneside-run's flags override its own):\n";
  for (const setting_info& s : all_settings()) {
    out.append("\n").append(s.name).append("\n");
    out.append("  default: ").append(s.default_value.empty() ? "(empty)" : s.default_value);
    if (const std::string valid = valid_values(s); !valid.empty()) {
      out.append("   valid: ").append(valid);
    }
    out.append("\n  current: ");
    const std::string value = setting_value(s.name);
    out.append(value.empty() ? "(empty)" : value);
    const bool set = detail::setting_is_set(s.name);
    out.append(set ? " (from the environment)" : " (default)");
    if (set && !s.set_by_launcher) {
      if (const std::string problem = detail::value_problem(s, value); !problem.empty()) {
        out.append("  INVALID: ").append(problem);
      }
    }
    out.append("\n  ").append(s.meaning);
    if (s.set_by_launcher) out.append(" Set by oneside-run for each rank.");
    out.append("\n");
  }
  const std::vector<detail::setting_problem> problems =
      detail::check_environment(detail::settings_reader::launcher);
  failed = false;
  if (!problems.empty()) {
    out.append(
        "\nProblems of this environment (oneside-run starts no job while an error remains):\n");
    for (const detail::setting_problem& p : problems) {
      out.append(p.fatal ? "  error: " : "  warning: ").append(p.text).append("\n");
      failed = failed || p.fatal;
    }
  }
  return out;
}

// Checks the whole environment before anything starts: warnings are printed, errors (all of
// them, one line each) end oneside-run with the usage status.
void check_settings() {
  std::string errors;
  std::string warnings;
  for (const detail::setting_problem& p :
       detail::check_environment(detail::settings_reader::launcher)) {
    (p.fatal ? errors : warnings).append("oneside-run: ");
    if (!p.fatal) warnings.append("warning: ");
    (p.fatal ? errors : warnings).append(p.text).append("\n");
  }
  print(STDERR_FILENO, warnings);
  if (!errors.empty()) {
    errors.append("Run 'oneside-run --settings' for every setting and its valid values.\n");
    print(STDERR_FILENO, errors);
    throw settings_failure();
  }
}

// What --cleanup did: "oneside-run: removed 5 shared-memory objects of 2 dead jobs", and what
// it left because nobody can tell whether its job is alive.
std::string cleanup_text(const detail::sweep_result& r) {
  const auto count = [](int n, std::string_view noun) {
    std::string s = std::to_string(n);
    s.append(" ").append(noun);
    if (n != 1) s += 's';
    return s;
  };
  std::string out = "oneside-run: removed ";
  out.append(count(r.objects, "shared-memory object")).append(" of ");
  out.append(count(r.jobs, "dead job")).append("\n");
  if (r.unknown_objects > 0) {
    out.append("oneside-run: left alone ").append(count(r.unknown_objects, "object"));
    out.append(" of ").append(count(r.unknown_jobs, "job"));
    out.append(
        " without a liveness record (started by an older oneside, alive or not: remove "
        "/dev/shm/oneside.<job>.* by hand once such a job is gone)\n");
  }
  return out;
}

detail::bind_policy choose_policy(const launch_options& o) {
  if (o.bind_to) return *o.bind_to;
  const std::string v = detail::setting_string("ONESIDE_BIND_TO");
  if (v == "auto") return detail::default_bind_policy(o.ranks);
  return *detail::parse_bind_policy(v);  // the registry checked it against its choices
}

int launch(const launch_options& o) {
  check_settings();
  job_spec spec;
  spec.program = resolve_program(o.command.front(), ranks_path());
  spec.argv = o.command;

  const detail::bind_policy policy = choose_policy(o);
  if (policy == detail::bind_policy::core) {
    const int cores = detail::available_resources().cores;
    if (o.ranks > cores) {
      std::string msg = "cannot bind ";
      msg.append(std::to_string(o.ranks)).append(" ranks one per core: only ");
      msg.append(std::to_string(cores)).append(cores == 1 ? " core is" : " cores are");
      msg.append(" available (use --bind-to none to run more ranks than cores)");
      throw usage_error(msg);
    }
  }
  spec.bindings = detail::plan_bindings(o.ranks, policy);

  // The registry bounds both (check_settings ran).
  spec.timeout =
      std::chrono::seconds(o.timeout_s ? *o.timeout_s : detail::setting_int("ONESIDE_TIMEOUT"));
  spec.kill_grace = std::chrono::milliseconds(detail::setting_int("ONESIDE_KILL_GRACE_MS"));
  spec.tag_output = o.tag_output;
  spec.hang_timeout = std::chrono::seconds(detail::setting_int("ONESIDE_HANG_TIMEOUT"));

  if (o.report_bindings) {
    std::string report;
    for (std::size_t r = 0; r < spec.bindings.size(); ++r) {
      report.append("oneside-run: rank ").append(std::to_string(r)).append(" ");
      report.append(spec.bindings[r].description).append("\n");
    }
    print(STDERR_FILENO, report);
  }
  return run_job(spec);
}

int main_impl(int argc, char** argv) {
  ensure_standard_descriptors();
  const auto usage_failure = [](std::string_view what) {
    std::string msg = "oneside-run: ";
    msg.append(what).append("\nRun 'oneside-run --help' for usage.\n");
    print(STDERR_FILENO, msg);
    return exit_usage;
  };
  try {
    const launch_options o =
        parse_command_line({argv + 1, static_cast<std::size_t>(argc > 0 ? argc - 1 : 0)});
    switch (o.what) {
      case launch_options::action::help:
        print(STDOUT_FILENO, usage_text());
        return 0;
      case launch_options::action::version: {
        std::string v = "oneside-run (oneside) ";
        v.append(version_string).append("\n");
        print(STDOUT_FILENO, v);
        return 0;
      }
      case launch_options::action::settings: {
        bool failed = false;
        print(STDOUT_FILENO, settings_text(failed));
        return failed ? exit_usage : 0;
      }
      case launch_options::action::dump:
        return dump_jobs(o.dump_job);
      case launch_options::action::cleanup:
        print(STDOUT_FILENO, cleanup_text(detail::sweep_dead_jobs()));
        return 0;
      case launch_options::action::run:
        break;
    }
    return launch(o);
  } catch (const settings_failure&) {
    return exit_usage;  // each problem is said
  } catch (const usage_error& e) {
    return usage_failure(e.what());
  } catch (const error& e) {
    // A malformed ONESIDE_* value is a usage mistake too; anything else is ours.
    if (e.error_class() == error_class::arg) return usage_failure(e.what());
    print(STDERR_FILENO, std::string("oneside-run: ").append(e.what()).append("\n"));
    return exit_internal;
  } catch (const std::exception& e) {
    print(STDERR_FILENO, std::string("oneside-run: ").append(e.what()).append("\n"));
    return exit_internal;
  }
}

}  // namespace
}  // namespace oneside::launcher

int main(int argc, char** argv) {
  return oneside::launcher::main_impl(argc, argv);
}
