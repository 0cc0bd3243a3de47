// Parsing oneside-run's command line and finding the program.
#include "launcher/options.hpp"

#include <charconv>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/settings.hpp"

namespace oneside::launcher {
namespace {

std::string quoted(std::string_view s) {
  std::string q = "'";
  q.append(s).append("'");
  return q;
}

std::int64_t parse_count(std::string_view option, std::string_view text, std::int64_t low,
                         std::int64_t high, std::string_view what) {
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < low ||
      v > high) {
    std::string msg(option);
    msg.append(" ").append(quoted(text)).append(": expected ").append(what);
    msg.append(" from ").append(std::to_string(low)).append(" to ").append(std::to_string(high));
    throw usage_error(msg);
  }
  return v;
}

}  // namespace

launch_options parse_command_line(std::span<const char* const> args) {
  launch_options o;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string_view arg(args[i]);
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the program ("-" alone is a name too)

    // "--opt=value" and "--opt value" are both accepted for options that take a value.
    const std::size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    std::optional<std::string_view> inline_value;
    if (eq != std::string_view::npos) inline_value = arg.substr(eq + 1);
    auto value = [&]() -> std::string_view {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size())
        throw usage_error(std::string("option ").append(name).append(" needs a value"));
      return args[++i];
    };
    auto no_value = [&]() {
      if (inline_value)
        throw usage_error(std::string("option ").append(name).append(" takes no value"));
    };

    if (name == "-n" || name == "-np" || name == "--np" || name == "--n") {
      const auto [low, high] = detail::setting_limits("ONESIDE_SIZE");
      o.ranks = static_cast<int>(parse_count(name, value(), low, high, "a number of ranks"));
    } else if (name == "--bind-to") {
      const std::string_view v = value();
      o.bind_to = detail::parse_bind_policy(v);
      if (!o.bind_to) {
        throw usage_error(
            std::string("--bind-to ").append(quoted(v)).append(": expected core, numa or none"));
      }
    } else if (name == "--timeout") {
      const auto [low, high] = detail::setting_limits("ONESIDE_TIMEOUT");
      o.timeout_s = parse_count(name, value(), low, high, "whole seconds (0: no limit)");
    } else if (name == "--report-bindings") {
      no_value();
      o.report_bindings = true;
    } else if (name == "--tag-output") {
      no_value();
      o.tag_output = true;
    } else if (name == "-h" || name == "--help") {
      o.what = launch_options::action::help;
      return o;
    } else if (name == "--version") {
      o.what = launch_options::action::version;
      return o;
    } else if (name == "--settings") {
      o.what = launch_options::action::settings;
      return o;
    } else if (name == "--dump") {
      o.what = launch_options::action::dump;
      if (inline_value) {
        o.dump_job = std::string(*inline_value);
      } else if (i + 1 < args.size()) {
        o.dump_job = args[i + 1];
      }
      return o;
    } else if (name == "--cleanup") {
      no_value();
      o.what = launch_options::action::cleanup;
      return o;
    } else {
      throw usage_error(std::string("unknown option ").append(quoted(arg)));
    }
  }
  for (; i < args.size(); ++i) o.command.emplace_back(args[i]);

  if (o.ranks == 0) throw usage_error("missing -n N, the number of ranks to start");
  if (o.command.empty()) throw usage_error("missing the program to run");
  return o;
}

std::string usage_text() {
  return R"(Usage: oneside-run -n N [options] [--] program [args...]

Starts N ranks of `program` on this node, each a process, and waits for them. Each rank gets
ONESIDE_JOB_ID, ONESIDE_RANK, ONESIDE_SIZE, ONESIDE_LOCAL_RANK, ONESIDE_LOCAL_SIZE and
ONESIDE_BINDING in its environment. The first rank to fail ends the job.

Options:
  -n, -np, --np N         number of ranks to start (required; also -n=N)
  --bind-to core|numa|none
                          core: rank r on core r (all its hardware threads);
                          numa: rank r on NUMA node r mod nodes; none: no binding.
                          Default (ONESIDE_BIND_TO=auto): core while N <= cores, else none.
  --report-bindings       print each rank's binding on stderr
  --timeout SECONDS       kill the job after SECONDS (default: ONESIDE_TIMEOUT; 0: no limit)
  --tag-output            prefix every line of the ranks' output with [rank]
  --settings              list every ONESIDE_* setting: default, current value, meaning
  --dump [JOB]            print what the ranks of every running job of this user on this
                          node (or of JOB: a job id or its launcher's pid) wait for; a
                          launcher sent SIGUSR1 prints the same for its own job on stderr
  --cleanup               remove what dead jobs of this user left in /dev/shm (jobs whose
                          launcher and reaper were killed with SIGKILL), say how much, exit
  -h, --help              print this help and exit
  --version               print the version and exit
  --                      end of options: what follows is the program

Environment: ONESIDE_BIND_TO, ONESIDE_TIMEOUT, ONESIDE_KILL_GRACE_MS, ONESIDE_HANG_TIMEOUT
(see --settings). Every ONESIDE_* variable is checked before anything starts: an invalid
value, or a name that looks like a misspelt setting, is an error; other unknown ONESIDE_*
names are warnings. With ONESIDE_HANG_TIMEOUT=S, a job in which every rank waits in oneside
(or has ended) and none makes progress for S seconds is ended after printing what each
rank waits for (the call, its window or team, the target, the epoch, what is outstanding).
When the job ends early, the remaining ranks get SIGTERM, then SIGKILL after
ONESIDE_KILL_GRACE_MS; the job's shared memory is always removed. Every launch (and
--cleanup) also removes the shared memory of this user's dead jobs on this node: jobs no
live process holds any more; live jobs, other users' objects and objects of jobs started by
an older oneside are never touched.
Rank 0 reads the launcher's stdin unless it is a terminal; other ranks read /dev/null.

Exit status:
  0        every rank exited with status 0
  S        the first rank to fail exited with status S
  128+K    the first rank to fail was killed by signal K
  124      the job ran longer than --timeout (as timeout(1))
  125      no rank made progress for ONESIDE_HANG_TIMEOUT seconds
  130, 143, 129
           oneside-run was interrupted by SIGINT, SIGTERM or SIGHUP
  2        bad usage or an invalid ONESIDE_* setting; nothing was started
  127      a rank could not be started
  3        a rank exited with status 0 without closing the oneside runtime it opened
  1        oneside-run itself failed (e.g. shared memory could not be created)
)";
}

std::string resolve_program(const std::string& name, std::string_view path) {
  auto check = [&](const std::string& candidate, bool searched) -> std::optional<std::string> {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0) {
      if (searched) return std::nullopt;
      throw usage_error(std::string("program ").append(quoted(name)).append(" does not exist"));
    }
    if (S_ISDIR(st.st_mode)) {
      if (searched) return std::nullopt;
      throw usage_error(std::string("program ").append(quoted(name)).append(" is a directory"));
    }
    if (::access(candidate.c_str(), X_OK) != 0) {
      if (searched) return std::string();  // found, but not executable: keep looking
      throw usage_error(std::string("program ").append(quoted(name)).append(" is not executable"));
    }
    return candidate;
  };

  if (name.empty()) throw usage_error("the program name is empty");
  if (name.find('/') != std::string::npos) return *check(name, false);

  bool found_unexecutable = false;
  for (;;) {
    const std::size_t colon = path.find(':');
    const std::string_view dir = path.substr(0, colon);
    std::string candidate;
    candidate.append(dir.empty() ? std::string_view(".") : dir).append("/").append(name);
    if (auto hit = check(candidate, true)) {
      if (!hit->empty()) return *hit;
      found_unexecutable = true;
    }
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  if (found_unexecutable) {
    throw usage_error(std::string("program ").append(quoted(name)).append(" is not executable"));
  }
  throw usage_error(std::string("program ").append(quoted(name)).append(" not found in PATH"));
}

}  // namespace oneside::launcher
