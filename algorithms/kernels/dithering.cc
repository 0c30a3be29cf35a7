#include "algorithms/kernels/dithering.h"

#include <cmath>
#include <limits>

#include "algorithms/kernels/dither_ops.h"

namespace tsr::kernels {

uint32_t ditherMaxCode(uint32_t s, DitherPartition partition) { return ditherMaxCodeOf(s, partition); }

float ditherScale(const float* x, size_t count, DitherNormalize normalize) {
  if (normalize == DitherNormalize::kMax) {
    float m = 0.0f;
    for (size_t i = 0; i < count; ++i) {
      float a = std::fabs(x[i]);
      m = a > m ? a : m;
    }
    return m;
  }
  return ditherL2Scale(ditherSumSquares(x, count));
}

double ditherSumSquares(const float* x, size_t count) {
  double total = 0.0;
  for (size_t base = 0; base < count; base += kSumSquaresBlock)
    total += sumSquaresBlock(x + base, count - base < kSumSquaresBlock ? count - base : kSumSquaresBlock);
  return total;
}

float ditherL2Scale(double sumSquares) {
  const double norm = std::sqrt(sumSquares);
  return norm > std::numeric_limits<float>::max() ? std::numeric_limits<float>::max() : static_cast<float>(norm);
}

void ditherQuantize(const float* x, size_t count, float scale, uint32_t s, DitherPartition partition,
                    const RngStream& rng, int16_t* codes) {
  const uint32_t maxCode = ditherMaxCode(s, partition);
  if (scale <= 0.0f || maxCode == 0) {
    for (size_t i = 0; i < count; ++i) codes[i] = 0;
    return;
  }
  const float levels = static_cast<float>(maxCode);
  Philox4x32 r{};
  for (size_t i = 0; i < count; ++i) {
    if (i % 4 == 0) r = philoxDraw(rng, RngPurpose::kDither, i / 4);  // = ditherRandom(rng, i)
    codes[i] = ditherCode(x[i], scale, levels, maxCode, partition, r.v[i % 4]);
  }
}

void ditherDequantize(const int16_t* codes, size_t count, float scale, uint32_t s, DitherPartition partition,
                      float* out) {
  const uint32_t maxCode = ditherMaxCode(s, partition);
  const float d = maxCode == 0 ? 1.0f : static_cast<float>(maxCode);
  for (size_t i = 0; i < count; ++i) out[i] = ditherValue(codes[i], scale, d);
}

}  // namespace tsr::kernels
