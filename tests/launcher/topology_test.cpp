// Tests of the topology module (runtime/topology): the machine as hwloc sees it, the
// placement of a process restricted to one PU, index lists, and the launcher's binding plans.
#include <set>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include <oneside/runtime/error.hpp>
#include <oneside/runtime/topology.hpp>

#include "launcher_harness.hpp"
#include "topology/binding.hpp"
#include "topology/index_list.hpp"

namespace oneside::test {
namespace {

TEST(Topology, MachineIsPlausible) {
  const machine_topology m = this_machine();
  EXPECT_GE(m.packages, 1);
  EXPECT_GE(m.numa_nodes, 1);
  EXPECT_GE(m.cores, 1);
  EXPECT_GE(m.pus, m.cores);
  EXPECT_GE(m.cores, m.packages);
  // hwloc leaves out PUs a cgroup forbids, so a container may see fewer than are online.
  EXPECT_LE(m.pus, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
}

TEST(Topology, ThisProcessMatchesItsAffinity) {
  const rank_topology& t = this_rank_topology();
  EXPECT_EQ(t.pus, own_affinity());
  EXPECT_FALSE(t.cores.empty());
  EXPECT_FALSE(t.numa_nodes.empty());
  EXPECT_EQ(t.is_bound, static_cast<int>(t.pus.size()) < this_machine().pus);
  EXPECT_EQ(&t, &this_rank_topology()) << "read once and cached";
  EXPECT_FALSE(t.describe().empty());
}

// A process restricted to one PU with sched_setaffinity before it first asks for its
// topology (launcher_probe --bind-pu, run directly: this process has its topology cached
// already, and so would a forked child) reports exactly that PU, its one core, and is_bound.
TEST(Topology, ProcessBoundToOnePuReportsIt) {
  const std::vector<int> mine = own_affinity();
  if (this_machine().pus < 2 || mine.empty()) GTEST_SKIP() << "needs at least two PUs";
  const int pu = mine.back();
  const scratch_dir dir;
  process_run probe({probe_path(), "--bind-pu", std::to_string(pu), "--record", dir.path()});
  const run_result r = probe.wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto recs = read_records(dir.path());
  ASSERT_EQ(recs.size(), 1U);
  const rank_record& rec = recs.begin()->second;
  EXPECT_EQ(rec.affinity, std::vector<int>{pu}) << "the OS's view";
  EXPECT_TRUE(rec.topo_bound);
  EXPECT_EQ(rec.topo_pus, std::vector<int>{pu});
  EXPECT_EQ(rec.topo_cores.size(), 1U);
  EXPECT_FALSE(rec.topo_numa.empty());
  EXPECT_TRUE(rec.topo_describe.starts_with("core ")) << rec.topo_describe;
  EXPECT_NE(rec.topo_describe.find(cat("(PUs ", std::to_string(pu), ")")), std::string::npos)
      << rec.topo_describe;
}

TEST(Topology, BindingAnEmptyListIsAnError) {
  try {
    detail::bind_this_process({});
    ADD_FAILURE() << "no exception";
  } catch (const error& e) {
    EXPECT_EQ(e.error_class(), error_class::arg);
  }
}

TEST(Topology, IndexListsRoundTrip) {
  EXPECT_EQ(detail::format_index_list(std::vector<int>{6, 0, 1, 2, 3, 3}), "0-3,6");
  EXPECT_EQ(detail::format_index_list(std::vector<int>{}), "");
  EXPECT_EQ(detail::format_index_list(std::vector<int>{5}), "5");
  EXPECT_EQ(detail::parse_index_list("0-3,6"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(detail::parse_index_list(""), std::vector<int>{});
  for (const char* bad : {"x", "3-1", "1,", "-1", "1-", "1,,2"}) {
    EXPECT_THROW(detail::parse_index_list(bad), error) << bad;
  }
}

TEST(Topology, CorePlansGiveEveryRankItsOwnCore) {
  const detail::placement_resources have = detail::available_resources();
  ASSERT_GE(have.cores, 1);
  const auto plan = detail::plan_bindings(have.cores, detail::bind_policy::core);
  ASSERT_EQ(static_cast<int>(plan.size()), have.cores);
  std::set<int> seen;
  for (const detail::rank_binding& b : plan) {
    EXPECT_EQ(b.policy, detail::bind_policy::core);
    EXPECT_FALSE(b.pus.empty());
    EXPECT_TRUE(b.description.starts_with("bound to core ")) << b.description;
    for (int pu : b.pus) EXPECT_TRUE(seen.insert(pu).second) << "PU " << pu << " given twice";
  }
  EXPECT_EQ(static_cast<int>(seen.size()), have.pus);
  EXPECT_EQ(detail::default_bind_policy(have.cores), detail::bind_policy::core);
  EXPECT_EQ(detail::default_bind_policy(have.cores + 1), detail::bind_policy::none);
  try {
    detail::plan_bindings(have.cores + 1, detail::bind_policy::core);
    ADD_FAILURE() << "a core plan with more ranks than cores";
  } catch (const error& e) {
    EXPECT_EQ(e.error_class(), error_class::arg);
  }
}

// What no rank of a plan is bound to is spare (the launcher's ONESIDE_SPARE_PUS); unbound
// ranks leave nothing spare.
TEST(Topology, SparePusAreThoseNoRankIsBoundTo) {
  const detail::placement_resources have = detail::available_resources();
  const std::vector<int> all = own_affinity();
  for (int ranks = 1; ranks <= have.cores; ++ranks) {
    const auto plan = detail::plan_bindings(ranks, detail::bind_policy::core);
    std::set<int> expected(all.begin(), all.end());
    for (const detail::rank_binding& b : plan) {
      for (int pu : b.pus) expected.erase(pu);
    }
    const std::vector<int> spare = detail::spare_pus(plan);
    EXPECT_EQ(std::set<int>(spare.begin(), spare.end()), expected) << ranks << " ranks";
    EXPECT_EQ(spare.empty(), ranks == have.cores) << ranks << " ranks";
  }
  EXPECT_TRUE(detail::spare_pus(detail::plan_bindings(1, detail::bind_policy::none)).empty());
}

TEST(Topology, NumaAndUnboundPlans) {
  const detail::placement_resources have = detail::available_resources();
  const int n = have.numa_nodes + 1;
  const auto numa = detail::plan_bindings(n, detail::bind_policy::numa);
  ASSERT_EQ(static_cast<int>(numa.size()), n);
  EXPECT_EQ(numa.front().pus, numa.back().pus) << "round robin over the NUMA nodes";
  const auto none = detail::plan_bindings(3, detail::bind_policy::none);
  for (const detail::rank_binding& b : none) {
    EXPECT_EQ(b.pus, own_affinity());
    EXPECT_TRUE(b.description.starts_with("not bound (PUs ")) << b.description;
  }
  EXPECT_THROW(detail::plan_bindings(0, detail::bind_policy::none), error);
  EXPECT_EQ(detail::parse_bind_policy("numa"), detail::bind_policy::numa);
  EXPECT_EQ(detail::parse_bind_policy("socket"), std::nullopt);
}

}  // namespace
}  // namespace oneside::test
