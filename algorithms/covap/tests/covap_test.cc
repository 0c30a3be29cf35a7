// COVAP over real UCX (ranks as threads): selected shards are averaged, skipped ones zeroed and
// kept as residual, nothing is lost (with coefficient 1: N * sum of applied averages + sum of
// residuals = sum of all gradients), and the measured interval is the same on every rank.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/covap/covap.h"
#include "tests/support/thread_world.h"

namespace tsr::covap {
namespace {

TEST(CovapRanks, SelectedAveragedSkippedKeptAndNothingLost) {
  const int n = 3;
  const std::vector<size_t> counts{10, 1000, 30, 5000};
  std::vector<std::vector<double>> appliedSum(n), residualSum(n), gradSum(n);
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    int me = comm.rank();
    auto c = Covap::create(comm, {{"interval", "2"}, {"ef_init", "1"}, {"ef_ascend_range", "0"}}, counts);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    Covap& cv = *c.value();
    EXPECT_EQ(cv.interval(), 2);
    size_t total = 0;
    for (size_t k : counts) total += k;
    std::vector<double> applied(total, 0), grads(total, 0);
    for (int step = 0; step < 6; ++step) {
      std::vector<std::vector<float>> g;
      for (size_t k : counts) g.emplace_back(k);
      cv.beginStep();
      for (size_t b = counts.size(); b-- > 0;) {  // backprop: last bucket first
        for (size_t j = 0; j < counts[b]; ++j) g[b][j] = static_cast<float>((me + 1) * (step + 1) + j % 3);
        ASSERT_TRUE(cv.bucketReady(b, g[b].data()).isOk());
      }
      ASSERT_TRUE(cv.finishStep().isOk());
      size_t at = 0;
      for (size_t t = 0; t < cv.shards().size(); ++t) {
        const Shard& s = cv.shards()[t];
        bool sel = selected(t, step, 2);
        for (size_t j = s.offset; j < s.offset + s.count; ++j) {
          float v = g[s.bucket][j];
          if (!sel) {
            ASSERT_EQ(v, 0.0f) << "skipped shard " << t << " step " << step;
          }
        }
      }
      for (size_t b = 0; b < counts.size(); ++b)
        for (size_t j = 0; j < counts[b]; ++j, ++at) {
          applied[at] += g[b][j];
          grads[at] += (me + 1) * (step + 1) + j % 3;
        }
    }
    std::vector<double> res;
    for (size_t b = 0; b < counts.size(); ++b)
      for (float r : cv.residual(b)) res.push_back(r);
    appliedSum[me] = applied;
    residualSum[me] = res;
    gradSum[me] = grads;
    EXPECT_GT(cv.bytesPosted(), 0u);
  });
  // Averages are identical on every rank; conservation holds element by element.
  for (size_t i = 0; i < appliedSum[0].size(); ++i) {
    double res = 0, grad = 0;
    for (int r = 0; r < n; ++r) {
      ASSERT_NEAR(appliedSum[r][i], appliedSum[0][i], 1e-4) << i;
      res += residualSum[r][i];
      grad += gradSum[r][i];
    }
    ASSERT_NEAR(n * appliedSum[0][i] + res, grad, 1e-3 * std::max(1.0, grad)) << "element " << i;
  }
}

TEST(CovapRanks, ProfiledIntervalIsAgreedOnEveryRank) {
  std::vector<int> intervals(4);
  testing::runRanks(4, [&](runtime::Communicator& comm) {
    auto c = Covap::create(comm, {{"interval", "auto"}, {"profile_steps", "2"}}, {20000, 100, 30000});
    ASSERT_TRUE(c.isOk());
    Covap& cv = *c.value();
    std::vector<float> a(20000, 1), b(100, 1), d(30000, 1);
    for (int step = 0; step < 3; ++step) {
      cv.beginStep();
      ASSERT_TRUE(cv.bucketReady(2, d.data()).isOk());
      ASSERT_TRUE(cv.bucketReady(1, b.data()).isOk());
      ASSERT_TRUE(cv.bucketReady(0, a.data()).isOk());
      ASSERT_TRUE(cv.finishStep().isOk());
    }
    EXPECT_GT(cv.measuredCcr(), 0.0);
    EXPECT_EQ(cv.interval(), intervalFromCcr(cv.measuredCcr()));
    intervals[comm.rank()] = cv.interval();
  });
  for (int r = 1; r < 4; ++r) EXPECT_EQ(intervals[r], intervals[0]);
}

// Handles made differently (here the interval, which selects the shards) fail the first
// bucket of the first step on every rank, naming the key and the ranks, before any shard is
// posted; finishStep reports it too and the residuals are untouched.
TEST(CovapRanks, HandlesMadeDifferentlyFailTheirFirstBucketOnEveryRank) {
  testing::runRanks(3, [&](runtime::Communicator& comm) {
    const std::string interval = comm.rank() == 2 ? "3" : "2";
    auto c = Covap::create(comm, {{"interval", interval}}, {100, 3000});
    ASSERT_TRUE(c.isOk());
    Covap& cv = *c.value();
    std::vector<float> a(100, 1), b(3000, 1);
    cv.beginStep();
    Status st = cv.bucketReady(1, b.data());
    EXPECT_EQ(st.code(), Code::kMismatch) << st.toString();
    EXPECT_NE(st.message().find("interval is 2 on ranks 0,1, 3 on rank 2"), std::string::npos) << st.message();
    EXPECT_EQ(cv.finishStep().code(), Code::kMismatch);
    EXPECT_EQ(cv.bytesPosted(), 0u);
    EXPECT_EQ(cv.residual(1), std::vector<float>(3000, 0.0f));
    EXPECT_EQ(cv.step(), 0u);
  });
}

// Ranks that hand the buckets over in different orders (rank 1 the reverse) still average
// bucket with bucket: shards go out in the declared order. Posted as they came, rank 0's
// bucket 0 was averaged with rank 1's bucket 1 (same sizes), each rank "ok" with the other's.
TEST(CovapRanks, BucketsHandedOverInAnotherOrderPairRight) {
  const std::vector<size_t> counts{64, 64, 64};
  testing::runRanks(2, [&](runtime::Communicator& comm) {
    const int me = comm.rank();
    auto c = Covap::create(comm, {{"interval", "1"}}, counts);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    Covap& cv = *c.value();
    std::vector<std::vector<float>> g;
    for (size_t b = 0; b < counts.size(); ++b) g.emplace_back(counts[b], static_cast<float>(100 * (b + 1) + me));
    cv.beginStep();
    for (size_t i = 0; i < counts.size(); ++i) {
      size_t b = me == 0 ? i : counts.size() - 1 - i;
      ASSERT_TRUE(cv.bucketReady(b, g[b].data()).isOk());
    }
    ASSERT_TRUE(cv.finishStep().isOk());
    for (size_t b = 0; b < counts.size(); ++b)
      EXPECT_EQ(g[b], std::vector<float>(counts[b], 100.0f * (b + 1) + 0.5f)) << "bucket " << b << " rank " << me;
  });
}

// A step without one of its buckets fails naming it (it ended "ok", that bucket never averaged
// and the next collective mismatched); the residual stays, the step is not counted.
TEST(CovapRanks, AStepWithoutABucketFailsNamingIt) {
  testing::runRanks(1, [&](runtime::Communicator& comm) {
    auto c = Covap::create(comm, {{"interval", "1"}}, {8, 8, 8});
    ASSERT_TRUE(c.isOk());
    Covap& cv = *c.value();
    std::vector<float> a(8, 1.0f), b(8, 2.0f);
    cv.beginStep();
    ASSERT_TRUE(cv.bucketReady(0, a.data()).isOk());
    ASSERT_TRUE(cv.bucketReady(2, b.data()).isOk());
    Status st = cv.finishStep();
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.toString();
    EXPECT_NE(st.message().find("step 0 finished without bucket 1"), std::string::npos) << st.message();
    EXPECT_EQ(cv.step(), 0u);
    // The next step starts afresh and may hand every bucket over.
    std::vector<float> d(8, 3.0f);
    cv.beginStep();
    for (size_t k = 0; k < 3; ++k) ASSERT_TRUE(cv.bucketReady(k, (k == 1 ? d : k == 0 ? a : b).data()).isOk());
    EXPECT_TRUE(cv.finishStep().isOk());
    EXPECT_EQ(cv.step(), 1u);
  });
}

}  // namespace
}  // namespace tsr::covap
