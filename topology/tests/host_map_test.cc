#include "topology/host_map.h"

#include <gtest/gtest.h>

#include "topology/ring_schedule.h"

namespace tsr::topology {
namespace {

RankPlacement at(int rank, const std::string& host, int numa = -1, const std::string& loc = "") {
  RankPlacement p;
  p.rank = rank;
  p.hostname = host;
  p.numaNode = numa;
  p.locality = loc;
  return p;
}

TEST(HostMap, GroupsRanksByHost) {
  auto map = buildHostMap({at(0, "a"), at(1, "b"), at(2, "a"), at(3, "c"), at(4, "b")});
  ASSERT_TRUE(map.isOk()) << map.status().toString();
  const HostMap& m = map.value();
  ASSERT_EQ(m.hosts.size(), 3u);
  EXPECT_EQ(m.hosts[0].name, "a");
  EXPECT_EQ(m.hosts[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(m.hosts[1].ranks, (std::vector<int>{1, 4}));
  EXPECT_EQ(m.localRank, (std::vector<int>{0, 0, 1, 0, 1}));
  EXPECT_EQ(m.localSize, (std::vector<int>{2, 2, 2, 1, 2}));
  EXPECT_TRUE(m.sameHost(1, 4));
  EXPECT_FALSE(m.sameHost(0, 1));
}

TEST(HostMap, HostIdWinsOverHostname) {
  // Two containers both called "localhost" on different machines.
  RankPlacement a = at(0, "localhost"), b = at(1, "localhost");
  a.hostId = "machine-1";
  b.hostId = "machine-2";
  auto map = buildHostMap({a, b});
  ASSERT_TRUE(map.isOk());
  EXPECT_EQ(map.value().hosts.size(), 2u);
}

TEST(HostMap, RejectsBadRanks) {
  auto dup = buildHostMap({at(0, "a"), at(0, "a")});
  ASSERT_FALSE(dup.isOk());
  EXPECT_NE(dup.status().message().find("rank 0 is listed twice"), std::string::npos);
  auto out = buildHostMap({at(0, "a"), at(5, "a")});
  ASSERT_FALSE(out.isOk());
  EXPECT_NE(out.status().message().find("rank 5"), std::string::npos);
  EXPECT_FALSE(buildHostMap({at(0, "")}).isOk());
}

TEST(HostMap, RingKeepsHostsTogetherAndNumaContiguous) {
  // Ranks dealt round-robin over 2 hosts, NUMA nodes interleaved inside each host.
  std::vector<RankPlacement> placements;
  for (int r = 0; r < 16; ++r) placements.push_back(at(r, r % 2 ? "b" : "a", (r / 2) % 2));
  HostMap map = buildHostMap(placements).take();
  std::vector<int> order = ringOrder(map);
  EXPECT_EQ(order, (std::vector<int>{0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15}));
  EXPECT_EQ(hostCrossings(map, order), 2);
  EXPECT_EQ(numaCrossings(map, order), 2);  // one NUMA boundary inside each host
  EXPECT_EQ(hostCrossings(map, identityOrder(16)), 16);
}

}  // namespace
}  // namespace tsr::topology
