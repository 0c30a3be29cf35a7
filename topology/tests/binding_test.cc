#include "topology/binding.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "topology/discovery.h"
#include "topology/tests/fixtures.h"

namespace tsr::topology {
namespace binding_test {  // named, not anonymous: the test binary is a unity build

MachineTopology load(const std::string& name) {
  auto result = loadXml(testing::fixture(name));
  EXPECT_TRUE(result.isOk()) << result.status().toString();
  return result.take();
}

std::vector<int> range(int first, int last) {
  std::vector<int> out;
  for (int i = first; i <= last; ++i) out.push_back(i);
  return out;
}

TEST(Binding, ParseMode) {
  EXPECT_EQ(parseBindMode("none").value(), BindMode::kNone);
  EXPECT_EQ(parseBindMode("numa").value(), BindMode::kNuma);
  EXPECT_EQ(parseBindMode("core").value(), BindMode::kCore);
  auto bad = parseBindMode("socket");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("'socket'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("none|numa|core"), std::string::npos);
}

TEST(Binding, GpuDecidesTheNumaNode) {
  MachineTopology topo = load("dual_socket_8gpu_4nic.xml");
  for (int r = 0; r < 8; ++r) {
    BindingPlan plan = chooseBinding(topo, r, 8, BindMode::kNuma);
    EXPECT_EQ(plan.devices.gpu, r);
    EXPECT_EQ(plan.devices.numaNode, r < 4 ? 0 : 1);
    EXPECT_EQ(plan.pus, r < 4 ? range(0, 15) : range(16, 31)) << r;
    EXPECT_NE(plan.devices.reason.find("GPU cuda" + std::to_string(r)), std::string::npos);
  }
  // Nearest NICs: GPU0/1 share a switch with NIC0; GPU6/7 with NIC3.
  EXPECT_EQ(assignDevices(topo, 1, 8).nic, 0);
  EXPECT_EQ(assignDevices(topo, 6, 8).nic, 3);
}

TEST(Binding, CoreModeSplitsTheNumaNodeCores) {
  MachineTopology topo = load("dual_socket_8gpu_4nic.xml");
  EXPECT_EQ(chooseBinding(topo, 0, 8, BindMode::kCore).pus, range(0, 3));
  EXPECT_EQ(chooseBinding(topo, 1, 8, BindMode::kCore).pus, range(4, 7));
  EXPECT_EQ(chooseBinding(topo, 3, 8, BindMode::kCore).pus, range(12, 15));
  EXPECT_EQ(chooseBinding(topo, 4, 8, BindMode::kCore).pus, range(16, 19));
  // 16 ranks on 8 GPUs: 8 ranks per NUMA node (GPUs 0-3 twice), one core (2 PUs) each; rank 9 is the 6th.
  EXPECT_EQ(chooseBinding(topo, 9, 16, BindMode::kCore).pus, range(10, 11));
  EXPECT_TRUE(chooseBinding(topo, 0, 8, BindMode::kNone).pus.empty());
}

TEST(Binding, NicDecidesWithoutGpus) {
  MachineTopology topo = load("cpu_only_2numa.xml");
  BindingPlan plan = chooseBinding(topo, 0, 2, BindMode::kNuma);
  EXPECT_EQ(plan.devices.gpu, -1);
  EXPECT_EQ(plan.devices.nic, 0);
  EXPECT_EQ(plan.devices.numaNode, 1);
  EXPECT_EQ(plan.pus, range(4, 7));
  EXPECT_EQ(chooseBinding(topo, 0, 2, BindMode::kCore).pus, range(4, 5));
  EXPECT_EQ(chooseBinding(topo, 1, 2, BindMode::kCore).pus, range(6, 7));
  // More local ranks than the NIC's node has cores (4): round-robin over the nodes, each rank
  // keeping the NIC, rather than 8 ranks on 4 cores beside an idle node; core slices then do
  // not overlap.
  for (int r = 0; r < 8; ++r) {
    BindingPlan crowded = chooseBinding(topo, r, 8, BindMode::kNuma);
    EXPECT_EQ(crowded.devices.numaNode, r % 2) << r;
    EXPECT_EQ(crowded.devices.nic, 0) << r;
    EXPECT_NE(crowded.devices.reason.find("the NIC's NUMA 1 has 4 cores for 8 local ranks"), std::string::npos)
        << crowded.devices.reason;
  }
  std::vector<int> used;
  for (int r = 0; r < 5; ++r)
    for (int pu : chooseBinding(topo, r, 5, BindMode::kCore).pus) used.push_back(pu);
  std::sort(used.begin(), used.end());
  EXPECT_EQ(std::adjacent_find(used.begin(), used.end()), used.end()) << "a PU given to two of 5 ranks";
}

TEST(Binding, RoundRobinWithoutDevices) {
  MachineTopology topo = load("cpu_only_2numa.xml");
  topo.nics.clear();
  EXPECT_EQ(chooseBinding(topo, 0, 4, BindMode::kNuma).pus, range(0, 3));
  EXPECT_EQ(chooseBinding(topo, 1, 4, BindMode::kNuma).pus, range(4, 7));
  EXPECT_EQ(chooseBinding(topo, 2, 4, BindMode::kCore).pus, range(2, 3));
  EXPECT_NE(chooseBinding(topo, 1, 4, BindMode::kNuma).devices.reason.find("round-robin"), std::string::npos);
  // More ranks than cores: slices wrap instead of going empty.
  EXPECT_EQ(chooseBinding(topo, 10, 12, BindMode::kCore).pus.size(), 1u);
}

TEST(Binding, DescribeAndCpuList) {
  EXPECT_EQ(formatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(formatCpuList({}), "");
  MachineTopology topo = load("single_socket_2gpu_1nic.xml");
  std::string text = chooseBinding(topo, 1, 2, BindMode::kNuma).describe();
  EXPECT_NE(text.find("local rank 1: numa -> NUMA 0, PUs 0-15"), std::string::npos) << text;
}

TEST(Binding, ApplyOnThisMachine) {
  auto topo = discoverLocal();
  ASSERT_TRUE(topo.isOk());
  EXPECT_TRUE(applyBinding(chooseBinding(topo.value(), 0, 1, BindMode::kNone)).isOk());
  BindingPlan plan = chooseBinding(topo.value(), 0, 1, BindMode::kNuma);
  ASSERT_FALSE(plan.pus.empty());
  Status status = applyBinding(plan);
  EXPECT_TRUE(status.isOk()) << status.toString();
  // Binding to a PU that does not exist fails with a message naming it.
  plan.pus = {4095};
  Status bad = applyBinding(plan);
  EXPECT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("4095"), std::string::npos);
  // Leave the test process unbound again.
  plan.pus = topo.value().numaPus(0);
  for (int n = 1; n < static_cast<int>(topo.value().numaNodes.size()); ++n)
    for (int pu : topo.value().numaPus(n)) plan.pus.push_back(pu);
  std::sort(plan.pus.begin(), plan.pus.end());
  EXPECT_TRUE(applyBinding(plan).isOk());
}

}  // namespace binding_test
}  // namespace tsr::topology
