#include "algorithms/kernels/cast.h"

#include "algorithms/kernels/cast_ops.h"
#include "algorithms/kernels/detail/avx2.h"
#include "algorithms/kernels/isa.h"
#include "base/half.h"

namespace tsr::kernels {

// The AVX2 versions (bf16: avx2.cc; f16: cast_f16c.cc, which also needs F16C) give exactly the
// loops below; the tests compare them bit for bit.
void castF32ToF16(const float* __restrict in, size_t count, uint16_t* __restrict out) {
  if (activeIsa() == Isa::kAvx2 && cpuHasF16c()) return avx2::castF32ToF16(in, count, out);
  for (size_t i = 0; i < count; ++i) out[i] = floatToF16(in[i]);
}

void castF16ToF32(const uint16_t* __restrict in, size_t count, float* __restrict out) {
  if (activeIsa() == Isa::kAvx2 && cpuHasF16c()) return avx2::castF16ToF32(in, count, out);
  for (size_t i = 0; i < count; ++i) out[i] = f16ToFloat(in[i]);
}

void castF32ToBf16(const float* __restrict in, size_t count, uint16_t* __restrict out) {
  if (activeIsa() == Isa::kAvx2) return avx2::castF32ToBf16(in, count, out);
  for (size_t i = 0; i < count; ++i) out[i] = floatToBf16(in[i]);
}

void castBf16ToF32(const uint16_t* __restrict in, size_t count, float* __restrict out) {
  if (activeIsa() == Isa::kAvx2) return avx2::castBf16ToF32(in, count, out);
  for (size_t i = 0; i < count; ++i) out[i] = bf16ToFloat(in[i]);
}

// The F16C versions (cast_f16c.cc) give exactly the loops below; the tests compare them.
void sumF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped) {
  if (activeIsa() == Isa::kAvx2 && cpuHasF16c()) return avx2::sumF16KeepingDropped(dst, src, count, dropped);
  for (size_t i = 0; i < count; ++i) dst[i] = f16SumKeepingDropped(dst[i], src[i], dropped[i]);
}

void averageF16KeepingDropped(uint16_t* data, size_t count, float divisor, float* dropped) {
  if (activeIsa() == Isa::kAvx2 && cpuHasF16c()) return avx2::averageF16KeepingDropped(data, count, divisor, dropped);
  for (size_t i = 0; i < count; ++i) data[i] = f16AverageKeepingDropped(data[i], divisor, dropped[i]);
}

}  // namespace tsr::kernels
