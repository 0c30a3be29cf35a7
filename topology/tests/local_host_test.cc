// Which host names are this machine: the rule tsrun starts ranks by and tsr-topo draws jobs by.
#include "topology/local_host.h"

#include <gtest/gtest.h>

namespace tsr::topology {
namespace {

TEST(LocalHost, LoopbackAndThisMachinesNamesAreLocal) {
  const std::vector<std::string> names = {"vm", "vm.example.com"};
  for (const char* local :
       {"localhost", "LOCALHOST", "localhost.localdomain", "127.0.0.1", "127.1.2.3", "::1", "vm", "VM.example.com"})
    EXPECT_TRUE(isLocalHost(local, names)) << local;
  for (const char* remote : {"node1", "127.0.0", "127.0.0.1.5", "127.0.0.256", "128.0.0.1", "vm2", "10.0.0.1", ""})
    EXPECT_FALSE(isLocalHost(remote, names)) << remote;
}

// localhost and 127.0.0.1 are one machine (tsr-topo drew them as two hosts while tsrun ran all
// their ranks on one); every other name is its own, as written.
TEST(LocalHost, EveryLocalEntryIsTheFirstLocalEntrysMachine) {
  const std::vector<HostEntry> hosts = {
      {"n1", 2, 1}, {"localhost", 2, 2}, {"n2", 1, 3}, {"127.0.0.1", 2, 4}, {"vm", 1, 5}};
  EXPECT_EQ(machineNames(hosts, {"vm"}), (std::vector<std::string>{"n1", "localhost", "n2", "localhost", "localhost"}));
  EXPECT_EQ(machineNames(hosts, {}), (std::vector<std::string>{"n1", "localhost", "n2", "localhost", "vm"}));
  EXPECT_EQ(machineNames({{"a", 1, 1}, {"b", 1, 2}}, {"vm"}), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace tsr::topology
