// Every builder, every N = 1..64, proved by the symbolic simulator; and the simulator catches
// broken schedules.
#include "topology/simulator.h"

#include <gtest/gtest.h>

#include "topology/bruck_schedule.h"
#include "topology/recursive_schedule.h"
#include "topology/ring_schedule.h"
#include "topology/spardl_schedule.h"
#include "topology/torus_schedule.h"

namespace tsr::topology {
namespace {

constexpr int kMaxRanks = 64;

void expectValid(const Schedule& s) {
  Status status = verifySchedule(s);
  EXPECT_TRUE(status.isOk()) << status.toString();
}

// A fixed but non-trivial ring order: odd ranks first.
std::vector<int> shuffledOrder(int n) {
  std::vector<int> order;
  for (int r = 1; r < n; r += 2) order.push_back(r);
  for (int r = 0; r < n; r += 2) order.push_back(r);
  return order;
}

TEST(Simulator, RingAllN) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    expectValid(ringReduceScatter(identityOrder(n)));
    expectValid(ringAllGather(identityOrder(n)));
    expectValid(ringAllreduce(identityOrder(n)));
    expectValid(ringAllreduce(shuffledOrder(n)));
    expectValid(ringReduceScatter(shuffledOrder(n)));
  }
}

TEST(Simulator, TorusEveryFactorization) {
  for (int n = 1; n <= kMaxRanks; ++n)
    for (auto [x, y] : torusFactorizations(n)) {
      SCOPED_TRACE(std::to_string(x) + "x" + std::to_string(y));
      expectValid(torusAllreduce(torusLayout(x, y)));
    }
}

TEST(Simulator, RabenseifnerAllN) {
  for (int n = 1; n <= kMaxRanks; ++n) expectValid(rabenseifnerAllreduce(n));
}

TEST(Simulator, RecursiveDoublingAllN) {
  for (int n = 1; n <= kMaxRanks; ++n) expectValid(recursiveDoublingAllreduce(n));
}

TEST(Simulator, BruckAndBroadcastAllN) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    expectValid(bruckAllGather(n));
    for (int root : {0, n / 2, n - 1}) expectValid(binomialBroadcast(n, root, 3));
  }
}

TEST(Simulator, SparReduceScatterAllN) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    Schedule s = sparReduceScatter(n);
    expectValid(s);
    // Every received bag is a subset of what the receiver still holds: the bags it receives
    // at step k are inside the bag it will send or keep afterwards, never one it sent before.
    for (int i = 0; i < n; ++i) {
      std::vector<bool> given(n, false);
      for (int k = 0; k < s.numSteps(); ++k) {
        for (int b : expandBlocks(s.steps[i][k].recvs[0].blocks, n)) EXPECT_FALSE(given[b]);
        for (int b : expandBlocks(s.steps[i][k].sends[0].blocks, n)) given[b] = true;
      }
      EXPECT_FALSE(given[i]) << "worker " << i << " gave away its own block, N=" << n;
    }
  }
}

TEST(Simulator, SparTeamsAllN) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    for (int teams = 1; teams <= n; ++teams) {
      if (n % teams) continue;
      SCOPED_TRACE("N=" + std::to_string(n) + " T=" + std::to_string(teams));
      TeamSplit split = teamSplit(shuffledOrder(n), teams).take();
      Schedule gather = sparBSagCrossGather(split);
      expectValid(gather);
      // Each rank gathered its own cross group's copies, one per team.
      SymbolicState end = simulate(gather, initialState(gather)).take();
      for (const auto& group : split.crossGroups)
        for (int rank : group)
          for (int t = 0; t < teams; ++t) EXPECT_EQ(end[rank][t][group[t]], 1);
      auto rsag = sparRSagAllreduce(split);
      if (isPowerOfTwo(teams)) {
        ASSERT_TRUE(rsag.isOk());
        expectValid(rsag.value());
      } else {
        EXPECT_EQ(rsag.status().code(), Code::kNotSupported);
      }
    }
  }
}

TEST(Simulator, CatchesAMissingReceive) {
  Schedule s = ringAllreduce(identityOrder(4));
  s.steps[2][1].recvs.clear();
  Status status = verifySchedule(s);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("no matching receive"), std::string::npos) << status.message();
}

TEST(Simulator, CatchesMismatchedBlocks) {
  Schedule s = ringAllreduce(identityOrder(4));
  s.steps[1][0].recvs[0].blocks[0].first = 2;
  Status status = verifySchedule(s);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("no matching send"), std::string::npos) << status.message();
}

TEST(Simulator, CatchesDoubleCounting) {
  // A copy turned into a reduce in the all-gather half counts contributions twice.
  Schedule s = ringAllreduce(identityOrder(4));
  int last = s.numSteps() - 1;
  for (int r = 0; r < 4; ++r) {
    s.steps[r][last].sends[0].combine = Combine::kReduce;
    s.steps[r][last].recvs[0].combine = Combine::kReduce;
  }
  Status status = verifySchedule(s);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("x2"), std::string::npos) << status.message();
}

TEST(Simulator, CatchesIncompleteResultAndEmptySends) {
  Schedule truncated = ringAllreduce(identityOrder(5));
  for (auto& steps : truncated.steps) steps.pop_back();
  EXPECT_FALSE(verifySchedule(truncated).isOk());

  Schedule gather = bruckAllGather(5);
  // Rank 0 sends in step 1 a block it cannot have yet when step 0 is dropped.
  for (auto& steps : gather.steps) steps.erase(steps.begin());
  Status status = verifySchedule(gather);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("holds no data"), std::string::npos) << status.message();
}

TEST(Simulator, CatchesCopyIntoABlockBeingSent) {
  ScheduleBuilder builder("bad", Collective::kAllGather, 2, 2);
  builder.transfer(0, 0, 1, {BlockRange{0, 1}}, Combine::kCopy);
  builder.transfer(0, 1, 0, {BlockRange{0, 1}}, Combine::kCopy);
  Status status = verifySchedule(builder.finish());
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("copies into block 0"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace tsr::topology
