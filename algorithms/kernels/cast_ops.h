// Per-element math of the two-level intra-host f16 average (two-level Marsit and compressed
// tensors, kernels/cast.h on the host, StepKernels on a device), shared so both round alike:
//  * castResidualOf: what the cast to the intra-host type dropped, r = x - back(h); an element
//    that overflows (no finite residual) keeps 0 (the shard check reports it);
//  * f16SumKeepingDropped / f16AverageKeepingDropped: the host ring's f16 sum of two partial
//    sums and the average's division, rounded exactly as kernels::reduceInto and
//    divideInPlace do, adding what the rounding dropped (in units of the sum) to `dropped`,
//    so a rank can keep it as residual. Non-finite results add nothing (the shard check
//    reports the overflow).
#pragma once

#include <cstdint>

#include "base/half.h"  // TSR_HD

namespace tsr::kernels {

TSR_HD float castResidualOf(float x, uint16_t h, bool f16) {
  float d = x - (f16 ? f16ToFloat(h) : bf16ToFloat(h));
  return (floatBits(d) & 0x7f800000u) != 0x7f800000u ? d : 0.0f;
}

TSR_HD uint16_t f16SumKeepingDropped(uint16_t a, uint16_t b, float& dropped) {
  float sum = f16ToFloat(a) + f16ToFloat(b);
  uint16_t h = floatToF16(sum);
  float d = sum - f16ToFloat(h);
  if ((floatBits(d) & 0x7f800000u) != 0x7f800000u) dropped += d;
  return h;
}

TSR_HD uint16_t f16AverageKeepingDropped(uint16_t sum, float divisor, float& dropped) {
  float s = f16ToFloat(sum);
  uint16_t h = floatToF16(s / divisor);
  float d = s - divisor * f16ToFloat(h);
  if ((floatBits(d) & 0x7f800000u) != 0x7f800000u) dropped += d;
  return h;
}

}  // namespace tsr::kernels
