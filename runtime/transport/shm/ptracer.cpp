// The job's ptracer (see ptracer.hpp).
#include "transport/shm/ptracer.hpp"

#include <algorithm>
#include <array>
#include <fcntl.h>
#include <string>
#include <sys/prctl.h>
#include <unistd.h>

#include "bootstrap/bootstrap.hpp"

namespace oneside::transport::shm_detail {
namespace {

// The parent of `pid` from /proc/<pid>/stat ("pid (comm) state ppid …"; comm may hold spaces
// and parentheses, so the fields are read after the last ')'), or 0 when unreadable.
pid_t parent_of(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::array<char, 1024> buf{};
  const ssize_t got = ::read(fd, buf.data(), buf.size() - 1);
  ::close(fd);
  if (got <= 0) return 0;
  const std::string text(buf.data(), static_cast<std::size_t>(got));
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos || close + 4 >= text.size()) return 0;
  // ") S 1234 …": skip ") ", the state and a space.
  const std::size_t at = text.find(' ', close + 2);
  if (at == std::string::npos) return 0;
  try {
    return static_cast<pid_t>(std::stol(text.substr(at + 1)));
  } catch (...) {
    return 0;
  }
}

inline constexpr std::size_t chain_limit = 64;

}  // namespace

std::vector<pid_t> ancestors_of_self(std::size_t limit) {
  std::vector<pid_t> chain;
  for (pid_t p = ::getppid(); p > 1 && chain.size() < limit; p = parent_of(p)) {
    chain.push_back(p);
  }
  return chain;
}

pid_t nearest_common_ancestor(std::span<const std::vector<pid_t>> chains) {
  if (chains.empty()) return 0;
  for (pid_t candidate : chains.front()) {
    const bool everywhere = std::all_of(chains.begin() + 1, chains.end(), [&](const auto& c) {
      return std::find(c.begin(), c.end(), candidate) != c.end();
    });
    if (everywhere) return candidate;
  }
  return 0;
}

pid_t declare_job_ptracer(oneside::detail::bootstrap& boot) {
  std::array<std::int32_t, chain_limit> mine{};
  const std::vector<pid_t> chain = ancestors_of_self(chain_limit);
  std::copy(chain.begin(), chain.end(), mine.begin());
  const auto n = static_cast<std::size_t>(boot.size());
  std::vector<std::int32_t> all(n * chain_limit);
  boot.allgather(mine.data(), all.data(), sizeof mine);
  std::vector<std::vector<pid_t>> chains(n);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t k = 0; k < chain_limit && all[r * chain_limit + k] != 0; ++k) {
      chains[r].push_back(static_cast<pid_t>(all[r * chain_limit + k]));
    }
  }
  const pid_t common = nearest_common_ancestor(chains);
  if (common > 1) ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(common), 0, 0, 0);
  return common;
}

}  // namespace oneside::transport::shm_detail
