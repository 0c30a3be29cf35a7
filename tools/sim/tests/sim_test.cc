// tsr-sim: plans built as the runtime builds them, replayed in SimGrid (each replay in a forked
// child: sim_test_support.h).
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "tools/sim/tests/sim_test_support.h"
#include "tools/sim/units.h"

namespace tsr::sim {
namespace {

// Distinct (sender, receiver) pairs: one argument header each.
// One argument header per (sender, receiver) pair of each plan a rank runs.
uint64_t headerBytesOf(const JobPlans& plans) {
  uint64_t pairs = 0;
  for (const auto* byRank : {&plans.before, &plans.plans, &plans.beside})
    for (const auto& plan : *byRank) pairs += plan->sendPeers.size();
  return pairs * 32;
}

uint64_t sendBytes(const std::vector<std::shared_ptr<algorithms::Plan>>& byRank) {
  JobPlans only;
  only.plans = byRank;
  return wireBytes(only);
}

TEST(SimUnits, ParsesRatesAndTimes) {  // sizes: tools/common/tests/byte_size_test.cc
  EXPECT_DOUBLE_EQ(parseRate("1Gbps").value(), 1.25e8);
  EXPECT_DOUBLE_EQ(parseRate("12.5GBps").value(), 12.5e9);
  EXPECT_DOUBLE_EQ(parseRate("800MB/s").value(), 8e8);
  EXPECT_DOUBLE_EQ(parseTime("20us").value(), 20e-6);
  EXPECT_DOUBLE_EQ(parseTime("1.5ms").value(), 1.5e-3);
  EXPECT_FALSE(parseRate("fast").isOk());
  EXPECT_FALSE(parseTime("-1s").isOk());
}

TEST(SimJobTest, RingPlansAreTheRuntimesAndMoveTwoNMinusOneBuffers) {
  auto plans = buildJobPlans(ringJob(8, size_t{1} << 20));
  ASSERT_TRUE(plans.isOk()) << plans.status().message();
  EXPECT_EQ(plans.value().algorithm, "ring");
  ASSERT_EQ(plans.value().plans.size(), 8u);
  EXPECT_EQ(plans.value().order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // One rank per host: the runtime reduces on arrival (TSR_ARRIVAL_REDUCE=auto).
  EXPECT_TRUE(plans.value().plans[0]->reducesOnArrival);
  EXPECT_EQ(wireBytes(plans.value()), uint64_t{2} * 7 * (1 << 20));
}

TEST(SimJobTest, TorusOnAPrimeJobFallsBackAsTheRuntimeDoes) {
  SimJob job = ringJob(7, size_t{1} << 20);
  job.algorithm = "torus";
  auto plans = buildJobPlans(job);
  ASSERT_TRUE(plans.isOk()) << plans.status().message();
  EXPECT_NE(plans.value().algorithm, "torus");
  job.ranks = 0;
  EXPECT_FALSE(buildJobPlans(job).isOk());
}

TEST(SimJobTest, HostsOfEightRanksGiveAHostGrid) {
  SimJob job = ringJob(16, size_t{16} << 20);
  job.ranksPerHost = 8;
  job.algorithm = "hier";
  auto plans = buildJobPlans(job);
  ASSERT_TRUE(plans.isOk()) << plans.status().message();
  EXPECT_EQ(plans.value().algorithm, "hier");
  EXPECT_EQ(plans.value().hosts, 2);
  ASSERT_EQ(plans.value().grid.size(), 2u);
  EXPECT_EQ(plans.value().grid[0].size(), 8u);
}

TEST(SimReplay, RingAllgatherSendsEachPartAroundTheRing) {
  SimJob job = ringJob(6, size_t{1} << 20);
  job.collective = "allgather";
  auto plans = buildJobPlans(job);
  ASSERT_TRUE(plans.isOk()) << plans.status().message();
  EXPECT_EQ(wireBytes(plans.value()), uint64_t{6} * 5 * (1 << 20));
  Figures f = replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), freeCompute(), 1);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.payloadBytes, wireBytes(plans.value()));
  double model = 5.0 * (1 << 20) / 1.25e9 + 5 * 20e-6;  // (N-1) parts, N-1 hops
  EXPECT_NEAR(f.seconds, model, 0.01 * model);
}

// Plans that disagree (one rank built for another count) are reported, not hung on.
TEST(SimReplay, DisagreeingPlansAreReported) {
  auto plans = buildJobPlans(ringJob(4, size_t{1} << 20));
  auto other = buildJobPlans(ringJob(4, size_t{2} << 20));
  ASSERT_TRUE(plans.isOk() && other.isOk());
  plans.value().plans[0] = other.value().plans[0];
  Figures f = replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), freeCompute(), 1);
  EXPECT_FALSE(f.ok);
  EXPECT_NE(std::string(f.error).find("differs in count"), std::string::npos) << f.error;
}

TEST(SimJobTest, AutoTakesTheCostModelsFirstChoice) {
  SimJob job = ringJob(16, size_t{64} << 20);
  job.ranksPerHost = 8;
  job.algorithm = "auto";
  auto plans = buildJobPlans(job);
  ASSERT_TRUE(plans.isOk()) << plans.status().message();
  auto ranked = algorithms::rankAllreduce(job.bytes, {16, 2, 8, true}, job.links);
  EXPECT_EQ(plans.value().algorithm, ranked.front().algorithm);
}

// (a) On an ideal one-switch platform the ring costs 2(N-1)/N * S/B + 2(N-1) * alpha.
TEST(SimReplay, RingMatchesTheAlphaBetaFormula) {
  const int n = 8;
  const double rate = 1.25e8, alpha = 20e-6;
  for (size_t bytes : {size_t{64} << 20, size_t{64} << 10}) {
    auto plans = buildJobPlans(ringJob(n, bytes));
    ASSERT_TRUE(plans.isOk()) << plans.status().message();
    Figures f = replayInChild(plans.value(), oneSwitch(rate, alpha), freeCompute(), 1);
    ASSERT_TRUE(f.ok) << f.error;
    double model = 2.0 * (n - 1) / n * bytes / rate + 2.0 * (n - 1) * alpha;
    EXPECT_NEAR(f.seconds, model, 0.01 * model) << bytes << " bytes";
  }
}

// (b) What crosses the simulated network is what the plans send, plus one header per pair.
TEST(SimReplay, SimulatedBytesAreThePlansWireBytes) {
  struct Case {
    const char* algo;
    int ranks, perHost;
    size_t bytes;
  };
  for (const Case& c :
       {Case{"ring", 8, 1, size_t{8} << 20}, Case{"rabenseifner", 6, 1, size_t{1} << 20},
        Case{"doubling", 8, 1, size_t{4} << 10}, Case{"torus", 8, 1, size_t{8} << 20},
        Case{"hier", 16, 8, size_t{8} << 20}, Case{"ring", 5, 1, 100}, Case{"marsit", 6, 1, size_t{8} << 20}}) {
    SimJob job = ringJob(c.ranks, c.bytes);
    job.algorithm = c.algo;
    job.ranksPerHost = c.perHost;
    auto plans = buildJobPlans(job);
    ASSERT_TRUE(plans.isOk()) << c.algo << ": " << plans.status().message();
    ASSERT_EQ(plans.value().algorithm, c.algo);
    Figures f = replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), ReplayOptions{}, c.perHost);
    ASSERT_TRUE(f.ok) << c.algo << ": " << f.error;
    EXPECT_EQ(f.payloadBytes, wireBytes(plans.value())) << c.algo;
    EXPECT_EQ(f.headerBytes, headerBytesOf(plans.value())) << c.algo;
    EXPECT_GT(f.seconds, 0) << c.algo;
  }
}

// (c) A small job of every dense allreduce runs in seconds, and local math costs time.
TEST(SimReplay, EveryAllreduceOnEightRanksRunsQuickly) {
  auto t0 = std::chrono::steady_clock::now();
  double ringFree = 0;
  for (const char* algo : {"ring", "rabenseifner", "doubling", "torus", "hier"}) {
    SimJob job = ringJob(8, size_t{16} << 20);
    job.algorithm = algo;
    auto plans = buildJobPlans(job);
    ASSERT_TRUE(plans.isOk()) << algo << ": " << plans.status().message();
    Figures f = replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), freeCompute(), 1);
    ASSERT_TRUE(f.ok) << algo << ": " << f.error;
    // Nothing beats the bandwidth bound of an allreduce: 2(N-1)/N * S/B.
    EXPECT_GE(f.seconds, 2.0 * 7 / 8 * (16 << 20) / 1.25e9 * 0.999) << algo;
    if (std::string(algo) == "ring") ringFree = f.seconds;
  }
  auto plans = buildJobPlans(ringJob(8, size_t{16} << 20));
  Figures costly = replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), ReplayOptions{}, 1);
  ASSERT_TRUE(costly.ok) << costly.error;
  EXPECT_GT(costly.computeSeconds, 0);
  EXPECT_GT(costly.seconds, ringFree);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
}

// A job with more transfers in flight than the replay can carry stops with an error naming
// the limit, instead of SimGrid aborting when the stacks run out.
TEST(SimReplay, TooManyTransfersInFlightIsAnErrorNotAnAbort) {
  SimJob job = ringJob(16, size_t{4} << 20);
  job.algorithm = "rabenseifner";  // a halving step posts its blocks at once: 32 chunks here
  auto plans = buildJobPlans(job);
  ASSERT_TRUE(plans.isOk()) << plans.status().message();
  ReplayOptions few;
  few.maxTransfersInFlight = 20;
  Figures f = replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), few, 1);
  EXPECT_FALSE(f.ok);
  EXPECT_NE(std::string(f.error).find("more than 20 transfers in flight"), std::string::npos) << f.error;
  few.maxTransfersInFlight = 100000;
  EXPECT_TRUE(replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), few, 1).ok);
}

// A pair window queues a pair's transfers instead of starting them all: the job above fits
// under a limit it overruns unbounded, and on an ideal network the time is the unbounded
// replay's (a pair's messages then share its path; queued, they follow one another).
TEST(SimReplay, APairWindowBoundsTransfersInFlightAndKeepsTheTime) {
  SimJob job = ringJob(16, size_t{4} << 20);
  job.algorithm = "rabenseifner";
  auto plans = buildJobPlans(job);
  ASSERT_TRUE(plans.isOk()) << plans.status().message();
  ReplayOptions unbounded = freeCompute();
  unbounded.maxTransfersInFlight = 300;  // unbounded, a halving step starts 32 per rank
  EXPECT_FALSE(replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), unbounded, 1).ok);
  ReplayOptions windowed = unbounded;
  windowed.pairWindow = 4;
  Figures queued = replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), windowed, 1);
  ASSERT_TRUE(queued.ok) << queued.error;
  Figures all = replayInChild(plans.value(), oneSwitch(1.25e9, 20e-6), freeCompute(), 1);
  ASSERT_TRUE(all.ok) << all.error;
  EXPECT_NEAR(queued.seconds, all.seconds, 0.02 * all.seconds);
}

// A fat tree with one spine funnels each leaf's traffic through one up link: Rabenseifner's
// cross-leaf exchanges slow down, the ring (one flow per leaf boundary) does not.
TEST(SimReplay, FatTreeOversubscriptionSlowsRabenseifnerNotTheRing) {
  auto timeOf = [](const char* algo, int spines) {
    SimJob job = ringJob(16, size_t{2} << 20);
    job.algorithm = algo;
    auto plans = buildJobPlans(job);
    PlatformSpec p = oneSwitch(1.25e9, 20e-6);
    p.kind = "fattree";
    p.leafHosts = 4;
    p.spines = spines;
    Figures f = replayInChild(plans.value(), p, freeCompute(), 1);
    EXPECT_TRUE(f.ok) << algo << ": " << f.error;
    return f.seconds;
  };
  EXPECT_GT(timeOf("rabenseifner", 1), 1.5 * timeOf("rabenseifner", 4));
  EXPECT_NEAR(timeOf("ring", 1), timeOf("ring", 4), 0.02 * timeOf("ring", 4));
}

// Marsit's ring carries one bit per f32 element: 1/32 of the dense ring's bytes, and beside it
// the allreduce of its scales (one double per 4096 elements, and a flag), which starts
// once the packing is done; on a slow link the step takes the time of those bytes. Its packing
// and merges cost time on the rank's core, and so do its passes after the plans.
TEST(SimReplay, MarsitSendsASignBitPerElement) {
  auto run = [](const char* algo, const ReplayOptions& options) {
    SimJob job = ringJob(8, size_t{16} << 20);
    job.algorithm = algo;
    auto plans = buildJobPlans(job);
    EXPECT_TRUE(plans.isOk()) << algo << ": " << plans.status().message();
    Figures f = replayInChild(plans.value(), oneSwitch(12.5e6, 20e-6), options, 1);
    EXPECT_TRUE(f.ok) << algo << ": " << f.error;
    return std::make_pair(f, wireBytes(plans.value()));
  };
  auto [ring, ringBytes] = run("ring", freeCompute());
  auto [bits, stepBytes] = run("marsit", freeCompute());
  SimJob job = ringJob(8, size_t{16} << 20);
  job.algorithm = "marsit";
  auto plans = buildJobPlans(job);
  ASSERT_TRUE(plans.isOk());
  const JobPlans& p = plans.value();
  ASSERT_EQ(p.beside.size(), 8u);
  EXPECT_EQ(p.beside[0]->dtype, DataType::kF64);
  EXPECT_EQ(p.beside[0]->count, (size_t{4} << 20) / 4096 + 1);
  const uint64_t bitBytes = sendBytes(p.plans), scaleBytes = sendBytes(p.beside);
  EXPECT_EQ(bitBytes * 32, ringBytes);
  EXPECT_EQ(scaleBytes, 2 * 7 * ((size_t{4} << 20) / 4096 + 1) * 8);  // each step the N ranks send the vector once
  EXPECT_EQ(stepBytes, bitBytes + scaleBytes);
  EXPECT_NEAR(bits.seconds, ring.seconds * (bitBytes + scaleBytes) / ringBytes, 0.05 * bits.seconds);
  auto [packed, unused] = run("marsit", ReplayOptions{});
  // every rank packs every element once and passes over the buffer after the plans
  const double finish = (4 << 20) * 36 / ReplayOptions{}.passRate;  // sign finish and momentum hand-off
  EXPECT_GT(packed.computeSeconds, 8 * ((16 << 20) / 13e9 + finish));
  EXPECT_GT(packed.seconds, bits.seconds + finish);
}

// marsit-2level: the host average (f32 row reduce-scatter over the host's link) before the
// bits, then Marsit across hosts on each rank's row block and a row all-gather of the bits,
// with its two scalars beside. On a slow network with fast hosts it takes the time of the
// column rings' bits through each host's NIC: 2(Y-1)/Y * D/8 bytes, Y hosts.
TEST(SimReplay, MarsitTwoLevelAveragesEachHostThenCrossesHostsInBits) {
  SimJob job = ringJob(8, size_t{16} << 20);
  job.ranksPerHost = 2;
  job.algorithm = "marsit-2level";
  auto plans = buildJobPlans(job);
  ASSERT_TRUE(plans.isOk()) << plans.status().message();
  const JobPlans& p = plans.value();
  EXPECT_EQ(p.algorithm, "marsit-2level");
  ASSERT_EQ(p.before.size(), 8u);
  ASSERT_EQ(p.beside.size(), 8u);
  EXPECT_EQ(p.before[0]->dtype, DataType::kF32);
  EXPECT_EQ(p.beside[0]->count, 2u);
  EXPECT_GT(p.prepareBytes, 0);
  PlatformSpec slow = oneSwitch(12.5e6, 20e-6);
  slow.hostRate = 4e9;
  slow.hostLatency = 1e-6;
  Figures f = replayInChild(p, slow, freeCompute(), 2);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.payloadBytes, wireBytes(p));
  const double floor = 2.0 * 3 / 4 * ((size_t{4} << 20) / 8) / 12.5e6;
  EXPECT_NEAR(f.seconds, floor, 0.05 * floor);
  job.ranksPerHost = 1;  // a prime count of one-rank hosts has no grid: refused, no dense stand-in
  job.ranks = 7;
  EXPECT_FALSE(buildJobPlans(job).isOk());
}

// marsit-torus: the runtime's sign-merge torus over the host grid, a 32nd of the dense torus's
// bytes; a job without a grid (a prime number of ranks) is refused as the runtime refuses it.
TEST(SimJobTest, MarsitTorusIsTheTorusInBits) {
  SimJob job = ringJob(16, size_t{16} << 20);
  job.ranksPerHost = 4;
  job.algorithm = "torus";
  auto dense = buildJobPlans(job);
  job.algorithm = "marsit-torus";
  auto bits = buildJobPlans(job);
  ASSERT_TRUE(dense.isOk() && bits.isOk()) << bits.status().message();
  EXPECT_EQ(bits.value().algorithm, "marsit-torus");
  EXPECT_EQ(sendBytes(bits.value().plans) * 32, wireBytes(dense.value()));
  job.ranks = 7;
  job.ranksPerHost = 1;
  EXPECT_FALSE(buildJobPlans(job).isOk());
}

PlatformSpec gpuHosts(int nics) {
  PlatformSpec p = oneSwitch(12.5e9, 5e-6);  // 100 Gbit/s NICs
  p.kind = "gpuhosts";
  p.hostRate = 150e9;  // the GPUs' interconnect
  p.hostLatency = 1e-6;
  p.nicsPerHost = nics;
  return p;
}

// On hosts of GPUs, same-host pairs take the GPUs' interconnect: a ring inside one host of 8
// costs the alpha-beta formula at its rate and latency (within 5%: at 150 GB/s a 512 KiB
// chunk takes 3.5 us, so the pipeline's start and the headers show), not the NICs' (12 times).
TEST(SimReplay, GpuHostsCarrySameHostPairsOnTheirInterconnect) {
  const size_t bytes = size_t{64} << 20;
  SimJob job = ringJob(8, bytes);
  job.ranksPerHost = 8;
  auto plans = buildJobPlans(job);
  ASSERT_TRUE(plans.isOk()) << plans.status().message();
  Figures f = replayInChild(plans.value(), gpuHosts(0), freeCompute(), 8);
  ASSERT_TRUE(f.ok) << f.error;
  double model = 2.0 * 7 / 8 * bytes / 150e9 + 2.0 * 7 * 1e-6;
  EXPECT_NEAR(f.seconds, model, 0.05 * model);
}

// Two hosts of 8 GPUs: the two-level plan moves an eighth of the buffer across per GPU, each
// over its own NIC, so it beats the ring (one crossing per host, one NIC) several times over;
// with one NIC for the 8 GPUs its cross-host phase slows down.
TEST(SimReplay, GpuHostsFavourTheTwoLevelPlanAndCountTheirNics) {
  auto timeOf = [](const char* algo, int nics) {
    SimJob job = ringJob(16, size_t{64} << 20);
    job.algorithm = algo;
    job.ranksPerHost = 8;
    auto plans = buildJobPlans(job);
    EXPECT_TRUE(plans.isOk()) << algo << ": " << plans.status().message();
    EXPECT_EQ(plans.value().algorithm, algo);
    Figures f = replayInChild(plans.value(), gpuHosts(nics), freeCompute(), 8);
    EXPECT_TRUE(f.ok) << algo << ": " << f.error;
    return f.seconds;
  };
  const double hier = timeOf("hier", 0), ring = timeOf("ring", 0);
  EXPECT_LT(3 * hier, ring);
  // The ring's bound: 2(N-1)/N of the buffer through one 12.5 GB/s NIC.
  EXPECT_GE(ring, 2.0 * 15 / 16 * (64 << 20) / 12.5e9 * 0.999);
  EXPECT_GT(timeOf("hier", 1), 2 * hier);
}

}  // namespace
}  // namespace tsr::sim
