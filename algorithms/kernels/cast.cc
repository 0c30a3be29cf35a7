#include "algorithms/kernels/cast.h"

#include "base/half.h"

namespace tsr::kernels {

void castF32ToF16(const float* __restrict in, size_t count, uint16_t* __restrict out) {
  for (size_t i = 0; i < count; ++i) out[i] = floatToF16(in[i]);
}

void castF16ToF32(const uint16_t* __restrict in, size_t count, float* __restrict out) {
  for (size_t i = 0; i < count; ++i) out[i] = f16ToFloat(in[i]);
}

void castF32ToBf16(const float* __restrict in, size_t count, uint16_t* __restrict out) {
  for (size_t i = 0; i < count; ++i) out[i] = floatToBf16(in[i]);
}

void castBf16ToF32(const uint16_t* __restrict in, size_t count, float* __restrict out) {
  for (size_t i = 0; i < count; ++i) out[i] = bf16ToFloat(in[i]);
}

}  // namespace tsr::kernels
