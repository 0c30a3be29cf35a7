#include "algorithms/kernels/sign.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/kernels/sign_ops.h"
#include "algorithms/kernels/tests/isa_sweep.h"

namespace tsr::kernels {
namespace {

using testing::forEachIsa;

std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = dist(gen);
  return x;
}

TEST(SignPack, LayoutIsWordJOver64BitJMod64) {
  for (size_t n : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{130}, size_t{1000}}) {
    std::vector<float> x = randomFloats(n, 3);
    forEachIsa([&](Isa) {
      std::vector<uint64_t> w(wordsForElements(n), ~0ull);
      EXPECT_EQ(signPack(x.data(), n, w.data(), RngStream{}, 0), n);
      for (size_t j = 0; j < n; ++j)
        ASSERT_EQ((w[j / 64] >> (j % 64)) & 1u, x[j] > 0 ? 1u : 0u) << "n=" << n << " j=" << j;
      if (n % 64) {
        EXPECT_EQ(w.back() >> (n % 64), 0u) << "unused bits must be zero";
      }
    });
  }
}

TEST(SignPack, AvxAndPortableAreBitIdenticalIncludingZeros) {
  const size_t n = 64 * 50 + 17;
  std::vector<float> x = randomFloats(n, 5);
  for (size_t j = 0; j < n; j += 7) x[j] = (j % 2) ? 0.0f : -0.0f;
  x[100] = std::nanf("");
  x[200] = -std::nanf("");
  x[300] = std::numeric_limits<float>::infinity();
  x[400] = -std::numeric_limits<float>::infinity();
  std::vector<std::vector<uint64_t>> results;
  forEachIsa([&](Isa) {
    std::vector<uint64_t> w(wordsForElements(n));
    EXPECT_EQ(signPack(x.data(), n, w.data(), RngStream{77, 3, 9}, 5), 100u);
    EXPECT_EQ((w[100 / 64] >> (100 % 64)) & 1u, 0u) << "NaN packs as 0";
    EXPECT_EQ((w[200 / 64] >> (200 % 64)) & 1u, 0u) << "NaN packs as 0";
    EXPECT_EQ((w[300 / 64] >> (300 % 64)) & 1u, 1u) << "+Inf packs as 1";
    EXPECT_EQ((w[400 / 64] >> (400 % 64)) & 1u, 0u) << "-Inf packs as 0";
    results.push_back(w);
  });
  for (size_t i = 1; i < results.size(); ++i) EXPECT_EQ(results[i], results[0]);
}

TEST(SignPack, ZerosAreFairCoinsSoExpectedSignIsZero) {
  const size_t n = 64 * 400;
  std::vector<float> x(n, 0.0f);
  for (size_t j = 0; j < n; j += 2) x[j] = -0.0f;
  forEachIsa([&](Isa) {
    std::vector<uint64_t> w(wordsForElements(n));
    signPack(x.data(), n, w.data(), RngStream{1, 0, 0}, 0);
    double ones = static_cast<double>(popcountWords(w.data(), w.size()));
    double sigma = std::sqrt(n * 0.25);
    EXPECT_NEAR(ones, n / 2.0, 5 * sigma);
  });
}

TEST(SignPack, SegmentsPackedSeparatelyMatchTheWholeTensor) {
  const size_t n = 64 * 20;
  std::vector<float> x = randomFloats(n, 8);
  for (size_t j = 0; j < n; j += 3) x[j] = 0.0f;
  const RngStream rng{42, 1, 2};
  std::vector<uint64_t> whole(20), parts(20);
  signPack(x.data(), n, whole.data(), rng, 0);
  signPack(x.data(), 64 * 8, parts.data(), rng, 0);
  signPack(x.data() + 64 * 8, 64 * 12, parts.data() + 8, rng, 8);
  EXPECT_EQ(whole, parts);
}

TEST(SignPack, ReportsFirstNonFiniteIndex) {
  const size_t n = 1000;
  forEachIsa([&](Isa) {
    std::vector<float> x = randomFloats(n, 9);
    std::vector<uint64_t> w(wordsForElements(n));
    x[700] = std::numeric_limits<float>::infinity();
    x[900] = std::nanf("");
    EXPECT_EQ(signPack(x.data(), n, w.data(), RngStream{}, 0), 700u);
    EXPECT_EQ(firstNonFinite(x.data(), n), 700u);
    x[999] = -std::numeric_limits<float>::infinity();
    x[700] = 1.0f;
    x[900] = 1.0f;
    EXPECT_EQ(signPack(x.data(), n, w.data(), RngStream{}, 0), 999u);
    EXPECT_EQ(firstNonFinite(x.data(), n), 999u);
    x[999] = 0.5f;
    EXPECT_EQ(firstNonFinite(x.data(), n), n);
  });
}

TEST(SignDecompress, GivesPlusMinusEtaAndCompensation) {
  for (size_t n : {size_t{1}, size_t{8}, size_t{67}, size_t{640}, size_t{1001}}) {
    std::vector<float> x = randomFloats(n, 13);
    std::vector<uint64_t> w(wordsForElements(n));
    signPack(x.data(), n, w.data(), RngStream{}, 0);
    forEachIsa([&](Isa) {
      std::vector<float> out(n), c(n);
      signDecompress(w.data(), n, 0.25f, out.data());
      signCompensate(x.data(), w.data(), n, 0.25f, c.data());
      std::vector<uint8_t> bits(n);
      signUnpack(w.data(), n, bits.data());
      for (size_t j = 0; j < n; ++j) {
        ASSERT_EQ(out[j], x[j] > 0 ? 0.25f : -0.25f) << j;
        ASSERT_EQ(bits[j], x[j] > 0 ? 1 : 0);
        ASSERT_EQ(c[j], x[j] - out[j]);
      }
    });
  }
}

// The fused passes give exactly what the separate kernels give (every size class: tails,
// partial 1024-blocks, zeros, a NaN), on every instruction set.
TEST(SignFused, PrepareAndFinishMatchTheSeparateKernels) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000}, size_t{1024}, size_t{1025}, size_t{5000},
                   size_t{64 * 16 * 3 + 70}}) {
    for (bool withNan : {false, true}) {
      std::vector<float> g = randomFloats(n, 11), c = randomFloats(n, 12);
      for (size_t j = 0; j < n; j += 9) c[j] = -g[j];  // exact zeros: fair coins
      if (withNan && n > 3) g[n / 2] = std::nanf("");
      RngStream rng{5, 2, 7};
      forEachIsa([&](Isa) {
        std::vector<float> work(n), ref(n);
        for (size_t j = 0; j < n; ++j) ref[j] = g[j] + c[j];
        std::vector<uint64_t> words(wordsForElements(n)), refWords(words.size());
        size_t refBad = signPack(ref.data(), n, refWords.data(), rng, 3);
        double refSum = sumAbs(ref.data(), n), sum = -1;
        size_t bad = signPrepare(g.data(), c.data(), n, work.data(), words.data(), rng, 3, &sum);
        EXPECT_EQ(bad, refBad) << n;
        EXPECT_EQ(words, refWords) << n;
        EXPECT_TRUE(std::equal(work.begin(), work.end(), ref.begin(), [](float a, float b) {
          return std::memcmp(&a, &b, sizeof a) == 0;  // bitwise: NaN included
        })) << n;
        if (!withNan) {
          EXPECT_EQ(sum, refSum) << n;
          std::vector<float> out(n), comp(n), refOut(n), refComp(n);
          signFinish(work.data(), words.data(), n, 0.75f, out.data(), comp.data());
          signDecompress(words.data(), n, 0.75f, refOut.data());
          signCompensate(work.data(), words.data(), n, 0.75f, refComp.data());
          EXPECT_EQ(out, refOut) << n;
          EXPECT_EQ(comp, refComp) << n;
        }
      });
    }
  }
}

// Marsit's momentum hand-off: g becomes M' - mu M, the carry c + mu M', and M becomes M' (the
// g given), element by element in float: a heavy-ball buffer b = mu b + g fed these outputs
// holds M' at every step.
TEST(SignKernels, MomentumHandOffLeavesTheEstimateInAHeavyBallBuffer) {
  const size_t n = 1000;
  const float mu = 0.9f;
  std::vector<float> prev(n, 0.0f), carry(n), buffer(n, 0.0f);
  for (int step = 0; step < 5; ++step) {
    std::vector<float> est = randomFloats(n, 10 + step), comp = randomFloats(n, 20 + step), g = est;
    std::vector<float> prevBefore = prev;
    momentumHandOff(g.data(), prev.data(), comp.data(), carry.data(), n, mu);
    for (size_t j = 0; j < n; ++j) {
      ASSERT_FLOAT_EQ(g[j], est[j] - mu * prevBefore[j]) << j;
      ASSERT_FLOAT_EQ(carry[j], comp[j] + mu * est[j]) << j;
      ASSERT_EQ(prev[j], est[j]) << j;
      buffer[j] = mu * buffer[j] + g[j];
      ASSERT_NEAR(buffer[j], est[j], 1e-5f) << "step " << step << " element " << j;
    }
  }
}

TEST(SignKernels, SumAbsMatchesDouble) {
  std::vector<float> x = randomFloats(5003, 17);
  double want = 0;
  for (float v : x) want += std::fabs(static_cast<double>(v));
  EXPECT_NEAR(sumAbs(x.data(), x.size()), want, 1e-4 * want);
  EXPECT_EQ(sumAbs(x.data(), 0), 0.0);
}

// Finite values averaging past ~2.7e36 overflow a float lane of 128 elements: the block is then
// summed in double, so the sum (and Marsit's or onebit's scale, a mean) stays finite, and the
// fused pass and the per-range block sums agree with it on every instruction set.
TEST(SignKernels, SumAbsOfHugeFiniteValuesStaysFinite) {
  for (size_t n : {size_t{8}, size_t{1024}, size_t{1025}, size_t{64 * 16 * 3 + 70}}) {
    std::vector<float> x = randomFloats(n, 23), zero(n, 0.0f);
    for (float& v : x) v = (v < 0 ? -3e38f : 3e38f) + v * 1e36f;
    double want = 0;
    for (float v : x) want += std::fabs(static_cast<double>(v));
    forEachIsa([&](Isa) {
      double sum = sumAbs(x.data(), n);
      EXPECT_TRUE(std::isfinite(sum)) << n;
      EXPECT_NEAR(sum, want, 1e-9 * want) << n;
      std::vector<float> work(n);
      std::vector<uint64_t> words(wordsForElements(n));
      double fused = -1;
      EXPECT_EQ(signPrepare(x.data(), zero.data(), n, work.data(), words.data(), RngStream{1, 0, 0}, 0, &fused), n);
      EXPECT_EQ(fused, sum) << n;
      std::vector<double> blocks((n + 1023) / 1024);
      signPrepareRange(x.data(), zero.data(), 0, n, work.data(), words.data(), RngStream{1, 0, 0}, blocks.data());
      double byBlock = 0;
      for (double b : blocks) byBlock += b;
      EXPECT_EQ(byBlock, sum) << n;
    });
  }
}

}  // namespace
}  // namespace tsr::kernels
