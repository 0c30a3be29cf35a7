#include "topology/discovery.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "topology/tests/fixtures.h"

namespace tsr::topology {
namespace {

using testing::fixture;

MachineTopology load(const std::string& name) {
  auto result = loadXml(fixture(name));
  EXPECT_TRUE(result.isOk()) << result.status().toString();
  return result.take();
}

TEST(Discovery, DualSocketFixture) {
  MachineTopology topo = load("dual_socket_8gpu_4nic.xml");
  EXPECT_EQ(topo.hostname, "gpubox");
  ASSERT_EQ(topo.packages.size(), 2u);
  ASSERT_EQ(topo.numaNodes.size(), 2u);
  EXPECT_EQ(topo.numCores, 16);
  EXPECT_EQ(topo.numPus, 32);
  EXPECT_EQ(topo.totalMemoryBytes(), 512ull << 30);
  EXPECT_EQ(topo.numaNodes[1].package, 1);
  EXPECT_EQ(topo.numaNodes[1].cores.size(), 8u);
  EXPECT_EQ(topo.numaPus(1).front(), 16);
  ASSERT_EQ(topo.gpus.size(), 8u);
  ASSERT_EQ(topo.nics.size(), 4u);
  EXPECT_EQ(topo.gpus[0].name, "cuda0");
  EXPECT_EQ(topo.gpus[0].busId, "0000:14:00.0");
  EXPECT_EQ(topo.gpus[0].vendorId, 0x10de);
  EXPECT_EQ(topo.gpus[0].model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(topo.nics[0].name, "mlx5_0");  // OpenFabrics name preferred over ib0
  EXPECT_EQ(topo.nics[0].osNames.size(), 2u);
  for (int g = 0; g < 8; ++g) EXPECT_EQ(topo.gpus[g].numaNode, g < 4 ? 0 : 1) << g;
  EXPECT_EQ(topo.nics[1].numaNode, 0);
  EXPECT_EQ(topo.nics[2].numaNode, 1);
  EXPECT_EQ(topo.gpus[0].pciPath.front(), "hb0000:[00-2f]");
}

TEST(Discovery, LinkTypesMatchNvidiaSmiCategories) {
  MachineTopology topo = load("dual_socket_8gpu_4nic.xml");
  const auto& g = topo.gpus;
  const auto& n = topo.nics;
  EXPECT_EQ(linkBetween(g[0], g[0]), LinkType::kSelf);
  EXPECT_EQ(linkBetween(g[0], g[1]), LinkType::kPix);  // same leaf switch
  EXPECT_EQ(linkBetween(g[0], n[0]), LinkType::kPix);
  EXPECT_EQ(linkBetween(g[0], g[2]), LinkType::kPxb);  // two leaves under one top switch
  EXPECT_EQ(linkBetween(g[2], n[0]), LinkType::kPxb);
  EXPECT_EQ(linkBetween(g[2], n[1]), LinkType::kNode);  // other root complex, same NUMA
  EXPECT_EQ(linkBetween(g[4], n[3]), LinkType::kPhb);   // two switches under one host bridge
  EXPECT_EQ(linkBetween(g[4], n[2]), LinkType::kPix);
  EXPECT_EQ(linkBetween(g[0], g[4]), LinkType::kSys);
  EXPECT_EQ(linkBetween(n[0], n[3]), LinkType::kSys);
  EXPECT_EQ(linkBetween(g[4], g[0]), linkBetween(g[0], g[4]));
  EXPECT_STREQ(linkTypeName(LinkType::kPxb), "PXB");
  EXPECT_NE(linkTypeLegend().find("NODE"), std::string::npos);
}

TEST(Discovery, NearestNic) {
  MachineTopology topo = load("dual_socket_8gpu_4nic.xml");
  EXPECT_EQ(nearestNic(topo, 0, 0), 0);
  EXPECT_EQ(nearestNic(topo, 3, 0), 0);  // PXB beats NODE
  EXPECT_EQ(nearestNic(topo, 5, 0), 2);
  EXPECT_EQ(nearestNic(topo, 7, 0), 3);
  MachineTopology none = load("cpu_only_2numa.xml");
  EXPECT_EQ(nearestNic(none, 0, 0), -1);
}

TEST(Discovery, SingleSocketFixture) {
  MachineTopology topo = load("single_socket_2gpu_1nic.xml");
  EXPECT_EQ(topo.packages.size(), 1u);
  EXPECT_EQ(topo.numaNodes.size(), 1u);
  ASSERT_EQ(topo.gpus.size(), 2u);
  ASSERT_EQ(topo.nics.size(), 1u);
  EXPECT_EQ(topo.nics[0].name, "enp6s0");
  EXPECT_EQ(linkBetween(topo.gpus[0], topo.gpus[1]), LinkType::kPix);
  EXPECT_EQ(linkBetween(topo.gpus[0], topo.nics[0]), LinkType::kPhb);
}

TEST(Discovery, CpuOnlyFixture) {
  MachineTopology topo = load("cpu_only_2numa.xml");
  EXPECT_EQ(topo.packages.size(), 1u);
  ASSERT_EQ(topo.numaNodes.size(), 2u);
  EXPECT_TRUE(topo.gpus.empty());
  ASSERT_EQ(topo.nics.size(), 1u);
  EXPECT_EQ(topo.nics[0].numaNode, 1);
  EXPECT_EQ(topo.numaPus(0), (std::vector<int>{0, 1, 2, 3}));
}

TEST(Discovery, LocalMachineLoads) {
  auto result = discoverLocal();
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  EXPECT_GE(result.value().numPus, 1);
  EXPECT_GE(result.value().numaNodes.size(), 1u);
}

TEST(Discovery, DumpAndReloadRoundTrips) {
  std::string out = ::testing::TempDir() + "/tsr_topo_roundtrip.xml";
  ASSERT_TRUE(dumpXml(out, fixture("dual_socket_8gpu_4nic.xml")).isOk());
  auto again = loadXml(out);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again.value().gpus.size(), 8u);
  EXPECT_EQ(again.value().nics.size(), 4u);
  std::string local = ::testing::TempDir() + "/tsr_topo_local.xml";
  ASSERT_TRUE(dumpXml(local).isOk());
  EXPECT_TRUE(loadXml(local).isOk());
  std::remove(out.c_str());
  std::remove(local.c_str());
}

TEST(Discovery, ErrorsNameTheFile) {
  auto missing = loadXml("/nonexistent/topo.xml");
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("/nonexistent/topo.xml"), std::string::npos);
  EXPECT_NE(missing.status().message().find("cannot be read"), std::string::npos);

  // A file without end (or a huge one) is refused at the limit, not read into memory.
  auto endless = loadXml("/dev/zero");
  ASSERT_FALSE(endless.isOk());
  EXPECT_NE(endless.status().message().find("'/dev/zero' is too large"), std::string::npos)
      << endless.status().message();

  auto garbage = loadXmlText("this is not xml", "garbage.xml");
  ASSERT_FALSE(garbage.isOk());
  EXPECT_NE(garbage.status().message().find("garbage.xml"), std::string::npos);

  auto broken = loadXmlText("<?xml version=\"1.0\"?><topology version=\"2.0\"><object type=", "broken.xml");
  ASSERT_FALSE(broken.isOk());
  EXPECT_NE(broken.status().message().find("broken.xml"), std::string::npos);

  EXPECT_FALSE(dumpXml("/nonexistent/dir/out.xml").isOk());
}

}  // namespace
}  // namespace tsr::topology
