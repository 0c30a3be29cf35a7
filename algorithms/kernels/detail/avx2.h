// AVX2 implementations (compiled in avx2.cc with -mavx2). Called only through the dispatchers
// in reduce.cc / sign.cc / topk.cc when activeIsa() == Isa::kAvx2.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/kernels/philox.h"
#include "base/dtype.h"

namespace tsr::kernels::avx2 {

void reduceInto(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op);
size_t signPack(const float* x, size_t count, uint64_t* words, const RngStream& rng, uint64_t firstWord);
void signDecompress(const uint64_t* words, size_t count, float eta, float* out);
void signCompensate(const float* g, const uint64_t* words, size_t count, float eta, float* c);
size_t firstNonFinite(const float* x, size_t count);
// blockSums (may be null): each 1024-element block's |work| sum, in block order.
size_t signPrepare(const float* g, const float* c, size_t count, float* work, uint64_t* words, const RngStream& rng,
                   uint64_t firstWord, double* sumAbsOut, double* blockSums = nullptr);
void signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out, float* comp);
// Top-k scan: counts |x| bits > hi, stores the magnitude bits of elements with lo <= m <= hi
// into mid (up to capacity; the return value is the full number found).
size_t topkBand(const float* x, size_t n, uint32_t lo, uint32_t hi, uint32_t* mid, size_t capacity, size_t* above);
// Emits indices with m > t, and the first `equalBudget` with m == t, in increasing order.
size_t topkEmit(const float* x, size_t n, uint32_t t, size_t equalBudget, uint32_t* indices);

// f32 <-> bf16 (avx2.cc) and f32 <-> f16 (cast_f16c.cc, compiled with -mavx2 -mf16c: call
// only when cpuHasF16c()). Bit-identical to base/half.h per element.
void castF32ToBf16(const float* in, size_t count, uint16_t* out);
void castBf16ToF32(const uint16_t* in, size_t count, float* out);
void castF32ToF16(const float* in, size_t count, uint16_t* out);
void castF16ToF32(const uint16_t* in, size_t count, float* out);
// kernels/cast.h's two-level f16 sum and average keeping what they drop (cast_f16c.cc, F16C
// too): bit-identical to cast_ops.h per element.
void sumF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped);
// reduceInto for f16 (AVX2 + F16C): src at any byte offset; the portable loop's exact bits.
void reduceF16(uint16_t* dst, const void* src, size_t count, ReduceOp op);
// divideInPlace for f16 (AVX2 + F16C): the portable floatToF16(f16ToFloat(x) / d) bits.
void divideF16(uint16_t* data, size_t count, float divisor);
void averageF16KeepingDropped(uint16_t* data, size_t count, float divisor, float* dropped);

}  // namespace tsr::kernels::avx2
