#include "base/half.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace tsr {
namespace {

TEST(Half, F16RoundTripsEveryHalfValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    float f = f16ToFloat(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(f)))) << h;
      continue;
    }
    EXPECT_EQ(floatToF16(f), bits) << "half bits " << h << " value " << f;
  }
}

TEST(Half, F16RoundsToNearestEven) {
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f)), 1.0f);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even gives 1.
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isinf(f16ToFloat(floatToF16(70000.0f))));
  EXPECT_EQ(f16ToFloat(floatToF16(65504.0f)), 65504.0f);
}

TEST(Half, Bf16RoundTripsAndRounds) {
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    float f = bf16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(floatToBf16(f), h);
  }
  EXPECT_EQ(bf16ToFloat(floatToBf16(3.0f)), 3.0f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace tsr
