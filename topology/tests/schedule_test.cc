// Shapes of the builders' output: step counts, traffic, the exact SRS bags, torus shapes.
#include <gtest/gtest.h>

#include "topology/bruck_schedule.h"
#include "topology/recursive_schedule.h"
#include "topology/ring_schedule.h"
#include "topology/spardl_schedule.h"
#include "topology/torus_schedule.h"

namespace tsr::topology {
namespace {

TEST(Schedule, BlockRangesWrapAndMerge) {
  EXPECT_EQ(expandBlocks({BlockRange{3, 3}}, 4), (std::vector<int>{3, 0, 1}));
  std::vector<BlockRange> ranges;
  appendRange(ranges, BlockRange{3, 1}, 4);
  appendRange(ranges, BlockRange{0, 1}, 4);
  appendRange(ranges, BlockRange{2, 1}, 4);
  EXPECT_EQ(ranges, (std::vector<BlockRange>{{3, 2}, {2, 1}}));
}

TEST(Schedule, RingStepsAndTraffic) {
  Schedule s = ringAllreduce(identityOrder(5));
  EXPECT_EQ(s.numSteps(), 8);
  EXPECT_EQ(s.numBlocks, 5);
  for (long sent : blocksSentPerRank(s)) EXPECT_EQ(sent, 8);
  // Step 0 of rank 2: send its own block 1 ... (p-s-1) = 1 to rank 3, receive block 0 from rank 1.
  const Step& step = s.steps[2][0];
  ASSERT_EQ(step.sends.size(), 1u);
  EXPECT_EQ(step.sends[0].peer, 3);
  EXPECT_EQ(step.sends[0].blocks, (std::vector<BlockRange>{{1, 1}}));
  EXPECT_EQ(step.recvs[0].peer, 1);
  EXPECT_EQ(step.recvs[0].combine, Combine::kReduce);
  EXPECT_EQ(ringAllreduce(identityOrder(1)).numSteps(), 0);
  EXPECT_NE(describe(s).find("r2 s0: send 3 [1+1] reduce; recv 1 [0+1] reduce"), std::string::npos) << describe(s);
}

TEST(Schedule, RingOrderChoosesNeighbours) {
  Schedule s = ringReduceScatter({0, 2, 1, 3});
  EXPECT_EQ(s.steps[0][0].sends[0].peer, 2);
  EXPECT_EQ(s.steps[3][0].sends[0].peer, 0);
}

TEST(Schedule, SparBagsFollowTheReconstruction) {
  // N = 5: L = 3; d = 4, 2, 1; bags [i+d, i+min(2d,5)).
  EXPECT_EQ(sparSendBag(5, 0, 1), (BlockRange{4, 1}));
  EXPECT_EQ(sparSendBag(5, 3, 1), (BlockRange{2, 1}));
  EXPECT_EQ(sparSendBag(5, 0, 2), (BlockRange{2, 2}));
  EXPECT_EQ(sparSendBag(5, 4, 2), (BlockRange{1, 2}));
  EXPECT_EQ(sparSendBag(5, 2, 3), (BlockRange{3, 1}));
  Schedule s = sparReduceScatter(5);
  EXPECT_EQ(s.numSteps(), 3);
  EXPECT_EQ(s.steps[0][1].sends[0].peer, 2);
  EXPECT_EQ(s.steps[0][1].recvs[0].peer, 3);
  EXPECT_EQ(s.steps[0][1].recvs[0].blocks, (std::vector<BlockRange>{{0, 2}}));
  EXPECT_EQ(sparReduceScatter(64).numSteps(), 6);
  EXPECT_EQ(sparReduceScatter(1).numSteps(), 0);
}

TEST(Schedule, LogarithmicStepCounts) {
  for (int n : {1, 2, 3, 5, 8, 13, 33, 64}) {
    EXPECT_EQ(bruckAllGather(n).numSteps(), ceilLog2(n)) << n;
    EXPECT_EQ(binomialBroadcast(n, n / 2).numSteps(), ceilLog2(n)) << n;
    int p = 1;
    while (p * 2 <= n) p *= 2;
    int folds = n == p ? 0 : 2;
    int log = 0;
    while ((1 << log) < p) ++log;
    EXPECT_EQ(rabenseifnerAllreduce(n).numSteps(), 2 * log + folds) << n;
    EXPECT_EQ(recursiveDoublingAllreduce(n).numSteps(), log + folds) << n;
  }
  // Rabenseifner on 6: ranks 0 and 2 fold into 1 and 3, sit out, and get the result back.
  Schedule s = rabenseifnerAllreduce(6);
  EXPECT_EQ(s.numBlocks, 4);
  EXPECT_EQ(s.steps[0][0].sends[0].peer, 1);
  EXPECT_TRUE(s.steps[0][1].empty());
  EXPECT_EQ(s.steps[0].back().recvs[0].peer, 1);
}

TEST(Schedule, TorusShapes) {
  EXPECT_EQ(torusShape(16).value().x, 4);
  EXPECT_EQ(torusShape(12).value().x, 4);
  EXPECT_EQ(torusShape(12).value().y, 3);
  EXPECT_EQ(torusShape(18).value().y, 3);
  for (int prime : {2, 3, 7, 13, 61}) {
    auto shape = torusShape(prime);
    ASSERT_FALSE(shape.isOk());
    EXPECT_EQ(shape.status().code(), Code::kNotSupported);
    if (prime > 3) {
      EXPECT_NE(shape.status().message().find("is prime"), std::string::npos);
    }
  }
  EXPECT_EQ(torusFactorizations(12).size(), 6u);
  Schedule s = torusAllreduce(torusLayout(4, 3));
  EXPECT_EQ(s.numSteps(), 2 * (4 - 1) + 2 * (3 - 1));
  // Row phases stay in a row: rank 5 (row 1, col 1) talks to 6 first.
  EXPECT_EQ(s.steps[5][0].sends[0].peer, 6);
  // Column phase: rank 5 talks to rank 9 (row 2, col 1).
  EXPECT_EQ(s.steps[5][3].sends[0].peer, 9);
}

TEST(Schedule, TeamSplits) {
  auto split = teamSplit(identityOrder(12), 3);
  ASSERT_TRUE(split.isOk());
  EXPECT_EQ(split.value().teamSize, 4);
  EXPECT_EQ(split.value().teams[1], (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(split.value().crossGroups[2], (std::vector<int>{2, 6, 10}));
  auto bad = teamSplit(identityOrder(12), 5);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("T=5 does not divide N=12"), std::string::npos);
  auto rsag = sparRSagAllreduce(split.value());
  ASSERT_FALSE(rsag.isOk());
  EXPECT_EQ(rsag.status().code(), Code::kNotSupported);
}

}  // namespace
}  // namespace tsr::topology
