// The runtime's use of topology: TSR_TOPO_DUMP_FILE writes each rank's machine as hwloc XML,
// TSR_TOPO_FILE describes the machine instead of discovery (a GPU box here: the ring and
// binding come from it, binding itself is not applied to this machine), TSR_BIND modes, and a
// bad TSR_TOPO_FILE fails the communicator with the file named.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/port_reservation.h"
#include "runtime/communicator.h"
#include "tests/support/thread_world.h"
#include "topology/discovery.h"

namespace tsr {
namespace {

using runtime::Communicator;
namespace fs = std::filesystem;

TEST(TopologyInRuntime, DumpFileIsWrittenPerRankAndLoads) {
  fs::path dir = fs::temp_directory_path() / "tsr_topo_dump_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string pattern = (dir / "machine_%r.xml").string();
  testing::runRanks(2, [](Communicator& comm) {
    auto req = comm.barrier();
    ASSERT_TRUE(req.isOk() && req.value()->wait().isOk());
  }, {{"TSR_TOPO_DUMP_FILE", pattern}, {"TSR_BIND", "core"}});
  for (int r = 0; r < 2; ++r) {
    auto loaded = topology::loadXml((dir / ("machine_" + std::to_string(r) + ".xml")).string());
    ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
    EXPECT_GE(loaded.value().numPus, 1);
  }
  fs::remove_all(dir);
}

TEST(TopologyInRuntime, TopologyFileReplacesDiscovery) {
  std::string fixture = std::string(TSR_TOPOLOGY_FIXTURES) + "/dual_socket_8gpu_4nic.xml";
  testing::runRanks(4, [](Communicator& comm) {
    // One host: the ring keeps every rank, the torus is the most square 2 x 2.
    EXPECT_EQ(comm.ringOrder().size(), 4u);
    EXPECT_EQ(comm.torusGrid().size(), 2u);
    std::vector<float> x(1000, 1.0f);
    auto req = comm.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum);
    ASSERT_TRUE(req.isOk() && req.value()->wait().isOk());
    EXPECT_EQ(x[999], 4.0f);
  }, {{"TSR_TOPO_FILE", fixture}});
}

TEST(TopologyInRuntime, UnreadableTopologyFileIsNamed) {
  auto ports = PortReservation::reserve(1, true);
  ASSERT_TRUE(ports.isOk());
  runtime::Config config;
  ASSERT_TRUE(config.set("TSR_TOPO_FILE", "/nonexistent/box.xml").isOk());
  auto comm = Communicator::create(testing::threadLaunchInfo(0, 1, ports.value().ports()), config);
  ASSERT_FALSE(comm.isOk());
  EXPECT_NE(comm.status().message().find("/nonexistent/box.xml"), std::string::npos)
      << comm.status().toString();
}

}  // namespace
}  // namespace tsr
