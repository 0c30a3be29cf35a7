// The cost model's ranking, its agreement with the dense algorithm table, and the TSR_LINK_BW /
// TSR_LINK_LAT parser (pure code).
#include <gtest/gtest.h>

#include <set>

#include "algorithms/dense/cost_model.h"
#include "algorithms/dense/dense_algorithms.h"

namespace tsr::algorithms {
namespace {

std::string first(const std::vector<Candidate>& ranked) { return ranked.front().algorithm; }

double costOf(const std::vector<Candidate>& ranked, const std::string& name) {
  for (const Candidate& c : ranked)
    if (c.algorithm == name) return c.seconds;
  ADD_FAILURE() << name << " not ranked";
  return 0;
}

TEST(CostModel, FewStepsWinSmallBuffersAndTheRingWinsLargeOnesWhenNIsNotAPowerOfTwo) {
  LinkModel links;
  links.host = {10e-6, 1e9};
  JobShape six{6, 1, 6, false};
  EXPECT_EQ(first(rankAllreduce(8, six, links)), "doubling");     // 4 steps against 6 and 10
  EXPECT_EQ(first(rankAllreduce(64 << 20, six, links)), "ring");  // the fold moves S twice
  // The ring's estimate is 2(N-1) (alpha + S/(N B)), by hand.
  double s = 64 << 20;
  EXPECT_NEAR(costOf(rankAllreduce(64 << 20, six, links), "ring"), 10 * (10e-6 + s / 6 / 1e9), 1e-9);
}

TEST(CostModel, TheTorusBeatsTheRingAcrossHostsForLargeBuffers) {
  LinkModel links;
  links.net = {50e-6, 125e6};  // 1 Gbit/s
  JobShape grid{4, 2, 2, true};
  auto ranked = rankAllreduce(16 << 20, grid, links);
  EXPECT_EQ(first(ranked), "torus");
  // Two hosts of two: the torus moves S/B across, the ring 1.5 S/B (docs/performance.md measured
  // the torus 1.12-1.15x faster).
  EXPECT_LT(costOf(ranked, "torus") * 1.3, costOf(ranked, "ring"));
  // Rabenseifner's cross-host steps share each host's link between both ranks.
  EXPECT_GT(costOf(ranked, "rabenseifner"), costOf(ranked, "torus"));
}

// Hosts of 8 GPUs with a NIC each: the torus's 8 column flows per host each get a NIC, so its
// cross-host phase runs 8 times faster than through one shared link; the ring's one crossing
// flow is unchanged.
TEST(CostModel, FlowsOfAHostSpreadOverItsNics) {
  LinkModel one;
  one.host = {2e-6, 400e9};
  one.net = {5e-6, 12.5e9};
  LinkModel eight = one;
  eight.netNics = 8;
  JobShape grid{64, 8, 8, true};
  const size_t bytes = size_t{64} << 20;
  double s = static_cast<double>(bytes);
  auto shared = rankAllreduce(bytes, grid, one), spread = rankAllreduce(bytes, grid, eight);
  EXPECT_DOUBLE_EQ(costOf(shared, "ring"), costOf(spread, "ring"));
  double rows = 2.0 * 7 * (2e-6 + s / 8 / 400e9);
  EXPECT_NEAR(costOf(spread, "torus"), rows + 2.0 * 7 * (5e-6 + s / 64 / 12.5e9), 1e-9);
  EXPECT_NEAR(costOf(shared, "torus"), rows + 2.0 * 7 * (5e-6 + s / 64 * 8 / 12.5e9), 1e-9);
  EXPECT_EQ(first(spread), "torus");
  // More NICs than flows: each flow still gets one NIC's rate, no more.
  eight.netNics = 16;
  EXPECT_DOUBLE_EQ(costOf(rankAllreduce(bytes, grid, eight), "torus"), costOf(spread, "torus"));
}

TEST(CostModel, TwoLevelOnlyWithAHostGridAndTiesKeepTheRingFirst) {
  LinkModel links;
  JobShape oneHost{4, 1, 4, false};
  for (const Candidate& c : rankAllreduce(1 << 20, oneHost, links)) {
    EXPECT_NE(c.algorithm, "torus");
    EXPECT_NE(c.algorithm, "hier");
  }
  // N = 2 without latency: ring, Rabenseifner and doubling all cost S / B; the ring stays first.
  links.host.latencySec = 0;
  JobShape two{2, 1, 2, false};
  auto ranked = rankAllreduce(1 << 20, two, links);
  EXPECT_DOUBLE_EQ(ranked[0].seconds, ranked[2].seconds);
  EXPECT_EQ(first(ranked), "ring");
}

TEST(CostModel, BruckForSmallAllgathersTheRingForLargeOnesAcrossHosts) {
  LinkModel links;
  links.net = {50e-6, 125e6};
  JobShape eight{8, 8, 1, false};
  EXPECT_EQ(first(rankAllgather(64, eight, links)), "bruck");  // 3 steps against 7
  JobShape grid{8, 2, 4, true};
  EXPECT_EQ(first(rankAllgather(4 << 20, grid, links)), "ring");  // Bruck's flows share a link
}

TEST(LinkSpec, BandwidthUnitsAndClasses) {
  LinkModel links;
  auto both = applyLinkBandwidth("1gbit", links);
  ASSERT_TRUE(both.isOk()) << both.status().toString();
  EXPECT_TRUE(both.value().hostGiven && both.value().netGiven);
  EXPECT_DOUBLE_EQ(links.net.bytesPerSec, 125e6);
  EXPECT_DOUBLE_EQ(links.host.bytesPerSec, 125e6);
  auto split = applyLinkBandwidth("host=12.5GB, net=100Mbit", links);
  ASSERT_TRUE(split.isOk()) << split.status().toString();
  EXPECT_DOUBLE_EQ(links.host.bytesPerSec, 12.5e9);
  EXPECT_DOUBLE_EQ(links.net.bytesPerSec, 12.5e6);
  LinkModel defaults;
  auto netOnly = applyLinkBandwidth("net=5e8", defaults);
  ASSERT_TRUE(netOnly.isOk());
  EXPECT_FALSE(netOnly.value().hostGiven);
  EXPECT_DOUBLE_EQ(defaults.net.bytesPerSec, 5e8);
  EXPECT_DOUBLE_EQ(defaults.host.bytesPerSec, LinkModel{}.host.bytesPerSec);
}

TEST(LinkSpec, LatencyUnits) {
  LinkModel links;
  ASSERT_TRUE(applyLinkLatency("host=2,net=1ms", links).isOk());
  EXPECT_DOUBLE_EQ(links.host.latencySec, 2e-6);
  EXPECT_DOUBLE_EQ(links.net.latencySec, 1e-3);
  ASSERT_TRUE(applyLinkLatency("50us", links).isOk());
  EXPECT_DOUBLE_EQ(links.net.latencySec, 50e-6);
}

TEST(LinkSpec, BadValuesNameTheVariableAndThePart) {
  LinkModel links;
  for (const char* bad : {"fast", "-1gbit", "0", "1 parsec", "", "1gbit,2gbit"}) {
    auto r = applyLinkBandwidth(bad, links);
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("TSR_LINK_BW"), std::string::npos) << r.status().message();
  }
  auto key = applyLinkBandwidth("host=1gbit,wire=2", links);
  ASSERT_FALSE(key.isOk());
  EXPECT_NE(key.status().message().find("'wire=2'"), std::string::npos) << key.status().message();
  auto lat = applyLinkLatency("net=3 days", links);
  ASSERT_FALSE(lat.isOk());
  EXPECT_NE(lat.status().message().find("TSR_LINK_LAT: '3 days'"), std::string::npos) << lat.status().message();
}

}  // namespace
}  // namespace tsr::algorithms

namespace tsr::algorithms {
namespace {

// Measured (docs/performance.md): on 4 hosts at 1 Gbit/s the ring beats Rabenseifner from
// 1 MiB up; over shared memory Rabenseifner is the faster at every size.
TEST(CostModel, AcrossHostsTheRingKeepsLargeBuffersOnOneHostRabenseifnerTakesThem) {
  LinkModel links;
  links.net = {60e-6, 125e6};
  JobShape fourHosts{4, 4, 1, false};
  EXPECT_EQ(first(rankAllreduce(1 << 20, fourHosts, links)), "ring");
  EXPECT_EQ(first(rankAllreduce(64 << 20, fourHosts, links)), "ring");
  EXPECT_EQ(first(rankAllreduce(8, fourHosts, links)), "doubling");
  EXPECT_EQ(first(rankAllreduce(64 << 10, fourHosts, links)), "rabenseifner");
  JobShape oneHost{4, 1, 4, false};
  EXPECT_EQ(first(rankAllreduce(64 << 20, oneHost, links)), "rabenseifner");
}

}  // namespace
}  // namespace tsr::algorithms

namespace tsr::algorithms {
namespace {

std::set<std::string> namesOf(const std::vector<Candidate>& ranked) {
  std::set<std::string> names;
  for (const Candidate& c : ranked) names.insert(c.algorithm);
  return names;
}

std::set<std::string> asSet(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

// The cost model ranks exactly the table's planned algorithms (with a host grid, where every
// allreduce can serve), so a name added to one and not the other fails here.
TEST(DenseAlgorithms, TheCostModelRanksExactlyTheTablesPlannedAlgorithms) {
  JobShape grid{8, 2, 4, true};
  LinkModel links;
  EXPECT_EQ(namesOf(rankAllreduce(1 << 20, grid, links)), asSet(plannedAlgorithms(false)));
  EXPECT_EQ(namesOf(rankAllgather(1 << 20, grid, links)), asSet(plannedAlgorithms(true)));
  std::set<std::string> names;
  for (const DenseAlgorithmInfo& a : denseAlgorithms()) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_TRUE(a.allreduce || a.allgather) << a.name;
    EXPECT_GT(std::string(a.description).size(), 10u) << a.name;
  }
  EXPECT_EQ(denseAlgorithmChoices(), "auto|ring|torus|hier|rabenseifner|doubling|bruck|shm");
}

}  // namespace
}  // namespace tsr::algorithms
