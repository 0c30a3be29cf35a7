// CUDA kernels over the shared TSR_HD per-word code (sign_ops.h) and half conversions
// (base/half.h). One thread per 64-bit word for the bit kernels but the pack (a warp per 32
// words), one per element otherwise.
#include <cuda_runtime.h>

#include "algorithms/kernels/cuda/cuda_kernels.h"
#include "algorithms/kernels/cuda/warp_pack.cuh"
#include "algorithms/kernels/sign_ops.h"
#include "base/half.h"

namespace tsr::kernels::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned blocksFor(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }
inline cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }

__global__ void packKernel(const float* x, size_t count, uint64_t* words, RngStream rng, uint64_t firstWord,
                           unsigned long long* firstBad) {
  packWarpWords([x](size_t j) { return x[j]; }, count, words, rng, firstWord, firstBad);
}

__global__ void mergeKernel(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint64_t q64,
                            RngStream rng, uint64_t firstWord) {
  size_t w = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (w < words) out[w] = mergeSignWord(v[w], s[w], q64, rng, firstWord + w);
}

__global__ void copyWordsKernel(const uint64_t* src, uint64_t* out, size_t words) {
  size_t w = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (w < words) out[w] = src[w];
}

__global__ void decompressKernel(const uint64_t* words, size_t count, float eta, float* out) {
  size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (j < count) out[j] = signValue(words[j / 64], static_cast<int>(j % 64), eta);
}

__global__ void compensateKernel(const float* g, const uint64_t* words, size_t count, float eta, float* c) {
  size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (j < count) c[j] = g[j] - signValue(words[j / 64], static_cast<int>(j % 64), eta);
}

__global__ void toF16Kernel(const float* in, size_t n, uint16_t* out) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = floatToF16(in[i]);
}
__global__ void fromF16Kernel(const uint16_t* in, size_t n, float* out) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = f16ToFloat(in[i]);
}
__global__ void toBf16Kernel(const float* in, size_t n, uint16_t* out) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = floatToBf16(in[i]);
}
__global__ void fromBf16Kernel(const uint16_t* in, size_t n, float* out) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = bf16ToFloat(in[i]);
}

int launched() { return static_cast<int>(cudaGetLastError()); }

}  // namespace

int signPack(const float* x, size_t count, uint64_t* words, const RngStream& rng, uint64_t firstWord,
             unsigned long long* firstBad, void* stream) {
  size_t nwords = wordsForElements(count);
  if (nwords == 0) return 0;
  packKernel<<<blocksFor(packThreadsFor(count)), kThreads, 0, asStream(stream)>>>(x, count, words, rng, firstWord,
                                                                                  firstBad);
  return launched();
}

int signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a, uint32_t b,
              const RngStream& rng, uint64_t firstWord, void* stream) {
  if (words == 0) return 0;
  if (a == 0 || b == 0) {
    const uint64_t* src = b == 0 ? v : s;
    if (src == out) return 0;
    copyWordsKernel<<<blocksFor(words), kThreads, 0, asStream(stream)>>>(src, out, words);
    return launched();
  }
  mergeKernel<<<blocksFor(words), kThreads, 0, asStream(stream)>>>(v, s, out, words, mergeThreshold(a, b), rng,
                                                                   firstWord);
  return launched();
}

int signDecompress(const uint64_t* words, size_t count, float eta, float* out, void* stream) {
  if (count == 0) return 0;
  decompressKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(words, count, eta, out);
  return launched();
}

int signCompensate(const float* g, const uint64_t* words, size_t count, float eta, float* c, void* stream) {
  if (count == 0) return 0;
  compensateKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(g, words, count, eta, c);
  return launched();
}

int castF32ToF16(const float* in, size_t count, uint16_t* out, void* stream) {
  if (count == 0) return 0;
  toF16Kernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(in, count, out);
  return launched();
}
int castF16ToF32(const uint16_t* in, size_t count, float* out, void* stream) {
  if (count == 0) return 0;
  fromF16Kernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(in, count, out);
  return launched();
}
int castF32ToBf16(const float* in, size_t count, uint16_t* out, void* stream) {
  if (count == 0) return 0;
  toBf16Kernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(in, count, out);
  return launched();
}
int castBf16ToF32(const uint16_t* in, size_t count, float* out, void* stream) {
  if (count == 0) return 0;
  fromBf16Kernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(in, count, out);
  return launched();
}

}  // namespace tsr::kernels::cuda
