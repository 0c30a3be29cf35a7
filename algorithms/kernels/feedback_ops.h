// Per-element math of the error-feedback and Nesterov-momentum decorators
// (compress/error_feedback.h, compress/momentum.h), shared by them, the host StepKernels and
// the CUDA codec kernels (cuda/codec_kernels.cu), so a compressed tensor's device state
// (compressed/device_codec.h) rounds exactly as the host's. Both sides build without fused
// multiply-adds (-ffp-contract=off, --fmad=false).
#pragma once

#include "base/half.h"  // TSR_HD

namespace tsr::kernels {

// Error feedback: what is compressed, c = g + e; what is kept, e' = c - decompress(payload).
TSR_HD float efCorrected(float g, float e) { return g + e; }
TSR_HD float efKept(float c, float decoded) { return c - decoded; }
// Nesterov: what is compressed, g + mu (mu m + g); the momentum after the step, mu m + g.
TSR_HD float nesterovShifted(float g, float m, float mu) { return g + mu * (mu * m + g); }
TSR_HD float nesterovNext(float g, float m, float mu) { return mu * m + g; }

}  // namespace tsr::kernels
