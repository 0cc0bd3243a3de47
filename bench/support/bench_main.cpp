// The Google Benchmark main of oneside's benches: opens the runtime, runs the selected
// benchmarks in lockstep on every rank (see lockstep.hpp), lets rank 0 alone report, and
// records in the context what the figures depend on: ranks, transport, binding,
// oversubscription and the commit.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include <benchmark/benchmark.h>

#include <oneside/oneside.hpp>

#include "lockstep.hpp"
#include "runtime/transport.hpp"

#ifndef ONESIDE_BENCH_GIT_COMMIT
#define ONESIDE_BENCH_GIT_COMMIT "unknown"
#endif

namespace {

// The runtime's own rule (runtime/context/runtime.cpp): ONESIDE_OVERSUBSCRIBE, or, when
// auto, more ranks on this node than hardware threads.
bool is_oversubscribed() {
  const std::string mode = oneside::setting_value("ONESIDE_OVERSUBSCRIBE");
  if (mode == "yes" || mode == "no") return mode == "yes";
  return oneside::local_team().size() > std::max(1, oneside::this_machine().pus);
}

void add_context() {
  const oneside::machine_topology m = oneside::this_machine();
  benchmark::AddCustomContext("oneside_version", std::string(oneside::version_string));
  benchmark::AddCustomContext("git_commit", ONESIDE_BENCH_GIT_COMMIT);
  benchmark::AddCustomContext("ranks", std::to_string(oneside::world().size()));
  benchmark::AddCustomContext("ranks_on_node", std::to_string(oneside::local_team().size()));
  benchmark::AddCustomContext("cores", std::to_string(m.cores));
  benchmark::AddCustomContext("transport", std::string(oneside::transport::current().name()));
  benchmark::AddCustomContext("oversubscribed", is_oversubscribed() ? "yes" : "no");
  benchmark::AddCustomContext("binding", oneside::setting_value("ONESIDE_BINDING"));
  benchmark::AddCustomContext("rank0_placement", oneside::this_rank_topology().describe());
  benchmark::AddCustomContext("method",
                              "per operation; each batch timed on every rank, slowest rank counts");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    oneside::runtime rt(argc, argv);
    const bool reporting = rt.rank() == 0;
    if (reporting) add_context();
    const bool ok = oneside::bench::run_benchmarks(argc, argv, reporting);
    rt.close();
    return ok ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oneside bench: %s\n", e.what());
    return 1;
  }
}
