// The magnitude order shared by the CPU top-k (topk.cc) and the CUDA top-k
// (cuda/select_kernels.cu): |x| compared as the IEEE bit pattern with the sign cleared.
#pragma once

#include <cstdint>

#include "base/half.h"

namespace tsr::kernels {

TSR_HD uint32_t magnitudeBits(float x) { return floatBits(x) & 0x7fffffffu; }

}  // namespace tsr::kernels
