// The StepKernels defaults that device backends inherit, against the host's fused kernels.
#include "algorithms/plan/step_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace tsr::algorithms {
namespace {

// Marsit's momentum hand-off composed of scale, copy and reduce (what the CUDA backend runs)
// rounds as the fused CPU kernel does, element for element.
TEST(StepKernels, ComposedMomentumHandOffMatchesTheFusedKernel) {
  HostStepKernels host;
  const size_t n = 4099;
  std::vector<float> g(n), prev(n), comp(n), carry(n, 7.0f), scratch(n);
  for (size_t j = 0; j < n; ++j) {
    g[j] = std::sin(0.37f * static_cast<float>(j + 1)) * 3.0f;
    prev[j] = j % 11 == 0 ? 0.0f : std::cos(0.13f * static_cast<float>(j)) * 1.7f;
    comp[j] = std::sin(0.05f * static_cast<float>(j)) * 0.3f;
  }
  auto g2 = g, prev2 = prev, carry2 = carry;
  for (float mu : {0.9f, 0.5f, 0.99f}) {
    ASSERT_TRUE(host.momentumHandOff(g.data(), prev.data(), comp.data(), carry.data(), n, mu, nullptr).isOk());
    ASSERT_TRUE(
        host.StepKernels::momentumHandOff(g2.data(), prev2.data(), comp.data(), carry2.data(), n, mu, scratch.data())
            .isOk());
    EXPECT_EQ(std::memcmp(g.data(), g2.data(), n * 4), 0) << "mu " << mu;
    EXPECT_EQ(std::memcmp(prev.data(), prev2.data(), n * 4), 0) << "mu " << mu;
    EXPECT_EQ(std::memcmp(carry.data(), carry2.data(), n * 4), 0) << "mu " << mu;
  }
  EXPECT_NE(g[1], std::sin(0.37f * 2.0f) * 3.0f);  // it did change g
}

// sum |x| per span, from one sum per 1024-element block (the CUDA backend's one read back),
// equals kernels::sumAbs of each span bit for bit; so does the default, one sumAbs a span. The
// blocks differ in size so that another order of additions would round differently.
TEST(StepKernels, SumAbsPerSpanFromBlockSumsIsSumAbsOfEachSpan) {
  HostStepKernels host;
  for (size_t n : {size_t{1}, size_t{1024}, size_t{4096}, size_t{4097}, size_t{20000}, size_t{3 * 4096}}) {
    std::vector<float> x(n);
    for (size_t j = 0; j < n; ++j)
      x[j] = std::sin(0.71f * static_cast<float>(j + 1)) * std::pow(10.0f, static_cast<float>(j % 13) - 6.0f) *
             std::pow(7.0f, static_cast<float>((j / 1024) % 5) * 4.0f - 8.0f);  // each block its own size
    const size_t blocks = (n + 1023) / 1024;
    std::vector<double> parts(blocks);
    for (size_t b = 0; b < blocks; ++b)
      ASSERT_TRUE(host.sumAbs(x.data() + b * 1024, std::min<size_t>(1024, n - b * 1024), &parts[b]).isOk());
    for (size_t span : {size_t{1024}, size_t{4096}, size_t{8192}}) {
      const size_t spans = (n + span - 1) / span;
      std::vector<double> fromParts(spans, -1.0), byDefault(spans, -1.0), expected(spans);
      sumPartsPerSpan(parts.data(), blocks, span / 1024, fromParts.data());
      ASSERT_TRUE(host.sumAbsPerSpan(x.data(), n, span, byDefault.data()).isOk());
      for (size_t s = 0; s < spans; ++s) {
        ASSERT_TRUE(host.sumAbs(x.data() + s * span, std::min(span, n - s * span), &expected[s]).isOk());
        EXPECT_EQ(std::memcmp(&fromParts[s], &expected[s], sizeof(double)), 0)
            << "n " << n << " span " << span << " span index " << s << ": " << fromParts[s] << " vs " << expected[s];
        EXPECT_EQ(std::memcmp(&byDefault[s], &expected[s], sizeof(double)), 0) << "n " << n << " span " << span;
      }
    }
  }
  double unused = 0;
  EXPECT_FALSE(host.sumAbsPerSpan(nullptr, 10, 0, &unused).isOk());  // a span of 0 elements
}

}  // namespace
}  // namespace tsr::algorithms
