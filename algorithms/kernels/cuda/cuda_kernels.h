// CUDA versions of the sign and cast kernels, for tensors in device memory. Built only when
// TSR_CUDA_ENABLED (target tsr_kernels_cuda, define TSR_HAVE_CUDA_KERNELS). Each kernel runs the
// same TSR_HD per-element code as the CPU path (sign_ops.h, base/half.h), so results are
// bit-identical to signPack / signMerge / signDecompress / castF32To* on the CPU.
// NOT RUN ON A GPU in this project: no GPU is available; only compiled and linked.
//
// All pointers are device pointers; `stream` is a cudaStream_t (nullptr = default stream).
// Launches are asynchronous; the return value is the cudaError_t of the launch (0 = success).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/kernels/philox.h"

namespace tsr::kernels::cuda {

// Sign bits of x into ceil(count/64) words. Non-finite detection: *firstBad (device pointer,
// preset by the caller to count) receives the minimum index of a NaN/Inf element.
int signPack(const float* x, size_t count, uint64_t* words, const RngStream& rng,
             uint64_t firstWord, unsigned long long* firstBad, void* stream);
int signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a,
              uint32_t b, const RngStream& rng, uint64_t firstWord, void* stream);
int signDecompress(const uint64_t* words, size_t count, float eta, float* out, void* stream);
int signCompensate(const float* g, const uint64_t* words, size_t count, float eta, float* c,
                   void* stream);
int castF32ToF16(const float* in, size_t count, uint16_t* out, void* stream);
int castF16ToF32(const uint16_t* in, size_t count, float* out, void* stream);
int castF32ToBf16(const float* in, size_t count, uint16_t* out, void* stream);
int castBf16ToF32(const uint16_t* in, size_t count, float* out, void* stream);

}  // namespace tsr::kernels::cuda
