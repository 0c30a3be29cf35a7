// The StepKernels defaults that device backends inherit, against the host's fused kernels.
#include "algorithms/plan/step_kernels.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tsr::algorithms
