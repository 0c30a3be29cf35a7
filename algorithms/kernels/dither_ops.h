// Per-element dithering code shared by the CPU kernel (dithering.cc) and the CUDA kernels
// (cuda/select_kernels.cu, cuda/codec_kernels.cu): the same float operations in the same order,
// so both give the same codes bit for bit (the CPU target builds with -ffp-contract=off, the
// CUDA target with --fmad=false; nothing here is a multiply-add anyway). Also the block sum of
// squares behind the L2 scale, so a GPU sums it in the CPU's order. See dithering.h for the
// scheme.
#pragma once

#include <math.h>

#include <cstdint>

#include "algorithms/kernels/dithering.h"
#include "base/half.h"

namespace tsr::kernels {

// Largest code for s levels (s for linear, 2^(s-1) for natural); 0 when s is out of range.
TSR_HD uint32_t ditherMaxCodeOf(uint32_t s, DitherPartition partition) {
  if (s == 0) return 0;
  if (partition == DitherPartition::kLinear) return s <= 32767 ? s : 0;
  return s <= 15 ? (1u << (s - 1)) : 0;
}

// Elements per block of ditherSumSquares: each block is summed on its own (sumSquaresBlock),
// the blocks' sums added in double in block order, so a GPU (one thread per block, the blocks
// added on the host) gives the CPU's sum bit for bit.
inline constexpr uint64_t kSumSquaresBlock = 1024;

// sum x[j]^2 over one block (n <= kSumSquaresBlock) in double: eight double lanes (lane l takes
// the elements j = l mod 8 in order), the lanes in order, then the tail. Each square of a float
// is exact in double (24-bit significands), so a contracted multiply-add would round the same.
TSR_HD double sumSquaresBlock(const float* x, uint64_t n) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) {
      const double v = static_cast<double>(x[j + l]);
      lanes[l] += v * v;
    }
  double part = 0.0;
  for (int l = 0; l < 8; ++l) part += lanes[l];
  for (; j < n; ++j) {
    const double v = static_cast<double>(x[j]);
    part += v * v;
  }
  return part;
}

// Element i takes 32-bit word i % 4 of Philox draw i / 4 (purpose kDither).
TSR_HD uint32_t ditherRandom(const RngStream& rng, uint64_t i) {
  return philoxDraw(rng, RngPurpose::kDither, i / 4).v[i % 4];
}

// The signed code of x, given scale > 0, maxCode > 0 (levels = maxCode as float) and the
// element's 32-bit uniform.
TSR_HD int16_t ditherCode(float x, float scale, float levels, uint32_t maxCode, DitherPartition partition,
                          uint32_t random) {
  const double u = static_cast<double>(random);
  const float y = fminf(fabsf(x) / scale * levels, levels);
  uint32_t code;
  if (partition == DitherPartition::kLinear) {
    float fl = floorf(y);
    double p = static_cast<double>(y - fl);
    code = static_cast<uint32_t>(fl) + (u < p * 4294967296.0 ? 1u : 0u);
  } else {
    float fl = y < 1.0f ? 0.0f : bitsFloat(floatBits(y) & 0x7f800000u);  // power of 2 <= y
    float len = fl > 0.0f ? fl : 1.0f;
    double p = static_cast<double>((y - fl) / len);
    code = static_cast<uint32_t>(fl) + (u < p * 4294967296.0 ? static_cast<uint32_t>(len) : 0u);
  }
  if (code > maxCode) code = maxCode;
  return static_cast<int16_t>(x < 0.0f ? -static_cast<int32_t>(code) : static_cast<int32_t>(code));
}

// The value a code stands for; d = maxCode (1 when maxCode is 0). In double: code * scale is
// exact there, where in float it overflowed for a scale past FLT_MAX / code (the value itself
// is at most the scale).
TSR_HD float ditherValue(int16_t code, float scale, float d) {
  return static_cast<float>(static_cast<double>(code) * static_cast<double>(scale) / static_cast<double>(d));
}

}  // namespace tsr::kernels
