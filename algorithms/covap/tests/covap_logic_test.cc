#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "algorithms/covap/covap_logic.h"

namespace tsr::covap {
namespace {

const std::vector<size_t> kVgg19{4101096, 16781312, 107480576, 7079424, 7669760, 555072};  // Table V

TEST(CovapSharding, Vgg19GivesTheSeedsMedianAndShardCounts) {
  EXPECT_DOUBLE_EQ(shardingMedian(kVgg19), 5590260.0);
  auto shards = shardBuckets(kVgg19, 1000);
  std::map<size_t, int> perBucket;
  std::map<size_t, size_t> elements;
  for (const Shard& s : shards) {
    ++perBucket[s.bucket];
    elements[s.bucket] += s.count;
  }
  EXPECT_EQ(shards.size(), 26u);
  EXPECT_EQ(perBucket[1], 3);
  EXPECT_EQ(perBucket[2], 19);
  for (size_t b : {0u, 3u, 4u, 5u}) EXPECT_EQ(perBucket[b], 1) << b;
  for (size_t b = 0; b < kVgg19.size(); ++b) EXPECT_EQ(elements[b], kVgg19[b]) << "bucket " << b;
  // At most I shards per bucket.
  auto capped = shardBuckets(kVgg19, 4);
  std::map<size_t, int> capCount;
  for (const Shard& s : capped) ++capCount[s.bucket];
  EXPECT_EQ(capCount[1], 3);
  EXPECT_EQ(capCount[2], 4);
}

TEST(CovapSelection, EachShardOnceEveryIStepsAndAllEveryStepForIOne) {
  for (int interval : {1, 2, 3, 5}) {
    for (size_t t = 0; t < 7; ++t) {
      int chosen = 0;
      for (uint64_t s = 0; s < static_cast<uint64_t>(interval) * 4; ++s) {
        bool sel = selected(t, s, interval);
        EXPECT_EQ(sel, (t + s) % interval == 0);
        chosen += sel;
      }
      EXPECT_EQ(chosen, 4) << "I " << interval << " shard " << t;
    }
  }
}

TEST(CovapInterval, CeilOfTheRatio) {
  EXPECT_EQ(intervalFromCcr(0.3), 1);
  EXPECT_EQ(intervalFromCcr(1.0), 1);
  EXPECT_EQ(intervalFromCcr(1.01), 2);
  EXPECT_EQ(intervalFromCcr(4.0), 4);
  EXPECT_EQ(intervalFromCcr(std::nan("")), 1);
  EXPECT_EQ(intervalFromCcr(145.3, 6), 6);  // max_interval caps auto
  EXPECT_EQ(intervalFromCcr(2.5, 6), 3);
  EXPECT_EQ(intervalFromCcr(145.3), 146);
}

TEST(CovapErrorFeedback, CoefficientFollowsTheSchedule) {
  Params p;
  p.efInit = 0.2;
  p.efAscendSteps = 10;
  p.efAscendRange = 0.25;
  EXPECT_DOUBLE_EQ(efCoefficient(0, p), 0.2);
  EXPECT_DOUBLE_EQ(efCoefficient(9, p), 0.2);
  EXPECT_DOUBLE_EQ(efCoefficient(10, p), 0.45);
  EXPECT_DOUBLE_EQ(efCoefficient(25, p), 0.7);
  EXPECT_DOUBLE_EQ(efCoefficient(1000, p), 1.0);
}

TEST(CovapParams, NamedErrors) {
  auto ok = parseParams({{"interval", "4"}, {"ef_init", "0.5"}});
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(ok.value().interval, 4);
  EXPECT_EQ(parseParams({{"interval", "auto"}}).value().interval, 0);
  EXPECT_EQ(parseParams({{"max_interval", "6"}}).value().maxInterval, 6);
  EXPECT_EQ(parseParams({}).value().maxInterval, 0);
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{{"interval", "0"},
                                                                      {"interval", "fast"},
                                                                      {"max_interval", "0"},
                                                                      {"profile_steps", "1.5"},
                                                                      {"ef_init", "2"},
                                                                      {"ef_ascend_steps", "0"},
                                                                      {"shape", "round"}}) {
    auto bad = parseParams({{k, v}});
    ASSERT_FALSE(bad.isOk()) << k;
    EXPECT_NE(bad.status().message().find(k + "=" + v), std::string::npos) << bad.status().message();
  }
}

}  // namespace
}  // namespace tsr::covap
