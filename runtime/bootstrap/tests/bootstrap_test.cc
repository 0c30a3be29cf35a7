#include "runtime/bootstrap/bootstrap.h"

#include <gtest/gtest.h>

#include <future>

#include "runtime/bootstrap/tests/test_util.h"

namespace tsr::runtime {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

std::vector<RankOutcome> runJob(const std::vector<LaunchInfo>& infos, BootstrapOptions options, int calls) {
  std::vector<std::future<RankOutcome>> futures;
  for (const auto& info : infos) futures.push_back(std::async(std::launch::async, runRank, info, options, calls));
  std::vector<RankOutcome> outcomes;
  for (auto& f : futures) outcomes.push_back(f.get());
  return outcomes;
}

class RingAllGather : public ::testing::TestWithParam<int> {};

TEST_P(RingAllGather, EveryRankGetsEveryBlobInRankOrderTwice) {
  const int n = GetParam();
  BootstrapOptions options;
  options.timeoutMs = 20000;
  auto outcomes = runJob(localInfos(n), options, 2);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(outcomes[r].status.isOk()) << "rank " << r << ": " << outcomes[r].status.toString();
    ASSERT_EQ(outcomes[r].gathers.size(), 2u);
    for (int c = 0; c < 2; ++c) {
      ASSERT_EQ(outcomes[r].gathers[c].size(), static_cast<size_t>(n));
      for (int from = 0; from < n; ++from)
        EXPECT_TRUE(outcomes[r].gathers[c][from] == blobFor(from, c))
            << "rank " << r << " call " << c << " blob of rank " << from << " differs (size "
            << outcomes[r].gathers[c][from].size() << " vs " << blobFor(from, c).size() << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, RingAllGather, ::testing::Values(1, 2, 3, 5, 8));

TEST(Bootstrap, SizeOneNeedsNoSocket) {
  LaunchInfo info;  // rank 0 of 1, no peers at all
  auto b = Bootstrap::create(info);
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  auto blobs = b.value()->allGather("x");
  ASSERT_TRUE(blobs.isOk());
  EXPECT_EQ(blobs.value(), std::vector<std::string>{"x"});
  EXPECT_TRUE(b.value()->barrier().isOk());
}

TEST(Bootstrap, PeerThatNeverStartsIsNamedWithinTheTimeout) {
  auto infos = localInfos(3);
  infos.pop_back();  // rank 2 never starts
  BootstrapOptions options;
  options.timeoutMs = 1500;
  auto start = Clock::now();
  auto outcomes = runJob(infos, options, 1);
  auto elapsedMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT_LT(elapsedMs, 4000);
  std::string rank2 = "127.0.0.1:" + std::to_string(infos[0].peers[2].port);
  ASSERT_FALSE(outcomes[1].status.isOk());
  EXPECT_EQ(outcomes[1].status.code(), Code::kBootstrap);
  EXPECT_NE(outcomes[1].status.message().find("rank 1 could not connect to rank 2 at " + rank2 + " within 1500 ms"),
            std::string::npos)
      << outcomes[1].status.message();
  ASSERT_FALSE(outcomes[0].status.isOk());
  EXPECT_EQ(outcomes[0].status.code(), Code::kBootstrap);
  EXPECT_NE(outcomes[0].status.message().find("rank 0 was never contacted by rank 2"), std::string::npos)
      << outcomes[0].status.message();
  EXPECT_NE(outcomes[0].status.message().find(rank2), std::string::npos);
}

// Ranks 3 and 4 joined their own links; rank 3 gives up on rank 2 and leaves. Without the
// reason passed on, rank 4 and rank 0 would name rank 3 ("closed its bootstrap connection"),
// the neighbour that left, instead of the rank that never came.
TEST(Bootstrap, EveryRankNamesThePeerThatNeverStartsNotTheNeighbourThatGaveUp) {
  auto infos = localInfos(5);
  infos.erase(infos.begin() + 2);  // rank 2 never starts
  BootstrapOptions options;
  options.timeoutMs = 1500;
  auto start = Clock::now();
  auto outcomes = runJob(infos, options, 1);
  auto elapsedMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  EXPECT_LT(elapsedMs, 4000);  // the others learn it from rank 3, not from timeouts of their own
  std::string rank2 =
      "rank 2 (expected from 127.0.0.1, its bootstrap address 127.0.0.1:" + std::to_string(infos[0].peers[2].port) +
      ")";
  const int ranks[] = {0, 1, 3, 4};
  for (int i = 0; i < 4; ++i) {
    const Status& s = outcomes[i].status;
    ASSERT_FALSE(s.isOk()) << "rank " << ranks[i];
    EXPECT_EQ(s.code(), Code::kBootstrap) << s.toString();
    if (ranks[i] == 1) {
      EXPECT_NE(s.message().find("rank 1 could not connect to rank 2"), std::string::npos) << s.message();
    } else {
      EXPECT_NE(s.message().find("rank 3 was never contacted by " + rank2), std::string::npos)
          << "rank " << ranks[i] << ": " << s.message();
    }
  }
  EXPECT_NE(outcomes[3].status.message().find("rank 4: rank 3 (127.0.0.1:"), std::string::npos)
      << outcomes[3].status.message();
  EXPECT_NE(outcomes[0].status.message().find("rank 0: rank 4 (127.0.0.1:"), std::string::npos)
      << outcomes[0].status.message();
}

TEST(Bootstrap, RanksWithDifferentSecretsNeverJoin) {
  auto infos = localInfos(2);
  infos[1].secret = "another-secret-of-16+bytes";
  BootstrapOptions options;
  options.timeoutMs = 1000;
  LogCapture log;
  auto outcomes = runJob(infos, options, 1);
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(outcomes[r].status.isOk());
    EXPECT_NE(outcomes[r].status.message().find("refused our claim"), std::string::npos)
        << outcomes[r].status.message();
  }
  EXPECT_NE(log.text().find("does not verify (wrong job secret"), std::string::npos);
}

TEST(Bootstrap, PortInUseIsReported) {
  auto infos = localInfos(2);
  asio::io_context io;
  tcp::acceptor squatter(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), infos[0].peers[0].port));
  auto b = Bootstrap::create(infos[0], BootstrapOptions{});
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().code(), Code::kBootstrap);
  EXPECT_NE(
      b.status().message().find("rank 0 cannot listen on its bootstrap port " + std::to_string(infos[0].peers[0].port)),
      std::string::npos)
      << b.status().message();
}

TEST(Bootstrap, InvalidLaunchInfoIsRejected) {
  auto infos = localInfos(2);
  infos[0].peers.pop_back();
  auto b = Bootstrap::create(infos[0]);
  ASSERT_FALSE(b.isOk());
  EXPECT_NE(b.status().message().find("1 peer addresses for world size 2"), std::string::npos);
  infos[1].rank = 5;
  EXPECT_EQ(Bootstrap::create(infos[1]).status().code(), Code::kInvalidArgument);
}

TEST(Bootstrap, NeighbourLeavingFailsTheNextAllGatherNamingIt) {
  auto infos = localInfos(2);
  BootstrapOptions options;
  options.timeoutMs = 5000;
  auto rank1 = std::async(std::launch::async, [&] {
    Status s;
    {
      auto b = Bootstrap::create(infos[1], options);
      s = b.status();
    }  // rank 1 leaves: its links close
    return s;
  });
  auto b0 = Bootstrap::create(infos[0], options);
  ASSERT_TRUE(b0.isOk()) << b0.status().toString();
  ASSERT_TRUE(rank1.get().isOk());
  auto blobs = b0.value()->allGather("hello");
  ASSERT_FALSE(blobs.isOk());
  EXPECT_EQ(blobs.status().code(), Code::kBootstrap);
  EXPECT_NE(blobs.status().message().find("rank 1"), std::string::npos) << blobs.status().message();
  auto again = b0.value()->allGather("hello");  // stays failed, says why
  ASSERT_FALSE(again.isOk());
  EXPECT_NE(again.status().message().find("earlier error"), std::string::npos);
}

TEST(Bootstrap, OversizedBlobIsRefusedLocally) {
  LaunchInfo info;
  BootstrapOptions options;
  options.maxBlobBytes = 4;
  auto b = Bootstrap::create(info, options);
  ASSERT_TRUE(b.isOk());
  auto blobs = b.value()->allGather("12345");
  ASSERT_FALSE(blobs.isOk());
  EXPECT_EQ(blobs.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tsr::runtime
