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

// The two-level intra-host f16 average's sums and division (cast_ops.h): dst = f16(dst + src)
// and data = f16(data / divisor), exactly as reduceInto / divideInPlace, with what each
// rounding dropped (units of the sum) added to dropped[i].
void sumF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped);
void averageF16KeepingDropped(uint16_t* data, size_t count, float divisor, float* dropped);

}  // namespace tsr::kernels
