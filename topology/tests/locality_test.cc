// Locality claims on the XML fixtures: the ring and torus a job would use on real shapes.
#include <gtest/gtest.h>

#include <algorithm>

#include "topology/discovery.h"
#include "topology/host_map.h"
#include "topology/ring_schedule.h"
#include "topology/simulator.h"
#include "topology/tests/fixtures.h"
#include "topology/torus_schedule.h"

namespace tsr::topology {
namespace locality_test {  // named, not anonymous: the test binary is a unity build

MachineTopology load(const std::string& name) {
  auto result = loadXml(testing::fixture(name));
  EXPECT_TRUE(result.isOk()) << result.status().toString();
  return result.take();
}

// `hosts` machines shaped like `topo`, `perHost` ranks each; rank r on host hostOf(r).
HostMap job(const MachineTopology& topo, int hosts, int perHost, bool roundRobin) {
  std::vector<RankPlacement> placements;
  std::vector<int> nextLocal(hosts, 0);
  for (int r = 0; r < hosts * perHost; ++r) {
    int h = roundRobin ? r % hosts : r / perHost;
    placements.push_back(placementOn(topo, r, nextLocal[h]++, perHost, "host" + std::to_string(h)));
  }
  return buildHostMap(placements).take();
}

TEST(Locality, TwoHostsOfEightGpusCrossHostsTwice) {
  MachineTopology topo = load("dual_socket_8gpu_4nic.xml");
  for (bool roundRobin : {false, true}) {
    HostMap map = job(topo, 2, 8, roundRobin);
    std::vector<int> order = ringOrder(map);
    ASSERT_EQ(order.size(), 16u);
    EXPECT_EQ(hostCrossings(map, order), 2);
    EXPECT_EQ(numaCrossings(map, order), 2);  // socket 0 -> socket 1 once per host
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, identityOrder(16));
    EXPECT_TRUE(verifySchedule(ringAllreduce(order)).isOk());

    auto shape = torusShape(map);
    ASSERT_TRUE(shape.isOk()) << shape.status().toString();
    EXPECT_EQ(shape.value().x, 8);
    EXPECT_EQ(shape.value().y, 2);
    EXPECT_TRUE(shape.value().hostAxis);
    auto layout = torusLayout(map, shape.value());
    ASSERT_TRUE(layout.isOk());
    for (const auto& row : layout.value().grid)
      for (int rank : row) EXPECT_TRUE(map.sameHost(rank, row[0]));
    Status ok = verifySchedule(torusAllreduce(layout.value()));
    EXPECT_TRUE(ok.isOk()) << ok.toString();
  }
}

TEST(Locality, InsideAHostNumaThenSwitchAreContiguous) {
  MachineTopology topo = load("dual_socket_8gpu_4nic.xml");
  // Enumerate GPUs in an order that interleaves sockets and switches, as a BIOS might.
  std::vector<Device> scrambled;
  for (int g : {0, 4, 2, 6, 1, 5, 3, 7}) scrambled.push_back(topo.gpus[g]);
  topo.gpus = scrambled;
  HostMap map = job(topo, 1, 8, false);
  std::vector<int> order = ringOrder(map);
  // Local rank r uses scrambled[r]: NUMA 0 ranks are 0,2,4,6 and NUMA 1 ranks 1,3,5,7.
  // Within NUMA 0, GPUs 0 and 1 (ranks 0 and 4) share a leaf switch, as do 2 and 3 (ranks 2, 6).
  EXPECT_EQ(order, (std::vector<int>{0, 4, 2, 6, 1, 5, 3, 7}));
  EXPECT_EQ(numaCrossings(map, order), 2);
  EXPECT_EQ(hostCrossings(map, order), 0);
}

TEST(Locality, SmallAndGpuLessHosts) {
  MachineTopology ws = load("single_socket_2gpu_1nic.xml");
  HostMap map = job(ws, 3, 2, false);
  std::vector<int> order = ringOrder(map);
  EXPECT_EQ(order, identityOrder(6));
  EXPECT_EQ(hostCrossings(map, order), 3);
  auto shape = torusShape(map);
  ASSERT_TRUE(shape.isOk());
  EXPECT_EQ(shape.value().x, 2);
  EXPECT_EQ(shape.value().y, 3);

  MachineTopology cpu = load("cpu_only_2numa.xml");
  HostMap one = job(cpu, 1, 4, false);
  EXPECT_EQ(ringOrder(one), identityOrder(4));  // every rank follows the NIC to NUMA 1
  EXPECT_EQ(one.placements[0].numaNode, 1);
  auto flat = torusShape(one);
  ASSERT_TRUE(flat.isOk());
  EXPECT_EQ(flat.value().x, 2);
  EXPECT_FALSE(flat.value().hostAxis);
}

TEST(Locality, UnevenHostsHaveNoTorus) {
  std::vector<RankPlacement> placements;
  for (int r = 0; r < 5; ++r) {
    RankPlacement p;
    p.rank = r;
    p.hostname = r < 3 ? "big" : "small";
    placements.push_back(p);
  }
  HostMap map = buildHostMap(placements).take();
  auto shape = torusShape(map);
  ASSERT_FALSE(shape.isOk());
  EXPECT_EQ(shape.status().code(), Code::kNotSupported);
  EXPECT_NE(shape.status().message().find("big: 3, small: 2"), std::string::npos);
}

}  // namespace locality_test
}  // namespace tsr::topology
