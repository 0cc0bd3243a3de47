// What the pgas tests share: a fixture whose ranks talk to their ring neighbours, and the
// exchange of every rank's pointer to a block each rank allocated.
#pragma once

#include <cstdint>
#include <vector>

#include <oneside/oneside.hpp>

#include "rank_test.hpp"

namespace oneside::test {

class PgasTest : public RankTest {
 protected:
  static rank_t right() { return (rank() + 1) % size(); }
  static rank_t left() { return (rank() + size() - 1) % size(); }
};

// Every rank's pointer `p` (to a block each rank allocated), by rank. Collective.
template <class T>
std::vector<global_ptr<T>> everyones(global_ptr<T> p) {
  const std::vector<std::uint64_t> addr =
      allgather(world(), static_cast<std::uint64_t>(p.address()));
  std::vector<global_ptr<T>> all;
  for (rank_t r = 0; r < world().size(); ++r) {
    all.emplace_back(r, static_cast<std::uintptr_t>(addr[static_cast<std::size_t>(r)]));
  }
  return all;
}

}  // namespace oneside::test
