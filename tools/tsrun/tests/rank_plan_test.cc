#include "tools/tsrun/rank_plan.h"

#include <gtest/gtest.h>

namespace tsr::tools::tsrun {
namespace {

PlanOptions options(int np) {
  PlanOptions o;
  o.np = np;
  o.localNames = {"vm", "vm.example.com"};
  o.localAddress = "vm";
  o.source = "hosts.txt";
  return o;
}

std::vector<RankSlot> planOk(const std::vector<HostEntry>& hosts, const PlanOptions& o) {
  auto result = buildRankPlan(hosts, o);
  EXPECT_TRUE(result.isOk()) << result.status().toString();
  return result.isOk() ? result.value() : std::vector<RankSlot>{};
}

TEST(RankPlan, LocalHostNames) {
  std::vector<std::string> names = {"vm", "vm.example.com"};
  for (const char* local : {"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "vm", "VM.example.com"}) {
    EXPECT_TRUE(isLocalHost(local, names)) << local;
  }
  for (const char* remote :
       {"node1", "127.0.0", "127.0.0.1.5", "127.0.0.256", "128.0.0.1", "vm2", "fakehost1", "10.0.0.1"}) {
    EXPECT_FALSE(isLocalHost(remote, names)) << remote;
  }
}

TEST(RankPlan, RanksFillSlotsInOrder) {
  std::vector<HostEntry> hosts = {{"a", 2, 1}, {"b", 3, 2}, {"c", 1, 3}};
  auto plan = planOk(hosts, options(5));
  ASSERT_EQ(plan.size(), 5u);
  std::vector<std::string> host;
  std::vector<int> localRank, localSize;
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(plan[r].rank, r);
    EXPECT_FALSE(plan[r].local);
    host.push_back(plan[r].host);
    localRank.push_back(plan[r].localRank);
    localSize.push_back(plan[r].localSize);
  }
  EXPECT_EQ(host, (std::vector<std::string>{"a", "a", "b", "b", "b"}));
  EXPECT_EQ(localRank, (std::vector<int>{0, 1, 0, 1, 2}));
  EXPECT_EQ(localSize, (std::vector<int>{2, 2, 3, 3, 3}));
}

TEST(RankPlan, RemotePortsAreBasePlusLocalRank) {
  PlanOptions o = options(4);
  o.basePort = 31000;
  auto plan = planOk({{"a", 2, 1}, {"b", 2, 2}}, o);
  EXPECT_EQ(peersString(plan), "a:31000,a:31001,b:31000,b:31001");
  EXPECT_EQ(countLocalRanks(plan), 0);
}

TEST(RankPlan, AllLocalJobUses127AndPickedPorts) {
  auto plan = planOk({{"localhost", 3, 1}}, options(3));
  EXPECT_EQ(countLocalRanks(plan), 3);
  for (const RankSlot& s : plan) {
    EXPECT_TRUE(s.local);
    EXPECT_EQ(s.peerHost, "127.0.0.1");
    EXPECT_EQ(s.port, 0);
    EXPECT_EQ(s.localSize, 3);
  }
  ASSERT_TRUE(assignLocalPorts(plan, {40001, 40007, 40003}).isOk());
  EXPECT_EQ(peersString(plan), "127.0.0.1:40001,127.0.0.1:40007,127.0.0.1:40003");
}

TEST(RankPlan, LocalNamesShareOneMachine) {
  // localhost and 127.0.0.1 are the same machine: one local-rank space of 4.
  auto plan = planOk({{"localhost", 2, 1}, {"127.0.0.1", 2, 2}}, options(4));
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(plan[r].localRank, r);
    EXPECT_EQ(plan[r].localSize, 4);
  }
  EXPECT_EQ(plan[2].host, "127.0.0.1");
}

TEST(RankPlan, MixedJobAdvertisesLocalRanksByHostName) {
  PlanOptions o = options(3);
  o.basePort = 29400;
  auto plan = planOk({{"localhost", 1, 1}, {"node1", 2, 2}}, o);
  ASSERT_TRUE(assignLocalPorts(plan, {45000}).isOk());
  EXPECT_EQ(peersString(plan), "vm:45000,node1:29400,node1:29401");
  EXPECT_EQ(plan[0].localSize, 1);
  EXPECT_EQ(plan[1].localSize, 2);
}

TEST(RankPlan, FewerRanksThanSlots) {
  auto plan = planOk({{"a", 4, 1}, {"b", 4, 2}}, options(3));
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[2].host, "a");
  EXPECT_EQ(plan[2].localSize, 3);
}

TEST(RankPlan, TooManyRanksNamesSourceAndSlots) {
  auto result = buildRankPlan({{"a", 2, 1}, {"b", 2, 2}}, options(5));
  ASSERT_FALSE(result.isOk());
  const std::string& m = result.status().message();
  EXPECT_NE(m.find("-np 5"), std::string::npos) << m;
  EXPECT_NE(m.find("4 slots"), std::string::npos) << m;
  EXPECT_NE(m.find("hosts.txt"), std::string::npos) << m;
}

TEST(RankPlan, BadInputs) {
  EXPECT_FALSE(buildRankPlan({{"a", 2, 1}}, options(0)).isOk());
  EXPECT_FALSE(buildRankPlan({}, options(1)).isOk());
  PlanOptions o = options(2);
  o.basePort = 65535;
  auto high = buildRankPlan({{"a", 2, 1}}, o);
  ASSERT_FALSE(high.isOk());
  EXPECT_NE(high.status().message().find("65536"), std::string::npos);
  o.basePort = 0;
  EXPECT_FALSE(buildRankPlan({{"a", 2, 1}}, o).isOk());
}

TEST(RankPlan, AssignLocalPortsChecksItsInput) {
  auto plan = planOk({{"localhost", 2, 1}}, options(2));
  EXPECT_FALSE(assignLocalPorts(plan, {40000}).isOk());
  EXPECT_FALSE(assignLocalPorts(plan, {40000, 40000}).isOk());
  EXPECT_FALSE(assignLocalPorts(plan, {40000, 70000}).isOk());
}

}  // namespace
}  // namespace tsr::tools::tsrun
