// A rank's bootstrap listens on the address its TSR_PEERS entry names when that is one of this
// machine's, so a job on loopback cannot be reached from the network; every interface only for
// a wildcard, a foreign address or a name that does not pin one down.
#include "runtime/bootstrap/listen_address.h"

#include <gtest/gtest.h>

#include <future>

#include "runtime/bootstrap/tests/test_util.h"

namespace tsr::runtime {
namespace {

using namespace testing;

LaunchInfo rankZeroOf(std::vector<std::string> hosts) {
  LaunchInfo info;
  info.size = static_cast<int>(hosts.size());
  for (auto& host : hosts) info.peers.push_back({host, 4000});
  return info;
}

TEST(ListenAddress, TheEntrysAddressWhenItIsThisMachines) {
  auto loopback = detail::chooseListenAddress(rankZeroOf({"127.0.0.1", "127.0.0.1"}));
  EXPECT_FALSE(loopback.everyInterface) << loopback.why;
  EXPECT_EQ(loopback.address.to_string(), "127.0.0.1");
  auto named = detail::chooseListenAddress(rankZeroOf({"localhost", "localhost"}));
  EXPECT_FALSE(named.everyInterface) << named.why;
  EXPECT_EQ(named.address.to_string(), "127.0.0.1");
}

TEST(ListenAddress, EveryInterfaceForWildcardsForeignAddressesAndLooseNames) {
  for (const char* host : {"0.0.0.0", "192.0.2.1", "no-such-host.invalid"}) {
    auto choice = detail::chooseListenAddress(rankZeroOf({host, "127.0.0.1"}));
    EXPECT_TRUE(choice.everyInterface) << host << ": " << choice.address.to_string();
    EXPECT_TRUE(choice.address.is_unspecified()) << host;
  }
  auto v6 = detail::chooseListenAddress(rankZeroOf({"::", "::1"}));
  EXPECT_TRUE(v6.everyInterface);
  EXPECT_TRUE(v6.address.is_v6());
  // A name that is loopback here while a peer is elsewhere: that peer dials another address.
  auto split = detail::chooseListenAddress(rankZeroOf({"localhost", "node7.example"}));
  EXPECT_TRUE(split.everyInterface) << split.address.to_string();
  EXPECT_NE(split.why.find("peers on other hosts"), std::string::npos) << split.why;
}

// 127.0.0.2 is this machine too, but not the address the job named: no connection there.
TEST(ListenAddress, LoopbackJobIsNotReachableOnAnotherAddress) {
  auto infos = localInfos(2);
  BootstrapOptions options;
  options.timeoutMs = 20000;
  auto rank1 = std::async(std::launch::async, runRank, infos[1], options, 1);
  uint16_t port1 = infos[1].peers[1].port;
  ASSERT_TRUE(waitListening(port1));
  asio::io_context io;
  tcp::socket stranger(io);
  boost::system::error_code ec;
  stranger.connect(tcp::endpoint(asio::ip::make_address("127.0.0.2"), port1), ec);
  EXPECT_EQ(ec, asio::error::connection_refused) << ec.message();
  stranger.close(ec);
  RankOutcome out0 = runRank(infos[0], options, 1);
  EXPECT_TRUE(out0.status.isOk()) << out0.status.toString();
  EXPECT_TRUE(rank1.get().status.isOk());
}

}  // namespace
}  // namespace tsr::runtime
