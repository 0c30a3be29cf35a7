// The runtime's use of topology: TSR_TOPO_DUMP_FILE writes each rank's machine as hwloc XML,
// TSR_TOPO_FILE describes the machine instead of discovery (a GPU box here: the ring and
// binding come from it, binding itself is not applied to this machine), TSR_BIND modes, and a
// bad TSR_TOPO_FILE fails the communicator with the file named; and ranks that act as
// separate hosts (TSR_TEST_HOST_ID) get a host-grouped ring and a torus whose rows are hosts.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "base/port_reservation.h"
#include "runtime/communicator.h"
#include "tests/support/thread_world.h"
#include "topology/discovery.h"
#include "topology/tests/fixtures.h"

namespace tsr {
namespace {

using runtime::Communicator;
namespace fs = std::filesystem;

TEST(TopologyInRuntime, DumpFileIsWrittenPerRankAndLoads) {
  fs::path dir = fs::temp_directory_path() / "tsr_topo_dump_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string pattern = (dir / "machine_%r.xml").string();
  testing::runRanks(2,
                    [](Communicator& comm) {
                      auto req = comm.barrier();
                      ASSERT_TRUE(req.isOk() && req.value()->wait().isOk());
                    },
                    {{"TSR_TOPO_DUMP_FILE", pattern}, {"TSR_BIND", "core"}});
  for (int r = 0; r < 2; ++r) {
    auto loaded = topology::loadXml((dir / ("machine_" + std::to_string(r) + ".xml")).string());
    ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
    EXPECT_GE(loaded.value().numPus, 1);
  }
  fs::remove_all(dir);
}

TEST(TopologyInRuntime, TopologyFileReplacesDiscovery) {
  std::string fixture = topology::testing::fixture("dual_socket_8gpu_4nic.xml");
  testing::runRanks(4,
                    [](Communicator& comm) {
                      // One host: the ring keeps every rank, the torus is the most square 2 x 2.
                      EXPECT_EQ(comm.ringOrder().size(), 4u);
                      EXPECT_EQ(comm.torusGrid().size(), 2u);
                      std::vector<float> x(1000, 1.0f);
                      auto req = comm.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum);
                      ASSERT_TRUE(req.isOk() && req.value()->wait().isOk());
                      EXPECT_EQ(x[999], 4.0f);
                    },
                    {{"TSR_TOPO_FILE", fixture}});
}

TEST(TopologyInRuntime, UnreadableTopologyFileIsNamed) {
  auto ports = PortReservation::reserve(1, true);
  ASSERT_TRUE(ports.isOk());
  runtime::Config config;
  ASSERT_TRUE(config.set("TSR_TOPO_FILE", "/nonexistent/box.xml").isOk());
  auto comm = Communicator::create(testing::threadLaunchInfo(0, 1, ports.value().ports()), config);
  ASSERT_FALSE(comm.isOk());
  EXPECT_NE(comm.status().message().find("/nonexistent/box.xml"), std::string::npos) << comm.status().toString();
}

// Ranks interleaved over two fake hosts (rank r on host r % 2, as a round-robin launcher
// would place them): the ring visits each host's ranks together (hosts in order of their
// lowest rank, ranks ascending inside a host: 0 2 4 .. 1 3 5 ..), crossing hosts exactly twice,
// the torus has one row per host, and allreduce (ring and torus) still sums exactly.
class FakeHosts : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(FakeHosts, RingGroupsHostsAndTorusRowsAreHosts) {
  const int n = std::get<0>(GetParam());
  const std::string algo = std::get<1>(GetParam());
  testing::runRanksEach(
      n,
      [n, algo](Communicator& comm) {
        for (int r = 0; r < n; ++r)
          EXPECT_EQ(comm.hostIdOf(r) == comm.hostIdOf(comm.rank()), r % 2 == comm.rank() % 2) << "rank " << r;
        std::vector<int> expectedRing;
        for (int h = 0; h < 2; ++h)
          for (int r = h; r < n; r += 2) expectedRing.push_back(r);
        EXPECT_EQ(comm.ringOrder(), expectedRing);
        int crossings = 0;
        const auto& ring = comm.ringOrder();
        for (size_t p = 0; p < ring.size(); ++p)
          crossings += comm.hostIdOf(ring[p]) != comm.hostIdOf(ring[(p + 1) % ring.size()]);
        EXPECT_EQ(crossings, 2);

        const auto& grid = comm.torusGrid();
        ASSERT_EQ(grid.size(), 2u) << comm.torusWhyNot();
        std::set<std::string> rowHosts;
        for (const auto& row : grid) {
          ASSERT_EQ(static_cast<int>(row.size()), n / 2);
          for (int r : row) EXPECT_EQ(comm.hostIdOf(r), comm.hostIdOf(row[0])) << "a row mixes hosts";
          rowHosts.insert(comm.hostIdOf(row[0]));
        }
        EXPECT_EQ(rowHosts.size(), 2u) << "two rows on one host";

        for (size_t count : {size_t{1000}, (size_t{1} << 18) + 7}) {
          std::vector<int32_t> x(count);
          for (size_t j = 0; j < count; ++j) x[j] = (comm.rank() + 1) * static_cast<int32_t>(1 + j % 13);
          auto req = comm.allreduce(x.data(), x.data(), count, DataType::kI32, ReduceOp::kSum);
          ASSERT_TRUE(req.isOk()) << req.status().toString();
          Status st = req.value()->wait();
          ASSERT_TRUE(st.isOk()) << st.toString();
          if (algo != "auto") {
            EXPECT_EQ(req.value()->algorithm(), algo);
          }
          for (size_t j = 0; j < count; ++j)
            ASSERT_EQ(x[j], n * (n + 1) / 2 * static_cast<int32_t>(1 + j % 13))
                << "element " << j << " count " << count;
        }
      },
      [algo](int rank) {
        return testing::Settings{{"TSR_TEST_HOST_ID", "fake" + std::to_string(rank % 2)}, {"TSR_ALGO", algo}};
      });
}

INSTANTIATE_TEST_SUITE_P(Ranks, FakeHosts,
                         ::testing::Combine(::testing::Values(4, 6), ::testing::Values("auto", "ring", "torus")),
                         [](const auto& info) {
                           return "N" + std::to_string(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace tsr
