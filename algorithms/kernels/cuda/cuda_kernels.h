// CUDA versions of the sign, cast, random-k, top-k and dithering kernels, for tensors in device memory.
// Built only when TSR_CUDA_ENABLED (target tsr_kernels_cuda, define TSR_HAVE_CUDA_KERNELS). Each kernel runs the
// same TSR_HD per-element code as the CPU path (sign_ops.h, base/half.h), so results are
// bit-identical to signPack / signMerge / signDecompress / castF32To* on the CPU.
// Status on a GPU: docs/gpu.md.
//
// All pointers are device pointers; `stream` is a cudaStream_t (nullptr = default stream).
// Launches are asynchronous; the return value is the cudaError_t of the launch (0 = success).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/kernels/dithering.h"
#include "algorithms/kernels/philox.h"

namespace tsr::kernels::cuda {

// Sign bits of x into ceil(count/64) words. Non-finite detection: *firstBad (device pointer,
// preset by the caller to count) receives the minimum index of a NaN/Inf element.
int signPack(const float* x, size_t count, uint64_t* words, const RngStream& rng, uint64_t firstWord,
             unsigned long long* firstBad, void* stream);
int signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a, uint32_t b,
              const RngStream& rng, uint64_t firstWord, void* stream);
int signDecompress(const uint64_t* words, size_t count, float eta, float* out, void* stream);
int signCompensate(const float* g, const uint64_t* words, size_t count, float eta, float* c, void* stream);
// The direct device path's step (cuda/step_kernels.cu; plan/step_kernels.h). addPack: work =
// g + c, its sign words and the first non-finite index (into *firstBad, preset to count);
// addScan: the same without the words. sumAbsBlockwise: blockSums[b] = sum |x| of 1024-element
// block b in kernels::sumAbs's order (sign_ops.h sumAbsBlock; sumAbsBlocks(count) blocks):
// added in order on the host, it is sumAbs bit for bit. signFinish: out = eta (2 bit - 1),
// comp = work - out. reduceSumF32: dst += src; divideF32: data /= divisor (IEEE division).
int addPack(const float* g, const float* c, size_t count, float* work, uint64_t* words, const RngStream& rng,
            uint64_t firstWord, unsigned long long* firstBad, void* stream);
int addScan(const float* g, const float* c, size_t count, float* work, unsigned long long* firstBad, void* stream);
size_t sumAbsBlocks(size_t count);
int sumAbsBlockwise(const float* x, size_t count, double* blockSums, void* stream);
int signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out, float* comp,
               void* stream);
int reduceSumF32(float* dst, const float* src, size_t count, void* stream);
int divideF32(float* data, size_t count, float divisor, void* stream);
// Two-level Marsit: the f16 intra-host average (dst = f16(f32(dst) + f32(src)); data =
// f16(f32(data) / divisor)) and the cast residual r = x - back(h), non-finite to 0 (cast_ops.h).
int reduceSumF16(uint16_t* dst, const uint16_t* src, size_t count, void* stream);
int divideF16(uint16_t* data, size_t count, float divisor, void* stream);
int castResidual(const float* x, const uint16_t* h, size_t count, bool f16, float* r, void* stream);
// The same sum and division adding what their rounding dropped to dropped[j] (cast_ops.h).
int reduceSumF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped, void* stream);
int averageF16KeepingDropped(uint16_t* data, size_t count, float divisor, float* dropped, void* stream);

// A compressed tensor's device codec (cuda/codec_kernels.cu): the first non-finite index of x
// into *firstBad (preset to count); out = in * factor.
int scanNonFinite(const float* x, size_t count, unsigned long long* firstBad, void* stream);
int scaleF32(const float* in, size_t count, float factor, float* out, void* stream);
// out[i] = x[indices[i]]; out[indices[i]] = values[i]; the first i with indices[i] >= n into
// *firstBad (preset to k).
int gatherF32(const float* x, const uint32_t* indices, size_t k, float* out, void* stream);
int scatterF32(const uint32_t* indices, const float* values, size_t k, float* out, void* stream);
int indexOutOfRange(const uint32_t* indices, size_t k, size_t n, unsigned long long* firstBad, void* stream);
// The decorators' state updates (feedback_ops.h): e = c - e; p = g + mu (mu m + g); m = mu m + g.
int efKeep(const float* c, size_t count, float* e, void* stream);
int nesterovShift(const float* g, const float* m, size_t count, float mu, float* p, void* stream);
int nesterovUpdate(const float* g, size_t count, float mu, float* m, void* stream);
// max |x| as float bits into *maxBits (preset to 0, the bits of +0.0f): dithering's max scale.
int maxAbsBits(const float* x, size_t count, unsigned int* maxBits, void* stream);
// Dithering's L2 scale: blockSums[b] = sum x^2 of 1024-element block b in
// kernels::ditherSumSquares's order (dither_ops.h sumSquaresBlock; sumSquaresBlocks(count)
// blocks): added in order on the host, it is ditherSumSquares bit for bit.
size_t sumSquaresBlocks(size_t count);
int sumSquaresBlockwise(const float* x, size_t count, double* blockSums, void* stream);

int castF32ToF16(const float* in, size_t count, uint16_t* out, void* stream);
int castF16ToF32(const uint16_t* in, size_t count, float* out, void* stream);
int castF32ToBf16(const float* in, size_t count, uint16_t* out, void* stream);
int castBf16ToF32(const uint16_t* in, size_t count, float* out, void* stream);

// Selection kernels (cuda/select_kernels.cu). Each needs device scratch of the size its
// *ScratchBytes function gives (host function, no GPU needed), passed as `scratch`; a smaller
// scratch fails with cudaErrorInvalidValue before anything is launched.
//
// Random-k: the same min(k, n) indices (increasing) as the CPU randomkSelect for the same
// (seed, step). The draws run in parallel; Floyd's marking is one device thread (each step
// depends on the ones before it: O(k) cheap bitmap operations); the bitmap becomes the index
// list by a popcount scan (CUB) and a parallel emit.
size_t randomkScratchBytes(size_t n, size_t k);
int randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint32_t* indices, void* scratch,
                  size_t scratchBytes, void* stream);
// Top-k by magnitude: the same min(k, n) indices (increasing) as the CPU topkSelect, ties to
// the lower index. A radix select finds the k-th largest magnitude in three digit passes; an
// ordered emit then writes every index above it and the lowest-indexed ones equal to it
// (select_kernels.cu). Callers reject NaN first (as on the CPU).
size_t topkScratchBytes(size_t n, size_t k);
int topkSelect(const float* x, size_t n, size_t k, uint32_t* indices, void* scratch, size_t scratchBytes, void* stream);
// Dithering: codes bit-identical to the CPU ditherQuantize for the same scale (computed by the
// caller: maxAbsBits, or ditherL2Scale of sumSquaresBlockwise's blocks added in order).
int ditherQuantize(const float* x, size_t count, float scale, uint32_t s, DitherPartition partition,
                   const RngStream& rng, int16_t* codes, void* stream);
int ditherDequantize(const int16_t* codes, size_t count, float scale, uint32_t s, DitherPartition partition, float* out,
                     void* stream);

}  // namespace tsr::kernels::cuda
