// The settings registry: the README's table lists exactly the registry's settings with their
// defaults (STYLE.md R9), values are parsed strictly, the README's test command is the one
// CI runs and its demo command builds only what the demo needs.
#include "runtime/settings.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include <oneside/oneside.hpp>

#ifndef ONESIDE_SOURCE_DIR
#error "ONESIDE_SOURCE_DIR must name the source tree"
#endif

namespace oneside {
namespace {

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
  // Rows of the settings table: | `ONESIDE_NAME` | type | default | meaning |
  // Cells may hold escaped pipes ("thread\\|poll").
  const std::regex row(
      R"(^\|\s*`(ONESIDE_[A-Z0-9_]+)`\s*\|\s*((?:[^|\\]|\\.)*?)\s*\|\s*((?:[^|\\]|\\.)*?)\s*\|)");
  std::map<std::string, std::string> documented;
  std::istringstream lines(readme);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) documented[m[1]] = strip_backticks(m[3]);
  }
  for (const setting_info& s : all_settings()) {
    auto it = documented.find(std::string(s.name));
    ASSERT_NE(it, documented.end()) << s.name << " is in the registry but not in the README table";
    const std::string want = s.default_value.empty() ? "(unset)" : std::string(s.default_value);
    EXPECT_EQ(it->second, want) << s.name << ": the README's default differs from the registry's";
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

TEST(Settings, ValuesAreParsedStrictly) {
  struct guard {
    const char* name;
    ~guard() { ::unsetenv(name); }
  } g{"ONESIDE_COLL_SLOT_BYTES"};
  ::setenv(g.name, "64K", 1);
  EXPECT_EQ(detail::setting_int(g.name), 65536);
  ::setenv(g.name, "2m", 1);
  EXPECT_EQ(detail::setting_int(g.name), 2 << 20);
  for (const char* bad : {"", "x", "12Q", "-1", "5KB"}) {
    ::setenv(g.name, bad, 1);
    try {
      (void)detail::setting_int(g.name);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const error& e) {
      EXPECT_EQ(e.error_class(), error_class::arg);
      EXPECT_NE(std::string(e.what()).find(g.name), std::string::npos);
    }
  }
  ::unsetenv(g.name);
  const std::int64_t unset = detail::setting_int(g.name);
  for (const setting_info& s : all_settings()) {
    if (s.name == g.name) ::setenv(g.name, std::string(s.default_value).c_str(), 1);
  }
  EXPECT_EQ(unset, detail::setting_int(g.name)) << "the registry's default applies when unset";
  ::unsetenv(g.name);
  try {
    (void)detail::setting_int("ONESIDE_NO_SUCH_THING");
    ADD_FAILURE() << "an unknown setting was read";
  } catch (const error& e) {
    EXPECT_EQ(e.error_class(), error_class::arg);
  }
  EXPECT_EQ(setting_value("ONESIDE_AGENT"), "thread");
}

}  // namespace
}  // namespace oneside
