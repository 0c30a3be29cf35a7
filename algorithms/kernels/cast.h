// f32 <-> f16 / bf16 array casts (fp16 / bf16 compressors, two-level intra-host compression).
// Round to nearest even, NaN stays NaN, f16 overflow gives Inf: exactly base/half.h per element,
// which is also what the CUDA casts run.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tsr::kernels {

void castF32ToF16(const float* in, size_t count, uint16_t* out);
void castF16ToF32(const uint16_t* in, size_t count, float* out);
void castF32ToBf16(const float* in, size_t count, uint16_t* out);
void castBf16ToF32(const uint16_t* in, size_t count, float* out);

}  // namespace tsr::kernels
