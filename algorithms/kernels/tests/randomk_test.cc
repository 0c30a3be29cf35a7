#include "algorithms/kernels/randomk.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace tsr::kernels {
namespace {

std::vector<uint32_t> pick(size_t n, size_t k, uint64_t seed, uint32_t step) {
  std::vector<uint64_t> bitmap(randomkBitmapWords(n));
  std::vector<uint32_t> idx(std::min(n, k));
  idx.resize(randomkSelect(n, k, seed, step, bitmap.data(), idx.data()));
  return idx;
}

TEST(Randomk, DistinctSortedInRangeAndReproducible) {
  for (size_t n : {size_t{1}, size_t{64}, size_t{1000}, size_t{100001}}) {
    for (size_t k : {size_t{1}, n / 10 + 1, n}) {
      auto a = pick(n, k, 7, 3);
      ASSERT_EQ(a.size(), std::min(n, k));
      for (size_t i = 1; i < a.size(); ++i) ASSERT_LT(a[i - 1], a[i]);
      ASSERT_LT(a.back(), n);
      EXPECT_EQ(a, pick(n, k, 7, 3)) << "same seed and step -> same indices";
    }
  }
  EXPECT_NE(pick(1000, 10, 7, 3), pick(1000, 10, 7, 4));
  EXPECT_NE(pick(1000, 10, 7, 3), pick(1000, 10, 8, 3));
}

TEST(Randomk, EveryIndexIsEquallyLikely) {
  const size_t n = 50, k = 5;
  const int trials = 20000;
  std::vector<double> hits(n, 0.0);
  for (int t = 0; t < trials; ++t)
    for (uint32_t i : pick(n, k, 99, static_cast<uint32_t>(t))) hits[i] += 1;
  const double p = static_cast<double>(k) / n;
  const double sigma = std::sqrt(p * (1 - p) / trials);
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(hits[i] / trials, p, 5 * sigma) << i;
}

}  // namespace
}  // namespace tsr::kernels
