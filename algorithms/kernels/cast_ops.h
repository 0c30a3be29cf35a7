// Per-element math of two-level Marsit's intra-host cast (marsit_hier_step.cc on the host,
// StepKernels::castResidual on a device), shared so both round alike: what the cast to the
// intra-host type dropped, r = x - back(h); an element that overflows (no finite residual)
// keeps 0 (the shard check reports it).
#pragma once

#include <cstdint>

#include "base/half.h"  // TSR_HD

namespace tsr::kernels {

TSR_HD float castResidualOf(float x, uint16_t h, bool f16) {
  float d = x - (f16 ? f16ToFloat(h) : bf16ToFloat(h));
  return (floatBits(d) & 0x7f800000u) != 0x7f800000u ? d : 0.0f;
}

}  // namespace tsr::kernels
