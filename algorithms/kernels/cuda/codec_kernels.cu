// CUDA kernels of a compressed tensor's device codec (algorithms/compressed/device_codec.h;
// plan/step_kernels.h): the non-finite scan and the averaging scale. Elementwise f32 math with
// --fmad=false, so each element rounds as on the CPU; the sparse codecs' gather, scatter and
// index check; max |x| and the block sums of x^2 (dither_ops.h sumSquaresBlock, one thread per
// 1024-element block) for dithering's scales; the error-feedback and momentum updates
// (feedback_ops.h). Status on a GPU: docs/gpu.md.
#include <cuda_runtime.h>

#include "algorithms/kernels/cuda/cuda_kernels.h"
#include "algorithms/kernels/dither_ops.h"
#include "algorithms/kernels/feedback_ops.h"
#include "algorithms/kernels/sign_ops.h"

namespace tsr::kernels::cuda {
namespace {

constexpr int kThreads = 256;

inline unsigned blocksFor(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }
inline cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }
__device__ inline size_t threadIndex() { return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; }

__global__ void scanKernel(const float* x, size_t count, unsigned long long* firstBad) {
  size_t j = threadIndex();
  if (j < count && !isFiniteFloat(x[j])) atomicMin(firstBad, static_cast<unsigned long long>(j));
}

__global__ void scaleKernel(const float* in, size_t count, float factor, float* out) {
  size_t j = threadIndex();
  if (j < count) out[j] = in[j] * factor;
}

__global__ void gatherKernel(const float* x, const uint32_t* indices, size_t k, float* out) {
  size_t i = threadIndex();
  if (i < k) out[i] = x[indices[i]];
}

__global__ void scatterKernel(const uint32_t* indices, const float* values, size_t k, float* out) {
  size_t i = threadIndex();
  if (i < k) out[indices[i]] = values[i];
}

__global__ void rangeKernel(const uint32_t* indices, size_t k, size_t n, unsigned long long* firstBad) {
  size_t i = threadIndex();
  if (i < k && indices[i] >= n) atomicMin(firstBad, static_cast<unsigned long long>(i));
}

__global__ void efKeepKernel(const float* c, size_t count, float* e) {
  size_t j = threadIndex();
  if (j < count) e[j] = efKept(c[j], e[j]);
}

__global__ void nesterovShiftKernel(const float* g, const float* m, size_t count, float mu, float* p) {
  size_t j = threadIndex();
  if (j < count) p[j] = nesterovShifted(g[j], m[j], mu);
}

__global__ void nesterovUpdateKernel(const float* g, size_t count, float mu, float* m) {
  size_t j = threadIndex();
  if (j < count) m[j] = nesterovNext(g[j], m[j], mu);
}

// Non-negative floats order as their bits do, so an integer atomicMax finds max |x| exactly.
__global__ void maxAbsKernel(const float* x, size_t count, unsigned int* maxBits) {
  size_t j = threadIndex();
  if (j < count) atomicMax(maxBits, floatBits(fabsf(x[j])));
}

// One thread per block of kSumSquaresBlock elements, summed in the CPU's order.
__global__ void sumSquaresKernel(const float* x, size_t count, double* blockSums) {
  size_t b = threadIndex();
  size_t base = b * kSumSquaresBlock;
  if (base >= count) return;
  blockSums[b] = sumSquaresBlock(x + base, count - base < kSumSquaresBlock ? count - base : kSumSquaresBlock);
}

int launched() { return static_cast<int>(cudaGetLastError()); }

}  // namespace

int scanNonFinite(const float* x, size_t count, unsigned long long* firstBad, void* stream) {
  if (count == 0) return 0;
  scanKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(x, count, firstBad);
  return launched();
}

int scaleF32(const float* in, size_t count, float factor, float* out, void* stream) {
  if (count == 0) return 0;
  scaleKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(in, count, factor, out);
  return launched();
}

int gatherF32(const float* x, const uint32_t* indices, size_t k, float* out, void* stream) {
  if (k == 0) return 0;
  gatherKernel<<<blocksFor(k), kThreads, 0, asStream(stream)>>>(x, indices, k, out);
  return launched();
}

int scatterF32(const uint32_t* indices, const float* values, size_t k, float* out, void* stream) {
  if (k == 0) return 0;
  scatterKernel<<<blocksFor(k), kThreads, 0, asStream(stream)>>>(indices, values, k, out);
  return launched();
}

int indexOutOfRange(const uint32_t* indices, size_t k, size_t n, unsigned long long* firstBad, void* stream) {
  if (k == 0) return 0;
  rangeKernel<<<blocksFor(k), kThreads, 0, asStream(stream)>>>(indices, k, n, firstBad);
  return launched();
}

int efKeep(const float* c, size_t count, float* e, void* stream) {
  if (count == 0) return 0;
  efKeepKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(c, count, e);
  return launched();
}

int nesterovShift(const float* g, const float* m, size_t count, float mu, float* p, void* stream) {
  if (count == 0) return 0;
  nesterovShiftKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(g, m, count, mu, p);
  return launched();
}

int nesterovUpdate(const float* g, size_t count, float mu, float* m, void* stream) {
  if (count == 0) return 0;
  nesterovUpdateKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(g, count, mu, m);
  return launched();
}

int maxAbsBits(const float* x, size_t count, unsigned int* maxBits, void* stream) {
  if (count == 0) return 0;
  maxAbsKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(x, count, maxBits);
  return launched();
}

size_t sumSquaresBlocks(size_t count) { return (count + kSumSquaresBlock - 1) / kSumSquaresBlock; }

int sumSquaresBlockwise(const float* x, size_t count, double* blockSums, void* stream) {
  size_t blocks = sumSquaresBlocks(count);
  if (blocks == 0) return 0;
  sumSquaresKernel<<<blocksFor(blocks), kThreads, 0, asStream(stream)>>>(x, count, blockSums);
  return launched();
}

}  // namespace tsr::kernels::cuda
