// tsr-sim's SparDL (spardl_plan.h): the runtime's schedule with full bags, replayed.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/spardl/sparse_wire.h"
#include "tools/sim/tests/sim_test_support.h"

namespace tsr::sim {
namespace {

SimJob spardlJob(int ranks, size_t bytes, int teams = 1) {
  SimJob job;
  job.ranks = ranks;
  job.algorithm = "spardl";
  job.bytes = bytes;
  job.teams = teams;
  return job;
}

int ceilLog2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

// With N equal blocks of k entries, every rank sends ceil(log2 N) bags in the
// Spar-Reduce-Scatter and as many in the Bruck all-gather, N - 1 blocks in each phase: the
// wire bytes follow from the message format alone (a 24-byte header, 12 per block, 8 per entry).
TEST(SimSparDL, EveryRankSendsFullBagsOfTheRuntimesSchedule) {
  for (int n = 2; n <= 9; ++n) {
    const size_t count = size_t(n) << 16;
    auto plans = buildJobPlans(spardlJob(n, count * 4));
    ASSERT_TRUE(plans.isOk()) << n << ": " << plans.status().message();
    const uint64_t k = static_cast<uint64_t>(std::ceil(0.01 * 65536));
    const uint64_t perRank = 2 * ceilLog2(n) * 24 + 2 * (n - 1) * (12 + 8 * k);
    EXPECT_EQ(wireBytes(plans.value()), n * perRank) << "N = " << n;
    EXPECT_FALSE(plans.value().argumentHeaders);
    for (const auto& plan : plans.value().plans) {
      size_t sends = 0;
      for (const auto& op : plan->ops) sends += op.kind == algorithms::OpKind::kSend;
      EXPECT_EQ(sends, size_t(2 * ceilLog2(n))) << "N = " << n;
    }
  }
}

// Teams (R-SAG): the cross-team exchange adds log2(T) bags of one block per rank.
TEST(SimSparDL, TeamsAddTheCrossTeamExchange) {
  const size_t count = size_t(8) << 16;
  auto flat = buildJobPlans(spardlJob(8, count * 4, 1));
  auto teams = buildJobPlans(spardlJob(8, count * 4, 2));
  ASSERT_TRUE(flat.isOk() && teams.isOk());
  // Teams of 4 over 4 blocks of 2^17 elements: SRS and all-gather 3 blocks each in 2 bags,
  // then one bag of 1 block across the 2 teams.
  const uint64_t k = static_cast<uint64_t>(std::ceil(0.01 * 131072));
  EXPECT_EQ(wireBytes(teams.value()), 8 * ((2 + 2 + 1) * 24 + (3 + 3 + 1) * (12 + 8 * k)));
  EXPECT_NE(wireBytes(teams.value()), wireBytes(flat.value()));
}

TEST(SimSparDL, BadParametersAreNamed) {
  SimJob job = spardlJob(6, 1 << 20, 3);
  auto three = buildJobPlans(job);
  ASSERT_FALSE(three.isOk());
  EXPECT_EQ(three.status().code(), Code::kNotSupported) << three.status().message();
  job = spardlJob(4, 1 << 20);
  job.density = 0;
  auto zero = buildJobPlans(job);
  ASSERT_FALSE(zero.isOk());
  EXPECT_NE(zero.status().message().find("density"), std::string::npos) << zero.status().message();
  job = spardlJob(4, 1 << 20);
  job.dtype = DataType::kF64;
  EXPECT_FALSE(buildJobPlans(job).isOk());
}

// The replay carries exactly the plans' bytes with no argument headers, and charges each rank
// a selection pass over every element once (each block is selected when first sent; this
// rank's own block before the all-gather) at the select rate.
TEST(SimSparDL, ReplayCarriesTheBagsAndChargesTheSelection) {
  const int n = 4;
  const size_t bytes = size_t{16} << 20;
  auto plans = buildJobPlans(spardlJob(n, bytes));
  ASSERT_TRUE(plans.isOk());
  ReplayOptions options = freeCompute();
  Figures wire = replayInChild(plans.value(), oneSwitch(12.5e6, 20e-6), options, 1);
  ASSERT_TRUE(wire.ok) << wire.error;
  EXPECT_EQ(wire.payloadBytes, wireBytes(plans.value()));
  EXPECT_EQ(wire.headerBytes, 0u);
  EXPECT_DOUBLE_EQ(wire.computeSeconds, 0);
  // The largest bag a rank sends, at 100 Mbit/s, is a lower bound on the time.
  EXPECT_GT(wire.seconds, spardl::maxWireBytes(2, static_cast<size_t>(std::ceil(0.01 * bytes / 16))) / 12.5e6);
  options.selectRate = 1e9;
  Figures selected = replayInChild(plans.value(), oneSwitch(12.5e6, 20e-6), options, 1);
  ASSERT_TRUE(selected.ok) << selected.error;
  const double scan = n * double(bytes) / 1e9;  // plus merges of k entries a block
  EXPECT_GE(selected.computeSeconds, scan);
  EXPECT_LT(selected.computeSeconds, 1.05 * scan);
  EXPECT_GT(selected.seconds, wire.seconds + 0.5 * double(bytes) / 1e9);  // selection is on the path
}

}  // namespace
}  // namespace tsr::sim
