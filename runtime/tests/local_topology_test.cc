// The live machine is discovered once per process: later communicators reuse it (hwloc's PCI
// discovery leaves about 1 KiB behind in libpciaccess on every run, which tsr-soak's
// create/destroy cycles showed as RSS growing with every communicator).
#include <gtest/gtest.h>

#include "runtime/config.h"
#include "runtime/local_topology.h"

namespace tsr::runtime {
namespace {

TEST(LocalTopology, TheLiveMachineIsDiscoveredOncePerProcess) {
  Config config;
  ASSERT_TRUE(config.set("TSR_BIND", "none").isOk());  // this test's thread stays unbound
  const size_t before = localDiscoveries();
  Status error;
  LocalPlacement first = setUpLocalTopology(config, 0, 0, 1, "localhost", &error);
  ASSERT_TRUE(error.isOk()) << error.toString();
  const size_t afterFirst = localDiscoveries();
  EXPECT_LE(afterFirst - before, 1u);
  for (int i = 0; i < 5; ++i) {
    LocalPlacement again = setUpLocalTopology(config, 1, 1, 2, "localhost", &error);
    ASSERT_TRUE(error.isOk()) << error.toString();
    EXPECT_EQ(again.description, "no binding (TSR_BIND=none)");
  }
  EXPECT_EQ(localDiscoveries(), afterFirst);
  LocalPlacement last = setUpLocalTopology(config, 0, 0, 1, "localhost", &error);
  EXPECT_EQ(last.numaNode, first.numaNode);
  EXPECT_EQ(last.locality, first.locality);
}

}  // namespace
}  // namespace tsr::runtime
