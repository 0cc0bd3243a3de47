// The settings registry: the README's table lists exactly the registry's settings with their
// defaults and valid values (STYLE.md R9), values are parsed strictly and checked against
// their ranges, misspelt names get a suggestion, the whole environment is checked (issue 18,
// item 6), the README's test command is the one CI runs and its demo command builds only what
// the demo needs.
#include "runtime/settings.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <oneside/oneside.hpp>

#ifndef ONESIDE_SOURCE_DIR
#error "ONESIDE_SOURCE_DIR must name the source tree"
#endif

namespace oneside {
namespace {

template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  (s.append(parts), ...);
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string strip_backticks(std::string s) {
  std::erase(s, '`');
  return s;
}

TEST(Settings, ReadmeTableMatchesTheRegistry) {
  const std::string readme = read_file(std::string(ONESIDE_SOURCE_DIR) + "/README.md");
  ASSERT_FALSE(readme.empty()) << "README.md not found";
  // Rows of the settings table: | `ONESIDE_NAME` | type | default | valid | meaning |
  // Cells may hold escaped pipes ("thread\\|poll").
  const std::string cell = R"(\|\s*((?:[^|\\]|\\.)*?)\s*)";
  const std::regex row(R"(^\|\s*`(ONESIDE_[A-Z0-9_]+)`\s*)" + cell + cell + cell + R"(\|)");
  std::map<std::string, std::pair<std::string, std::string>> documented;  // default, valid
  std::istringstream lines(readme);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) documented[m[1]] = {strip_backticks(m[3]), m[4]};
  }
  for (const setting_info& s : all_settings()) {
    auto it = documented.find(std::string(s.name));
    ASSERT_NE(it, documented.end()) << s.name << " is in the registry but not in the README table";
    const std::string want = s.default_value.empty() ? "(unset)" : std::string(s.default_value);
    EXPECT_EQ(it->second.first, want)
        << s.name << ": the README's default differs from the registry's";
    const bool numeric = s.type == setting_type::integer || s.type == setting_type::size;
    EXPECT_EQ(it->second.second, numeric ? valid_values(s) : "")
        << s.name << ": the README's valid values differ from the registry's";
    documented.erase(it);
  }
  for (const auto& [name, value] : documented) {
    ADD_FAILURE() << name << " is in the README table but not in the registry";
  }
}

TEST(Settings, ReadmeTestCommandIsWhatCiRuns) {
  const std::string readme = read_file(std::string(ONESIDE_SOURCE_DIR) + "/README.md");
  const std::string ci = read_file(std::string(ONESIDE_SOURCE_DIR) + "/.ci/run");
  // The README's first code block holds the two commands; the second is the test command.
  const auto open = readme.find("```sh\n");
  ASSERT_NE(open, std::string::npos);
  const auto close = readme.find("```", open + 6);
  std::istringstream block(readme.substr(open + 6, close - open - 6));
  std::vector<std::string> commands;
  for (std::string line; std::getline(block, line);) {
    if (!line.empty() && line[0] != '#') commands.push_back(line);
  }
  ASSERT_EQ(commands.size(), 2U) << "the README's first block holds the demo and the test command";
  EXPECT_NE(ci.find("\n" + commands[1] + "\n"), std::string::npos)
      << ".ci/run does not run the README's test command: " << commands[1];
  EXPECT_NE(commands[0].find("oneside-run -n 4"), std::string::npos)
      << "the demo command runs 4 ranks";
  // The demo builds only what it runs, not the tests and benches.
  EXPECT_NE(commands[0].find("cmake --build --preset demo "), std::string::npos) << commands[0];
  const std::string presets = read_file(std::string(ONESIDE_SOURCE_DIR) + "/CMakePresets.json");
  EXPECT_NE(presets.find(R"("targets": ["oneside-run", "stencil"])"), std::string::npos)
      << "CMakePresets.json's demo build preset names the launcher and the stencil only";
  EXPECT_LT(readme.find("```sh"), 400U) << "the two commands are in the README's first lines";
}

// Unsets every ONESIDE_* variable (and the lower-case and misspelt ones a test sets) for the
// test, and puts the environment back afterwards.
class SettingsEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      const std::string name = entry.substr(0, entry.find('='));
      if (!detail::misspelt_setting(name).empty() || name.starts_with("ONESIDE_")) {
        saved_.emplace_back(name, entry.substr(name.size() + 1));
      }
    }
    for (const auto& [name, value] : saved_) ::unsetenv(name.c_str());
  }
  void TearDown() override {
    for (const std::string& name : set_) ::unsetenv(name.c_str());
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  void set(const std::string& name, const std::string& value) {
    ::setenv(name.c_str(), value.c_str(), 1);
    set_.push_back(name);
  }
  void unset(const std::string& name) { ::unsetenv(name.c_str()); }

  // The problems check_environment finds, as "error: text" and "warning: text".
  static std::vector<std::string> problems(detail::settings_reader who) {
    std::vector<std::string> out;
    for (const detail::setting_problem& p : detail::check_environment(who)) {
      out.push_back((p.fatal ? "error: " : "warning: ") + p.text);
    }
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> saved_;
  std::vector<std::string> set_;
};

// error(arg) whose message holds `part`.
template <class F>
void expect_arg_error(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "accepted; expected an error saying: " << part;
  } catch (const error& e) {
    EXPECT_EQ(e.error_class(), error_class::arg) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST_F(SettingsEnv, ValuesAreParsedStrictly) {
  const std::string name = "ONESIDE_COLL_SLOT_BYTES";
  set(name, "64K");
  EXPECT_EQ(detail::setting_int(name), 65536);
  set(name, "2m");
  EXPECT_EQ(detail::setting_int(name), 2 << 20);
  for (const char* bad : {"", "x", "12Q", "-1", "5KB", "1T", "1K", "99999999999999999999"}) {
    set(name, bad);
    expect_arg_error([&] { (void)detail::setting_int(name); }, cat(name, "='", bad, "'"));
    expect_arg_error([&] { (void)detail::setting_int(name); }, "valid: 4K to 64M bytes");
  }
  unset(name);
  const std::int64_t unset_value = detail::setting_int(name);
  for (const setting_info& s : all_settings()) {
    if (s.name == name) set(name, std::string(s.default_value));
  }
  EXPECT_EQ(unset_value, detail::setting_int(name)) << "the registry's default applies when unset";
  expect_arg_error([] { (void)detail::setting_int("ONESIDE_NO_SUCH_THING"); }, "unknown setting");
  EXPECT_EQ(setting_value("ONESIDE_AGENT"), "thread");
  set("ONESIDE_AGENT", "sometimes");
  expect_arg_error([] { (void)detail::setting_string("ONESIDE_AGENT"); },
                   "ONESIDE_AGENT='sometimes' is not one of thread|poll");
  set("ONESIDE_SHM_REMAP", "maybe");
  expect_arg_error([] { (void)detail::setting_bool("ONESIDE_SHM_REMAP"); },
                   "ONESIDE_SHM_REMAP='maybe' is not a boolean; valid: 1/0");
  set("ONESIDE_SHM_REMAP", "Off");
  EXPECT_FALSE(detail::setting_bool("ONESIDE_SHM_REMAP"));
  set("ONESIDE_HEAP_MAX_BYTES", "2t");
  EXPECT_EQ(detail::setting_int("ONESIDE_HEAP_MAX_BYTES"), std::int64_t{2} << 40);
}

// Every integer and size setting has a range; both ends are accepted, one past either end is
// refused with an error naming the setting and the range.
TEST_F(SettingsEnv, RangesAreEnforcedAtBothEnds) {
  int numeric = 0;
  for (const setting_info& s : all_settings()) {
    if (s.type != setting_type::integer && s.type != setting_type::size) continue;
    ++numeric;
    const std::string name(s.name);
    const auto [low, high] = detail::setting_limits(name);
    EXPECT_LT(low, high) << name;
    set(name, std::string(s.range.min));
    EXPECT_EQ(detail::setting_int(name), low) << name;
    set(name, std::string(s.range.max));
    EXPECT_EQ(detail::setting_int(name), high) << name;
    std::vector<std::int64_t> outside{high + 1};
    if (low > 0) outside.push_back(low - 1);
    for (const std::int64_t v : outside) {
      set(name, std::to_string(v));
      expect_arg_error(
          [&] { (void)detail::setting_int(name); },
          cat(name, "='", std::to_string(v), "' is out of range; valid: ", valid_values(s)));
    }
    unset(name);
  }
  EXPECT_GE(numeric, 18);
  // The ranges the issue asked for (a queue or a thread count that breaks the runtime).
  EXPECT_EQ(detail::setting_limits("ONESIDE_AM_SLOTS").second, 65536);
  EXPECT_LT(detail::setting_limits("ONESIDE_TASK_THREADS").second, 100000);
  EXPECT_EQ(detail::setting_limits("ONESIDE_COLL_SLOTS").first, 2);
}

TEST(Settings, MisspeltNamesGetTheNearestSetting) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ONESIDE_AM_SLOT", "ONESIDE_AM_SLOTS"},           // a letter left out
      {"ONESIDE_TRASNPORT", "ONESIDE_TRANSPORT"},        // two swapped
      {"ONESIDE_TIMOUT", "ONESIDE_TIMEOUT"},             // a letter left out
      {"oneside_task_threads", "ONESIDE_TASK_THREADS"},  // lower case
      {"ONESDIE_BARRIER", "ONESIDE_BARRIER"},            // the prefix misspelt
      {"ONESIDE_WAIT_SPIN_US", "ONESIDE_WAIT_SPIN_NS"},  // the wrong unit
      {"ONESIDE_KILL_GRACE", "ONESIDE_KILL_GRACE_MS"},   // the unit left off
      {"ONESIDE_BIND", "ONESIDE_BIND_TO"},               // the last word left off
      {"ONESIDE_HEAP_SEGMENT", "ONESIDE_HEAP_SEGMENT_BYTES"},
  };
  for (const auto& [typo, meant] : cases) EXPECT_EQ(detail::misspelt_setting(typo), meant) << typo;
  // Nothing close, ambiguous, or a setting itself: no suggestion.
  for (const char* name :
       {"ONESIDE_FROBNICATE", "ONESIDE_SELFCHECK_FAIL", "ONESIDE_MPI", "ONESIDE_SHM",
        "ONESIDE_TRANSPORT", "PATH", "OMPI_COMM_WORLD_SIZE", "HOSTNAME", ""}) {
    EXPECT_EQ(detail::misspelt_setting(name), "") << name;
  }
}

TEST_F(SettingsEnv, TheEnvironmentIsCheckedAsAWhole) {
  using detail::settings_reader;
  EXPECT_EQ(problems(settings_reader::runtime), std::vector<std::string>{});
  EXPECT_EQ(problems(settings_reader::launcher), std::vector<std::string>{});
  set("ONESIDE_AM_SLOTS", "100000000");
  set("ONESIDE_TASK_THREADS", "100000");
  set("ONESIDE_TRANSPORT", "foo");
  set("ONESIDE_COLL_SLOTS", "64");
  set("ONESIDE_COLL_SLOT_BYTES", "8M");
  set("ONESIDE_AM_SLOT", "1");
  set("ONESIDE_UNRELATED_THING", "1");
  const std::vector<std::string> want = {
      "error: ONESIDE_TRANSPORT='foo' is not one of auto|shm|mpi",
      "error: ONESIDE_AM_SLOTS='100000000' is out of range; valid: 2 to 65536",
      "error: ONESIDE_TASK_THREADS='100000' is out of range; valid: 0 to 1024",
      "error: ONESIDE_COLL_SLOTS=64 times ONESIDE_COLL_SLOT_BYTES=8M is more than 256M bytes of "
      "shared memory for each team member's collective ring",
      "error: ONESIDE_AM_SLOT is not a oneside setting; did you mean ONESIDE_AM_SLOTS?",
      "warning: ONESIDE_UNRELATED_THING is not a oneside setting and is ignored (oneside-run "
      "--settings lists them)"};
  std::vector<std::string> got = problems(settings_reader::runtime);
  // Unknown names come in the environment's order.
  std::sort(got.end() - 2, got.end());
  EXPECT_EQ(got, want);
  set("ONESIDE_COLL_SLOT_BYTES", "4M");
  got = problems(settings_reader::runtime);
  EXPECT_EQ(std::count_if(got.begin(), got.end(),
                          [](const std::string& p) { return p.find("COLL") != p.npos; }),
            0)
      << "64 slots of 4M are 256M: allowed";
}

TEST_F(SettingsEnv, TheTransportMustSuitTheLauncher) {
  using detail::settings_reader;
  set("ONESIDE_TRANSPORT", "mpi");
  const std::vector<std::string> launcher = problems(settings_reader::launcher);
  ASSERT_EQ(launcher.size(), 1U);
  EXPECT_NE(launcher[0].find("error: ONESIDE_TRANSPORT='mpi' needs "), std::string::npos);
  // Started bare: no MPI launcher either.
  ASSERT_EQ(problems(settings_reader::runtime).size(), 1U);
  // Under mpirun: fine (whether this build has MPI is the transport table's to say).
  set("OMPI_COMM_WORLD_SIZE", "2");
  EXPECT_EQ(problems(settings_reader::runtime), std::vector<std::string>{});
  EXPECT_EQ(problems(settings_reader::launcher).size(), 1U);
}

TEST_F(SettingsEnv, LauncherVariablesAreCheckedAsTheProtocol) {
  using detail::settings_reader;
  // Without ONESIDE_JOB_ID they mean nothing: warnings.
  set("ONESIDE_SIZE", "4");
  EXPECT_EQ(problems(settings_reader::runtime),
            std::vector<std::string>{"warning: ONESIDE_SIZE='4' is ignored: this process was not "
                                     "started by oneside-run, which sets it for each rank"});
  EXPECT_EQ(problems(settings_reader::launcher),
            std::vector<std::string>{"warning: ONESIDE_SIZE='4' is ignored: oneside-run sets it "
                                     "for each rank (use -n)"});
  // A whole, valid set: a rank of a job (or a process a rank started); oneside-run started
  // inside such a rank replaces them without a word.
  set("ONESIDE_JOB_ID", "4242-00ff");
  set("ONESIDE_RANK", "3");
  set("ONESIDE_LOCAL_RANK", "3");
  set("ONESIDE_LOCAL_SIZE", "4");
  set("ONESIDE_BINDING", "core");
  EXPECT_TRUE(detail::started_by_launcher());
  EXPECT_EQ(problems(settings_reader::runtime), std::vector<std::string>{});
  EXPECT_EQ(problems(settings_reader::launcher), std::vector<std::string>{});
  // One of them wrong: an error at the open, a warning for each to the launcher.
  set("ONESIDE_RANK", "4");
  const std::string hint =
      " (oneside-run sets the launcher-to-rank variables for each rank; do not set them by hand)";
  EXPECT_EQ(problems(settings_reader::runtime),
            std::vector<std::string>{
                cat("error: ONESIDE_RANK=4 is not a rank of a job of ONESIDE_SIZE=4", hint)});
  EXPECT_EQ(problems(settings_reader::launcher).size(), 6U);
  set("ONESIDE_RANK", "3");
  unset("ONESIDE_LOCAL_SIZE");
  unset("ONESIDE_BINDING");
  set("ONESIDE_JOB_ID", "a/b");
  EXPECT_EQ(
      problems(settings_reader::runtime),
      (std::vector<std::string>{
          cat("error: ONESIDE_JOB_ID='a/b' is not a job identifier (at most 64 letters, "
              "digits, '-' and '_')",
              hint),
          cat("error: ONESIDE_JOB_ID is set without ONESIDE_LOCAL_SIZE, ONESIDE_BINDING", hint)}));
}

}  // namespace
}  // namespace oneside
