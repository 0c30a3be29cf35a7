#include "algorithms/kernels/topk.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/kernels/tests/isa_sweep.h"

namespace tsr::kernels {
namespace {

using testing::forEachIsa;

// Reference: sort indices by (|x| desc, index asc), take k, sort ascending.
std::vector<uint32_t> referenceTopk(const std::vector<float>& x, size_t k) {
  std::vector<uint32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  idx.resize(std::min(k, x.size()));
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::vector<uint32_t> runTopk(const std::vector<float>& x, size_t k, size_t scratchCount) {
  std::vector<uint32_t> idx(std::min(k, x.size())), scratch(scratchCount);
  size_t got = topkSelect(x.data(), x.size(), k, idx.data(), scratch.data(), scratch.size());
  idx.resize(got);
  return idx;
}

TEST(Topk, MatchesReferenceOnRandomData) {
  std::mt19937 gen(1);
  std::normal_distribution<float> dist;
  for (size_t n : {size_t{1}, size_t{10}, size_t{1000}, size_t{100003}}) {
    std::vector<float> x(n);
    for (float& v : x) v = dist(gen);
    for (size_t k : {size_t{1}, n / 100 + 1, n / 3 + 1, n, n + 5}) {
      auto want = referenceTopk(x, k);
      forEachIsa([&](Isa) { ASSERT_EQ(runTopk(x, k, topkScratchCount(n, k)), want) << n << " " << k; });
    }
  }
}

TEST(Topk, TiesGoToTheLowerIndex) {
  std::vector<float> x(5000, 1.0f);
  for (size_t j = 0; j < x.size(); j += 2) x[j] = -1.0f;  // same magnitude, both signs
  x[4000] = 2.0f;
  forEachIsa([&](Isa) {
    auto got = runTopk(x, 10, topkScratchCount(x.size(), 10));
    std::vector<uint32_t> want = {0, 1, 2, 3, 4, 5, 6, 7, 8, 4000};
    ASSERT_EQ(got, want);
  });
  std::vector<float> zeros(70000, 0.0f);
  forEachIsa(
      [&](Isa) { ASSERT_EQ(runTopk(zeros, 700, topkScratchCount(zeros.size(), 700)), referenceTopk(zeros, 700)); });
}

TEST(Topk, TinyScratchFallsBackToExactRadixSelect) {
  std::mt19937 gen(2);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(50000);
  for (float& v : x) v = dist(gen);
  for (size_t j = 0; j < x.size(); j += 5) x[j] = 0.5f;  // many ties around the threshold
  for (size_t k : {size_t{1}, size_t{500}, size_t{12000}}) {
    auto want = referenceTopk(x, k);
    forEachIsa([&](Isa) {
      ASSERT_EQ(runTopk(x, k, 0), want) << k;
      ASSERT_EQ(runTopk(x, k, 100), want) << k;
      ASSERT_EQ(runTopk(x, k, topkScratchCount(x.size(), k)), want) << k;
    });
  }
}

TEST(Topk, GatherAndScatter) {
  std::vector<float> x = {1, -5, 3, 0, 4};
  std::vector<uint32_t> idx = {1, 4};
  std::vector<float> vals(2), out(5, 0.0f);
  gatherValues(x.data(), idx.data(), 2, vals.data());
  EXPECT_EQ(vals, (std::vector<float>{-5, 4}));
  scatterValues(idx.data(), vals.data(), 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, -5, 0, 0, 4}));
}

}  // namespace
}  // namespace tsr::kernels
