// Timing of the graph apps' collective phases: the slowest rank's seconds, as Graph500 times
// its kernels.
#pragma once

#include <chrono>

#include <oneside/oneside.hpp>

namespace oneside::apps::graph {

// Runs f on every rank of `t`, started together after a barrier; the slowest rank's seconds.
template <class F>
double timed(const team& t, F&& f) {
  barrier(t);
  const auto start = std::chrono::steady_clock::now();
  f();
  const double mine =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return allreduce(t, mine, op::max);
}

}  // namespace oneside::apps::graph
