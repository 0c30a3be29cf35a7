#include "algorithms/kernels/dithering.h"

#include <cmath>

#include "base/half.h"

namespace tsr::kernels {

uint32_t ditherMaxCode(uint32_t s, DitherPartition partition) {
  if (s == 0) return 0;
  if (partition == DitherPartition::kLinear) return s <= 32767 ? s : 0;
  return s <= 15 ? (1u << (s - 1)) : 0;
}

float ditherScale(const float* x, size_t count, DitherNormalize normalize) {
  if (normalize == DitherNormalize::kMax) {
    float m = 0.0f;
    for (size_t i = 0; i < count; ++i) {
      float a = std::fabs(x[i]);
      m = a > m ? a : m;
    }
    return m;
  }
  double sq = 0.0;
  for (size_t i = 0; i < count; ++i) sq += static_cast<double>(x[i]) * x[i];
  return static_cast<float>(std::sqrt(sq));
}

void ditherQuantize(const float* x, size_t count, float scale, uint32_t s,
                    DitherPartition partition, const RngStream& rng, int16_t* codes) {
  const uint32_t maxCode = ditherMaxCode(s, partition);
  if (scale <= 0.0f || maxCode == 0) {
    for (size_t i = 0; i < count; ++i) codes[i] = 0;
    return;
  }
  const float levels = static_cast<float>(maxCode);
  Philox4x32 r{};
  for (size_t i = 0; i < count; ++i) {
    if (i % 4 == 0) r = philoxDraw(rng, RngPurpose::kDither, i / 4);
    const double u = static_cast<double>(r.v[i % 4]);
    const float y = std::fmin(std::fabs(x[i]) / scale * levels, levels);
    uint32_t code;
    if (partition == DitherPartition::kLinear) {
      float fl = std::floor(y);
      double p = static_cast<double>(y - fl);
      code = static_cast<uint32_t>(fl) + (u < p * 4294967296.0 ? 1u : 0u);
    } else {
      float fl = y < 1.0f ? 0.0f : bitsFloat(floatBits(y) & 0x7f800000u);  // power of 2 <= y
      float len = fl > 0.0f ? fl : 1.0f;
      double p = static_cast<double>((y - fl) / len);
      code = static_cast<uint32_t>(fl) + (u < p * 4294967296.0 ? static_cast<uint32_t>(len) : 0u);
    }
    if (code > maxCode) code = maxCode;
    codes[i] = static_cast<int16_t>(x[i] < 0.0f ? -static_cast<int32_t>(code) : static_cast<int32_t>(code));
  }
}

void ditherDequantize(const int16_t* codes, size_t count, float scale, uint32_t s,
                      DitherPartition partition, float* out) {
  const uint32_t maxCode = ditherMaxCode(s, partition);
  const float d = maxCode == 0 ? 1.0f : static_cast<float>(maxCode);
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(codes[i]) * scale / d;
}

}  // namespace tsr::kernels
