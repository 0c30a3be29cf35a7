// Statistical and exact tests of the Marsit bit merge (sign_ops.h).
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/sign_ops.h"

namespace tsr::kernels {
namespace {

std::vector<uint64_t> randomWords(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<uint64_t> w(n);
  for (auto& x : w) x = gen();
  return w;
}

inline int bitAt(const std::vector<uint64_t>& w, size_t j) { return static_cast<int>((w[j / 64] >> (j % 64)) & 1u); }

TEST(Merge, AgreeingBitsAreKeptAndDegenerateWeightsCopy) {
  auto v = randomWords(16, 1), s = randomWords(16, 2);
  std::vector<uint64_t> out(16);
  signMerge(v.data(), s.data(), out.data(), 16, 5, 3, RngStream{9, 1, 1}, 0);
  for (size_t w = 0; w < 16; ++w) {
    EXPECT_EQ(out[w] & ~(v[w] ^ s[w]), v[w] & s[w]) << "where v == s the result is v";
  }
  signMerge(v.data(), s.data(), out.data(), 16, 0, 3, RngStream{}, 0);
  EXPECT_EQ(out, s);
  signMerge(v.data(), s.data(), out.data(), 16, 4, 0, RngStream{}, 0);
  EXPECT_EQ(out, v);
  std::vector<uint64_t> inplace = v;
  signMerge(inplace.data(), s.data(), inplace.data(), 16, 2, 1, RngStream{3, 0, 0}, 0);
  signMerge(v.data(), s.data(), out.data(), 16, 2, 1, RngStream{3, 0, 0}, 0);
  EXPECT_EQ(inplace, out) << "out may alias v";
}

TEST(Merge, ReplayableAndSegmentIndependent) {
  auto v = randomWords(40, 3), s = randomWords(40, 4);
  std::vector<uint64_t> a(40), b(40);
  const RngStream rng{123, 2, 17};
  signMerge(v.data(), s.data(), a.data(), 40, 3, 1, rng, 100);
  signMerge(v.data(), s.data(), b.data(), 15, 3, 1, rng, 100);
  signMerge(v.data() + 15, s.data() + 15, b.data() + 15, 25, 3, 1, rng, 115);
  EXPECT_EQ(a, b);
  signMerge(v.data(), s.data(), b.data(), 40, 3, 1, RngStream{123, 2, 18}, 100);
  EXPECT_NE(a, b) << "another step draws other bits";
}

TEST(Merge, ThresholdIsFloorOfQTimes2To64) {
  EXPECT_EQ(mergeThreshold(1, 1), 1ull << 63);
  EXPECT_EQ(mergeThreshold(3, 1), 3ull << 62);
  EXPECT_EQ(mergeThreshold(1, 2), 0x5555555555555555ull);
  EXPECT_EQ(mergeThreshold(2, 1), 0xAAAAAAAAAAAAAAAAull);
}

// Mean over many steps of every merged bit equals (a v + b s)/(a + b): elements where v == s
// must be exact, the others within 5 standard deviations of the Bernoulli mean.
void checkMergeMean(uint32_t a, uint32_t b) {
  const size_t words = 4, n = words * 64;
  const int trials = 4000;
  auto v = randomWords(words, 10 + a), s = randomWords(words, 20 + b);
  std::vector<double> ones(n, 0.0);
  std::vector<uint64_t> out(words);
  for (int t = 0; t < trials; ++t) {
    signMerge(v.data(), s.data(), out.data(), words, a, b, RngStream{555, 1, static_cast<uint32_t>(t)}, 0);
    for (size_t j = 0; j < n; ++j) ones[j] += bitAt(out, j);
  }
  double pooledDiff = 0.0, pooledVar = 0.0;
  for (size_t j = 0; j < n; ++j) {
    const double want = (a * bitAt(v, j) + b * bitAt(s, j)) / static_cast<double>(a + b);
    const double mean = ones[j] / trials;
    if (bitAt(v, j) == bitAt(s, j)) {
      ASSERT_EQ(mean, want) << "j=" << j;
      continue;
    }
    const double sigma = std::sqrt(want * (1 - want) / trials);
    EXPECT_NEAR(mean, want, 5 * sigma) << "a=" << a << " b=" << b << " j=" << j;
    pooledDiff += mean - want;
    pooledVar += want * (1 - want) / trials;
  }
  EXPECT_LT(std::fabs(pooledDiff), 5 * std::sqrt(pooledVar)) << "pooled bias a=" << a << " b=" << b;
}

TEST(Merge, MeanOfMergedBitsMatchesWeightedAverage) {
  checkMergeMean(1, 1);
  checkMergeMean(3, 1);
  checkMergeMean(2, 5);  // q = 2/7 has an infinite binary expansion
  checkMergeMean(7, 1);
}

// A ring reduce: worker m (m = 1..M) merges its bits into the running vector with a = m - 1,
// b = 1. The expectation of every final bit is the average of the M workers' bits.
TEST(Merge, RingChainIsUnbiasedForTheAverageOfAllWorkers) {
  const int workers = 5, trials = 3000;
  const size_t words = 2, n = words * 64;
  std::vector<std::vector<uint64_t>> bits;
  for (int m = 0; m < workers; ++m) bits.push_back(randomWords(words, 100 + m));
  std::vector<double> ones(n, 0.0);
  for (int t = 0; t < trials; ++t) {
    std::vector<uint64_t> v = bits[0];
    for (int m = 2; m <= workers; ++m)
      signMerge(v.data(), bits[m - 1].data(), v.data(), words, static_cast<uint32_t>(m - 1), 1,
                RngStream{7, static_cast<uint32_t>(m - 1), static_cast<uint32_t>(t)}, 0);
    for (size_t j = 0; j < n; ++j) ones[j] += bitAt(v, j);
  }
  for (size_t j = 0; j < n; ++j) {
    double want = 0;
    for (int m = 0; m < workers; ++m) want += bitAt(bits[m], j);
    want /= workers;
    const double sigma = std::sqrt(want * (1 - want) / trials);
    if (sigma == 0) {
      ASSERT_EQ(ones[j] / trials, want);
    } else {
      EXPECT_NEAR(ones[j] / trials, want, 5 * sigma) << "j=" << j;
    }
  }
}

}  // namespace
}  // namespace tsr::kernels
