#include "algorithms/kernels/cast.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "base/half.h"

namespace tsr::kernels {
namespace {

TEST(Cast, F16AndBf16MatchScalarConversions) {
  std::mt19937 gen(6);
  std::normal_distribution<float> dist(0.0f, 100.0f);
  std::vector<float> x(1001);
  for (float& v : x) v = dist(gen);
  x[0] = 1e6f;  // f16 overflow -> inf
  x[1] = std::nanf("");
  std::vector<uint16_t> h(x.size()), b(x.size());
  std::vector<float> hx(x.size()), bx(x.size());
  castF32ToF16(x.data(), x.size(), h.data());
  castF32ToBf16(x.data(), x.size(), b.data());
  castF16ToF32(h.data(), h.size(), hx.data());
  castBf16ToF32(b.data(), b.size(), bx.data());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(h[i], floatToF16(x[i]));
    ASSERT_EQ(b[i], floatToBf16(x[i]));
    if (i >= 2) {
      ASSERT_LE(std::fabs(hx[i] - x[i]), std::fabs(x[i]) * 0x1p-11f + 0x1p-25f);
      ASSERT_LE(std::fabs(bx[i] - x[i]), std::fabs(x[i]) * 0x1p-8f);
    }
  }
  EXPECT_TRUE(std::isinf(hx[0]));
  EXPECT_TRUE(std::isnan(hx[1]));
  EXPECT_TRUE(std::isnan(bx[1]));
}

}  // namespace
}  // namespace tsr::kernels
