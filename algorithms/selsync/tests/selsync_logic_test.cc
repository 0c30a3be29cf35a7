#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "algorithms/selsync/selsync_logic.h"

namespace tsr::selsync {
namespace {

TEST(SelSyncParams, DefaultsAndNamedErrors) {
  auto p = parseParams({}, 16);
  ASSERT_TRUE(p.isOk());
  EXPECT_DOUBLE_EQ(p.value().ewmaAlpha, 0.16);  // the seed's N/100
  EXPECT_EQ(p.value().ewmaWindow, 25);
  EXPECT_EQ(p.value().aggregate, Aggregate::kParams);
  auto q = parseParams({{"delta", "0.5"}, {"aggregate", "grads"}, {"ewma_window", "10"}, {"ewma_alpha", "0.3"}}, 4);
  ASSERT_TRUE(q.isOk());
  EXPECT_DOUBLE_EQ(q.value().delta, 0.5);
  EXPECT_EQ(q.value().aggregate, Aggregate::kGrads);
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{{"delta", "-1"},
                                                                      {"delta", "abc"},
                                                                      {"ewma_window", "2.5"},
                                                                      {"ewma_alpha", "0"},
                                                                      {"aggregate", "weights"},
                                                                      {"colour", "red"}}) {
    auto bad = parseParams({{k, v}}, 4);
    ASSERT_FALSE(bad.isOk()) << k << "=" << v;
    EXPECT_NE(bad.status().message().find(k + "=" + v), std::string::npos) << bad.status().message();
  }
}

TEST(GradientChange, EwmaOverTheWindowAndRelativeChange) {
  Params p;
  p.ewmaWindow = 3;
  p.ewmaAlpha = 0.5;
  GradientChange g(p);
  EXPECT_EQ(g.add(4.0).value(), 0.0);  // first step: no predecessor, no measurable change
  // history {4, 8}: s = 0.5*8 + 0.5*4 = 6; previous s = 4 -> change 0.5
  EXPECT_DOUBLE_EQ(g.add(8.0).value(), 0.5);
  // history {4, 8, 8}: s = 0.5*8 + 0.5*6 = 7 -> |7-6|/6
  EXPECT_DOUBLE_EQ(g.add(8.0).value(), 1.0 / 6.0);
  // window 3 drops the 4: {8, 8, 8}: s = 8 -> |8-7|/7
  EXPECT_DOUBLE_EQ(g.add(8.0).value(), 1.0 / 7.0);
  EXPECT_DOUBLE_EQ(g.add(8.0).value(), 0.0);
  EXPECT_EQ(g.add(std::nan("")).status().code(), Code::kNumericError);
}

TEST(GradientChange, FirstStepIsZeroAndGrowthFromZeroIsInfinite) {
  Params p;
  p.ewmaWindow = 1;
  GradientChange g(p);
  EXPECT_EQ(g.add(0.0).value(), 0.0);           // first step, even from 0
  EXPECT_EQ(g.add(0.0).value(), 0.0);           // 0 -> 0: no change
  EXPECT_TRUE(std::isinf(g.add(2.0).value()));  // 0 -> 2: infinite relative change
  EXPECT_DOUBLE_EQ(g.add(3.0).value(), 0.5);
}

TEST(Flags, OneBitPerRank) {
  auto w = flagWords(130, 129, true);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[2], uint64_t{1} << 1);
  EXPECT_TRUE(anyFlag(w));
  EXPECT_FALSE(anyFlag(flagWords(130, 5, false)));
}

TEST(SelDP, EveryRankSeesEverySampleStartingAtItsChunk) {
  for (int n : {1, 3, 4}) {
    for (int r = 0; r < n; ++r) {
      auto order = seldpOrder(10, n, r);
      ASSERT_EQ(order.size(), 10u);
      EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), 10u);
      EXPECT_EQ(order.front(), static_cast<size_t>(r * (10 / n)));
    }
  }
  EXPECT_EQ(seldpOrder(8, 4, 1), (std::vector<size_t>{2, 3, 4, 5, 6, 7, 0, 1}));
}

TEST(DataInjection, SameRanksEverywhereAndTheBatchShrinks) {
  auto a = injectionRanks(42, 7, 16, 0.5);
  EXPECT_EQ(a.size(), 8u);
  EXPECT_EQ(a, injectionRanks(42, 7, 16, 0.5));
  EXPECT_NE(a, injectionRanks(42, 8, 16, 0.5));        // a new subset per step
  EXPECT_EQ(injectionRanks(1, 1, 5, 0.3).size(), 2u);  // ceil(1.5)
  EXPECT_EQ(injectedLocalBatch(32, 0.5, 0.5, 16), 6);  // 32 / (1 + 4)
  EXPECT_EQ(injectedLocalBatch(1, 1, 1, 64), 1);
}

}  // namespace
}  // namespace tsr::selsync
