// COVAP's profile against a known communication-to-computation ratio, over real UCX (2 ranks as
// threads): a synthetic backward pass sleeps a known time before handing over each bucket, the
// communication cost of the same buckets is measured alone beforehand, and the sleep is chosen
// so that their ratio is about kTargetCcr. The profiled CCR must come within a factor of 2 of
// the stand-alone communication time over the profiled computation time (the machine is shared
// and has 2 cores: the ranks' progress threads compete with everything else), the computation
// must cover the sleeps, I must be ceil(CCR), and the result is logged at info level.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "algorithms/covap/covap.h"
#include "base/logging.h"
#include "tests/support/thread_world.h"

namespace tsr::covap {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kTargetCcr = 2.5;
constexpr int kBuckets = 4;
constexpr size_t kBucketFloats = size_t{1} << 20;  // 4 MiB each

// Seconds to allreduce (average) every bucket, posted back to back: the median of 5 runs after
// a warm-up, the largest over the ranks (the same number everywhere).
double communicationAlone(runtime::Communicator& comm, std::vector<std::vector<float>>& g) {
  std::vector<double> runs;
  for (int rep = 0; rep < 6; ++rep) {
    auto t0 = Clock::now();
    std::vector<runtime::RequestPtr> reqs;
    for (auto& b : g) {
      auto r = comm.allreduce(b.data(), b.data(), b.size(), DataType::kF32, ReduceOp::kAvg);
      EXPECT_TRUE(r.isOk());
      reqs.push_back(r.take());
    }
    for (auto& r : reqs) EXPECT_TRUE(r->wait().isOk());
    if (rep > 0) runs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(runs.begin(), runs.end());
  double mine = runs[runs.size() / 2], most = 0;
  auto r = comm.allreduce(&mine, &most, 1, DataType::kF64, ReduceOp::kMax);
  EXPECT_TRUE(r.isOk() && r.value()->wait().isOk());
  return most;
}

// One profiled run: what the ranks measured, and the known cost bracketed around it.
struct ProfileRun {
  std::vector<double> ccr = std::vector<double>(2), comp = ccr, profComm = ccr, sleepPerBucket = ccr, refLo = ccr,
                      refHi = ccr;
  std::vector<int> interval = std::vector<int>(2);
  double knownLo = 0, knownHi = 0;
  std::string logged;
  // The timing bounds (a factor of 2 either way): a shared machine may break them in one run.
  bool withinTimingBounds() const {
    for (int r = 0; r < 2; ++r) {
      const double slept = 3 * kBuckets * sleepPerBucket[r];
      if (comp[r] >= 4 * slept + 0.5 || profComm[r] / 3 <= refLo[r] / 2 || profComm[r] / 3 >= refHi[r] * 2)
        return false;
    }
    return ccr[0] > knownLo / 2 && ccr[0] < knownHi * 2;
  }
};

ProfileRun profileOnce() {
  const std::string logPattern = ::testing::TempDir() + "covap-profile-%r.log";
  ProfileRun m;
  testing::runRanks(2,
                    [&](runtime::Communicator& comm) {
                      const int me = comm.rank();
                      std::vector<std::vector<float>> g(kBuckets, std::vector<float>(kBucketFloats, 1.0f + me));
                      const double comm1 = communicationAlone(comm, g);
                      // Computation per step = kBuckets x sleep, chosen so that comm1 / computation = kTargetCcr.
                      const double sleep = comm1 / (kBuckets * kTargetCcr);
                      auto c = Covap::create(comm, {{"interval", "auto"}, {"profile_steps", "3"}},
                                             std::vector<size_t>(kBuckets, kBucketFloats));
                      ASSERT_TRUE(c.isOk()) << c.status().toString();
                      Covap& cv = *c.value();
                      for (int step = 0; step < 3; ++step) {
                        cv.beginStep();
                        for (int b = kBuckets; b-- > 0;) {  // backprop: last bucket first, each after its compute
                          std::this_thread::sleep_for(std::chrono::duration<double>(sleep));
                          ASSERT_TRUE(cv.bucketReady(b, g[b].data()).isOk());
                        }
                        ASSERT_TRUE(cv.finishStep().isOk());
                      }
                      m.ccr[me] = cv.measuredCcr();
                      m.comp[me] = cv.profiledComputation();
                      m.profComm[me] = cv.profiledCommunication();
                      m.interval[me] = cv.interval();
                      m.sleepPerBucket[me] = sleep;
                      // The load on a shared machine drifts: the known cost is bracketed by measuring it again.
                      const double comm2 = communicationAlone(comm, g);
                      m.refLo[me] = std::min(comm1, comm2);
                      m.refHi[me] = std::max(comm1, comm2);
                    },
                    {{"TSR_LOG_LEVEL", "info"}, {"TSR_LOG_FILE", logPattern}});
  log::configure({});  // back to warnings on stderr for the tests that follow
  // The known ratio: communication measured alone over the computation the profile saw (the
  // sleeps plus handing the buckets over, which includes COVAP's error-feedback pass over
  // 4 MiB: that is why it is not exactly kTargetCcr), the largest over the ranks as COVAP does.
  m.knownLo = std::max(m.refLo[0] / (m.comp[0] / 3), m.refLo[1] / (m.comp[1] / 3));
  m.knownHi = std::max(m.refHi[0] / (m.comp[0] / 3), m.refHi[1] / (m.comp[1] / 3));
  std::printf(
      "communication alone %.3f-%.3f ms/step, computation %.3f ms/step (sleep %.3f ms x %d), "
      "profiled communication %.3f ms/step, CCR %.3f (known %.3f-%.3f), I = %d\n",
      m.refLo[0] * 1e3, m.refHi[0] * 1e3, m.comp[0] * 1e3 / 3, m.sleepPerBucket[0] * 1e3, kBuckets,
      m.profComm[0] * 1e3 / 3, m.ccr[0], m.knownLo, m.knownHi, m.interval[0]);
  for (int r = 0; r < 2; ++r) {
    std::string path = log::expandFilePattern(logPattern, r, "");
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    m.logged += ss.str();
    std::remove(path.c_str());
  }
  return m;
}

TEST(CovapProfile, MeasuredCcrMatchesAKnownRatio) {
  // Up to 3 runs: a burst of load from another test (ctest runs them in parallel) in one run's
  // profile but not its reference measurements breaks the factor-2 bounds; a broken profile
  // breaks them every time.
  ProfileRun m = profileOnce();
  for (int attempt = 2; attempt <= 3 && !m.withinTimingBounds() && !HasFatalFailure(); ++attempt) {
    std::printf("timing bounds missed; run %d of 3\n", attempt);
    m = profileOnce();
  }
  ASSERT_FALSE(HasFatalFailure());
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": communication alone " + std::to_string(m.refLo[r] * 1e3) + "-" +
                 std::to_string(m.refHi[r] * 1e3) + " ms per step, sleep " + std::to_string(m.sleepPerBucket[r] * 1e3) +
                 " ms per bucket, profiled computation " + std::to_string(m.comp[r] * 1e3) + " ms and communication " +
                 std::to_string(m.profComm[r] * 1e3) + " ms over 3 steps, CCR " + std::to_string(m.ccr[r]));
    // The trainer's timestamps: at least the slept time, and not wildly more (handing a 4 MiB
    // bucket over includes COVAP's error-feedback pass: under ASan on a busy machine that
    // added 0.26 s over 3 steps to 0.15 s of sleep, hence the loose bound).
    const double slept = 3 * kBuckets * m.sleepPerBucket[r];
    EXPECT_GE(m.comp[r], slept);
    EXPECT_LT(m.comp[r], 4 * slept + 0.5);
    // The profiled communication is the known cost, within a factor of 2.
    EXPECT_GT(m.profComm[r] / 3, m.refLo[r] / 2);
    EXPECT_LT(m.profComm[r] / 3, m.refHi[r] * 2);
    // CCR is exactly the largest of the ranks' communication / computation, so the same on both.
    EXPECT_DOUBLE_EQ(m.ccr[r], std::max(m.profComm[0] / m.comp[0], m.profComm[1] / m.comp[1]));
    EXPECT_EQ(m.ccr[r], m.ccr[0]);
    EXPECT_EQ(m.interval[r], std::max(1, static_cast<int>(std::ceil(m.ccr[r]))));
  }
  EXPECT_GT(m.ccr[0], m.knownLo / 2);
  EXPECT_LT(m.ccr[0], m.knownHi * 2);
  // The info line names the CCR and the interval chosen.
  EXPECT_NE(m.logged.find("interval I = " + std::to_string(m.interval[0])), std::string::npos) << m.logged;
  EXPECT_NE(m.logged.find("CCR"), std::string::npos) << m.logged;
}

}  // namespace
}  // namespace tsr::covap
