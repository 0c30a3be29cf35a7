#include "algorithms/kernels/dithering.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace tsr::kernels {
namespace {

TEST(Dithering, MaxCodes) {
  EXPECT_EQ(ditherMaxCode(4, DitherPartition::kLinear), 4u);
  EXPECT_EQ(ditherMaxCode(4, DitherPartition::kNatural), 8u);
  EXPECT_EQ(ditherMaxCode(16, DitherPartition::kNatural), 0u);
  EXPECT_EQ(ditherMaxCode(0, DitherPartition::kLinear), 0u);
}

void checkUnbiasedAndBounded(DitherPartition partition, DitherNormalize normalize, uint32_t s) {
  std::mt19937 gen(4);
  std::normal_distribution<float> dist;
  const size_t n = 64;
  std::vector<float> x(n);
  for (float& v : x) v = dist(gen);
  const float scale = ditherScale(x.data(), n, normalize);
  const uint32_t d = ditherMaxCode(s, partition);
  const int trials = 4000;
  std::vector<double> mean(n, 0.0);
  std::vector<int16_t> codes(n);
  std::vector<float> out(n);
  for (int t = 0; t < trials; ++t) {
    ditherQuantize(x.data(), n, scale, s, partition, RngStream{5, 0, static_cast<uint32_t>(t)}, codes.data());
    ditherDequantize(codes.data(), n, scale, s, partition, out.data());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_LE(std::abs(codes[i]), static_cast<int>(d));
      // One level step bounds the error: scale/d (linear); natural steps are at most |x|+scale/d.
      float bound = partition == DitherPartition::kLinear ? scale / d : std::fabs(x[i]) + scale / d;
      ASSERT_LE(std::fabs(out[i] - x[i]), bound * 1.0001f) << i;
      mean[i] += out[i];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    // Variance of one draw is at most (step/2)^2 <= (scale/d)^2 / 4 (linear) or (|x|)^2 (natural).
    double step = partition == DitherPartition::kLinear ? scale / d : std::fabs(x[i]) + scale / d;
    double sigma = step / 2 / std::sqrt(static_cast<double>(trials));
    EXPECT_NEAR(mean[i] / trials, x[i], 5 * sigma + 1e-6) << i;
  }
}

TEST(Dithering, LinearMaxIsUnbiased) { checkUnbiasedAndBounded(DitherPartition::kLinear, DitherNormalize::kMax, 4); }
TEST(Dithering, LinearL2IsUnbiased) { checkUnbiasedAndBounded(DitherPartition::kLinear, DitherNormalize::kL2, 8); }
TEST(Dithering, NaturalMaxIsUnbiased) { checkUnbiasedAndBounded(DitherPartition::kNatural, DitherNormalize::kMax, 4); }

TEST(Dithering, ExtremesAndZeroScale) {
  std::vector<float> x = {2.0f, -2.0f, 0.0f, 1.0f};
  std::vector<int16_t> codes(4);
  ditherQuantize(x.data(), 4, 2.0f, 4, DitherPartition::kLinear, RngStream{}, codes.data());
  EXPECT_EQ(codes[0], 4);
  EXPECT_EQ(codes[1], -4);
  EXPECT_EQ(codes[2], 0);
  EXPECT_EQ(codes[3], 2);  // exactly on a level: no randomness
  ditherQuantize(x.data(), 4, 0.0f, 4, DitherPartition::kLinear, RngStream{}, codes.data());
  EXPECT_EQ(codes, (std::vector<int16_t>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace tsr::kernels
