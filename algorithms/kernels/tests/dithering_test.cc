#include "algorithms/kernels/dithering.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
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

void checkUnbiasedAndBounded(DitherPartition partition, DitherNormalize normalize, uint32_t s, float magnitude = 1) {
  std::mt19937 gen(4);
  std::normal_distribution<float> dist;
  const size_t n = 64;
  std::vector<float> x(n);
  for (float& v : x) v = dist(gen) * magnitude;
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

// Values near the float range: an L2 norm past it is capped at the largest float (not Inf,
// which made every value NaN), and code * scale no longer overflows in the dequantization.
TEST(Dithering, HugeFiniteValuesStayUnbiasedAndFinite) {
  checkUnbiasedAndBounded(DitherPartition::kLinear, DitherNormalize::kL2, 8, 5e37f);
  checkUnbiasedAndBounded(DitherPartition::kLinear, DitherNormalize::kMax, 4, 5e37f);
  checkUnbiasedAndBounded(DitherPartition::kNatural, DitherNormalize::kMax, 4, 5e37f);
  EXPECT_EQ(ditherL2Scale(1e80), std::numeric_limits<float>::max());
  EXPECT_EQ(ditherL2Scale(4.0), 2.0f);
}

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

// The L2 scale's sum of squares runs in a fixed block order that a GPU reproduces (one thread
// per 1024-element block, the blocks added in order): per block, eight double lanes (lane l
// takes j = l mod 8), the lanes in order, then the tail; the blocks' sums in order. Written
// out here independently of dither_ops.h; the input is chosen so that a plain left-to-right
// sum, or the blocks added in another order, gives different bits (checked), so a change of
// order fails here.
double blockOrderReference(const std::vector<float>& x) {
  double total = 0.0;
  for (size_t base = 0; base < x.size(); base += 1024) {
    const size_t n = std::min<size_t>(1024, x.size() - base);
    double lanes[8] = {};
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
      for (int l = 0; l < 8; ++l) lanes[l] += static_cast<double>(x[base + j + l]) * x[base + j + l];
    double part = 0.0;
    for (double lane : lanes) part += lane;
    for (; j < n; ++j) part += static_cast<double>(x[base + j]) * x[base + j];
    total += part;
  }
  return total;
}

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(Dithering, L2SumsSquaresInBlockOrder) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1024}, size_t{1029}, size_t{40000}}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    std::vector<float> x(n);
    for (size_t j = 0; j < n; ++j)
      x[j] = std::sin(0.37f * static_cast<float>(j + 1)) * (j % 13 == 2 ? 1e3f : 1.0f) * (j % 5 == 1 ? 1e-3f : 1.0f) *
             (j / 1024 % 2 == 1 ? 3e-4f : 1.0f);  // blocks of unlike sizes
    if (n > 1) x[1] = 1.0e8f;                     // a large first block: later blocks round against it
    const double want = blockOrderReference(x);
    EXPECT_TRUE(sameBits(ditherSumSquares(x.data(), n), want)) << ditherSumSquares(x.data(), n) << " vs " << want;
    const float scale = ditherScale(x.data(), n, DitherNormalize::kL2);
    const float rooted = static_cast<float>(std::sqrt(want));
    EXPECT_EQ(std::memcmp(&scale, &rooted, sizeof scale), 0) << scale << " vs " << rooted;
    const float fromSum = ditherL2Scale(want);
    EXPECT_EQ(std::memcmp(&fromSum, &rooted, sizeof fromSum), 0);
    if (n == 40000) {  // the order matters for this input: other orders give other bits
      double sequential = 0.0;
      for (float v : x) sequential += static_cast<double>(v) * v;
      EXPECT_FALSE(sameBits(sequential, want)) << "the input does not tell the orders apart";
      double reversed = 0.0;
      for (size_t base = (n - 1) / 1024 * 1024 + 1024; base > 0; base -= 1024) {
        std::vector<float> block(x.begin() + (base - 1024), x.begin() + std::min(n, base));
        reversed += blockOrderReference(block);
      }
      EXPECT_FALSE(sameBits(reversed, want)) << "the input does not tell the block orders apart";
    }
  }
}

}  // namespace
}  // namespace tsr::kernels
