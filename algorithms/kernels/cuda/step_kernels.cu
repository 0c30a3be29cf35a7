// CUDA kernels for a Marsit step and a dense plan on device memory (the direct device path,
// algorithms/plan/step_kernels.h), over the shared TSR_HD code of sign_ops.h. Status on a GPU:
// docs/gpu.md.
#include <cuda_runtime.h>

#include "algorithms/kernels/cast_ops.h"
#include "algorithms/kernels/cuda/cuda_kernels.h"
#include "algorithms/kernels/cuda/warp_pack.cuh"
#include "algorithms/kernels/sign_ops.h"
#include "base/half.h"

namespace tsr::kernels::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned blocksFor(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }
inline cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }
__device__ inline size_t threadIndex() { return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; }

// work = g + c and its sign words (warp_pack.cuh), with the first non-finite element of work
// into *firstBad.
__global__ void addPackKernel(const float* g, const float* c, size_t count, float* work, uint64_t* words, RngStream rng,
                              uint64_t firstWord, unsigned long long* firstBad) {
  const auto load = [g, c, work](size_t j) {
    float x = g[j] + c[j];
    work[j] = x;
    return x;
  };
  packWarpWords(load, count, words, rng, firstWord, firstBad);
}

__global__ void addScanKernel(const float* g, const float* c, size_t count, float* work, unsigned long long* firstBad) {
  size_t j = threadIndex();
  if (j >= count) return;
  float x = g[j] + c[j];
  work[j] = x;
  if (!isFiniteFloat(x)) atomicMin(firstBad, static_cast<unsigned long long>(j));
}

__global__ void blockSumKernel(const float* x, size_t count, double* blockSums) {
  size_t b = threadIndex();
  size_t base = b * kSumAbsBlock;
  if (base >= count) return;
  blockSums[b] = sumAbsBlock(x + base, count - base < kSumAbsBlock ? count - base : kSumAbsBlock);
}

__global__ void finishKernel(const float* work, const uint64_t* words, size_t count, float eta, float* out,
                             float* comp) {
  size_t j = threadIndex();
  if (j >= count) return;
  float w = work[j];
  float v = signValue(words[j / 64], static_cast<int>(j % 64), eta);
  out[j] = v;
  comp[j] = w - v;
}

__global__ void sumF32Kernel(float* dst, const float* src, size_t count) {
  size_t j = threadIndex();
  if (j < count) dst[j] = dst[j] + src[j];
}

__global__ void divideF32Kernel(float* data, size_t count, float d) {
  size_t j = threadIndex();
  if (j < count) data[j] = data[j] / d;
}

// Two-level Marsit's intra-host average in f16 (kernels/reduce.cc's f16 sum and division).
__global__ void sumF16Kernel(uint16_t* dst, const uint16_t* src, size_t count) {
  size_t j = threadIndex();
  if (j < count) dst[j] = floatToF16(f16ToFloat(dst[j]) + f16ToFloat(src[j]));
}

__global__ void divideF16Kernel(uint16_t* data, size_t count, float d) {
  size_t j = threadIndex();
  if (j < count) data[j] = floatToF16(f16ToFloat(data[j]) / d);
}

__global__ void sumF16KeepingDroppedKernel(uint16_t* dst, const uint16_t* src, size_t count, float* dropped) {
  size_t j = threadIndex();
  if (j < count) dst[j] = f16SumKeepingDropped(dst[j], src[j], dropped[j]);
}

__global__ void averageF16KeepingDroppedKernel(uint16_t* data, size_t count, float d, float* dropped) {
  size_t j = threadIndex();
  if (j < count) data[j] = f16AverageKeepingDropped(data[j], d, dropped[j]);
}

__global__ void castResidualKernel(const float* x, const uint16_t* h, size_t count, bool f16, float* r) {
  size_t j = threadIndex();
  if (j < count) r[j] = castResidualOf(x[j], h[j], f16);
}

int launched() { return static_cast<int>(cudaGetLastError()); }

}  // namespace

int addPack(const float* g, const float* c, size_t count, float* work, uint64_t* words, const RngStream& rng,
            uint64_t firstWord, unsigned long long* firstBad, void* stream) {
  size_t nwords = wordsForElements(count);
  if (nwords == 0) return 0;
  addPackKernel<<<blocksFor(packThreadsFor(count)), kThreads, 0, asStream(stream)>>>(g, c, count, work, words, rng,
                                                                                     firstWord, firstBad);
  return launched();
}

int addScan(const float* g, const float* c, size_t count, float* work, unsigned long long* firstBad, void* stream) {
  if (count == 0) return 0;
  addScanKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(g, c, count, work, firstBad);
  return launched();
}

size_t sumAbsBlocks(size_t count) { return (count + kSumAbsBlock - 1) / kSumAbsBlock; }

int sumAbsBlockwise(const float* x, size_t count, double* blockSums, void* stream) {
  size_t blocks = sumAbsBlocks(count);
  if (blocks == 0) return 0;
  blockSumKernel<<<blocksFor(blocks), kThreads, 0, asStream(stream)>>>(x, count, blockSums);
  return launched();
}

int signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out, float* comp,
               void* stream) {
  if (count == 0) return 0;
  finishKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(work, words, count, eta, out, comp);
  return launched();
}

int reduceSumF32(float* dst, const float* src, size_t count, void* stream) {
  if (count == 0) return 0;
  sumF32Kernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(dst, src, count);
  return launched();
}

int divideF32(float* data, size_t count, float divisor, void* stream) {
  if (count == 0) return 0;
  divideF32Kernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(data, count, divisor);
  return launched();
}

int reduceSumF16(uint16_t* dst, const uint16_t* src, size_t count, void* stream) {
  if (count == 0) return 0;
  sumF16Kernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(dst, src, count);
  return launched();
}

int divideF16(uint16_t* data, size_t count, float divisor, void* stream) {
  if (count == 0) return 0;
  divideF16Kernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(data, count, divisor);
  return launched();
}

int reduceSumF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped, void* stream) {
  if (count == 0) return 0;
  sumF16KeepingDroppedKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(dst, src, count, dropped);
  return launched();
}

int averageF16KeepingDropped(uint16_t* data, size_t count, float divisor, float* dropped, void* stream) {
  if (count == 0) return 0;
  averageF16KeepingDroppedKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(data, count, divisor, dropped);
  return launched();
}

int castResidual(const float* x, const uint16_t* h, size_t count, bool f16, float* r, void* stream) {
  if (count == 0) return 0;
  castResidualKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(x, h, count, f16, r);
  return launched();
}

}  // namespace tsr::kernels::cuda
