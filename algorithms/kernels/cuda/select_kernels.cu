// CUDA random-k, top-k and dithering over the shared TSR_HD code (randomk_ops.h, topk_ops.h,
// dither_ops.h). Status on a GPU: docs/gpu.md.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "algorithms/kernels/cuda/cuda_kernels.h"
#include "algorithms/kernels/dither_ops.h"
#include "algorithms/kernels/randomk_ops.h"
#include "algorithms/kernels/topk_ops.h"

namespace tsr::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr size_t kAlign = 256;

inline unsigned blocksFor(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }
inline cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }
inline size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
int launched() { return static_cast<int>(cudaGetLastError()); }

// Carves consecutive aligned pieces out of one scratch block (or only adds up their sizes).
struct Carve {
  char* base = nullptr;
  size_t used = 0;
  template <typename T>
  T* take(size_t count) {
    T* p = base ? reinterpret_cast<T*>(base + used) : nullptr;
    used += aligned(count * sizeof(T));
    return p;
  }
};

// ---- random-k

__global__ void randomkDrawKernel(RngStream stream, uint64_t first, size_t k, uint32_t* draws) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < k) draws[i] = static_cast<uint32_t>(randomkDraw(stream, first + i));
}

// Floyd's steps depend on each other through the bitmap: one thread, in order, as on the CPU.
__global__ void randomkMarkKernel(const uint32_t* draws, uint64_t first, size_t k, uint64_t* bitmap) {
  for (size_t i = 0; i < k; ++i) randomkMark(bitmap, first + i, draws[i]);
}

__global__ void popcountKernel(const uint64_t* bitmap, size_t words, uint32_t* counts) {
  size_t w = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (w < words) counts[w] = static_cast<uint32_t>(__popcll(bitmap[w]));
}

__global__ void emitKernel(const uint64_t* bitmap, size_t words, const uint32_t* offsets, uint32_t* indices) {
  size_t w = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (w < words) emitBitmapWord(bitmap[w], w, indices + offsets[w]);
}

size_t randomkCarve(size_t n, size_t k, void* scratch, uint32_t** draws, uint64_t** bitmap, uint32_t** counts,
                    uint32_t** offsets, void** temp, size_t* tempBytes) {
  const size_t words = randomkWords(n);
  Carve c{static_cast<char*>(scratch)};
  *draws = c.take<uint32_t>(k);
  *bitmap = c.take<uint64_t>(words);
  *counts = c.take<uint32_t>(words);
  *offsets = c.take<uint32_t>(words);
  *tempBytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, *tempBytes, *counts, *offsets, words);
  *temp = c.take<char>(*tempBytes);
  return c.used;
}

// ---- top-k

__global__ void magnitudeKeysKernel(const float* x, size_t n, uint32_t* keys, uint32_t* ids) {
  size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (j < n) {
    keys[j] = magnitudeBits(x[j]);
    ids[j] = static_cast<uint32_t>(j);
  }
}

__global__ void iotaKernel(uint32_t* out, size_t n) {
  size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (j < n) out[j] = static_cast<uint32_t>(j);
}

struct TopkPieces {
  uint32_t *keys, *keysSorted, *ids, *idsSorted;
  void* temp;
  size_t tempBytes;
};

size_t topkCarve(size_t n, size_t k, void* scratch, TopkPieces* p) {
  Carve c{static_cast<char*>(scratch)};
  p->keys = c.take<uint32_t>(n);
  p->keysSorted = c.take<uint32_t>(n);
  p->ids = c.take<uint32_t>(n);
  p->idsSorted = c.take<uint32_t>(n);
  size_t sortBytes = 0, orderBytes = 0;
  // Bits [0, 31): the sign is already cleared from the magnitude keys.
  cub::DeviceRadixSort::SortPairsDescending(nullptr, sortBytes, p->keys, p->keysSorted, p->ids, p->idsSorted, n, 0, 31);
  cub::DeviceRadixSort::SortKeys(nullptr, orderBytes, p->idsSorted, p->ids, k);
  p->tempBytes = sortBytes > orderBytes ? sortBytes : orderBytes;
  p->temp = c.take<char>(p->tempBytes);
  return c.used;
}

// ---- dithering

// One thread per group of 4 elements: they share one Philox draw (ditherRandom).
__global__ void ditherKernel(const float* x, size_t count, float scale, float levels, uint32_t maxCode,
                             DitherPartition partition, RngStream rng, int16_t* codes) {
  size_t g = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  size_t i0 = g * 4;
  if (i0 >= count) return;
  Philox4x32 r = philoxDraw(rng, RngPurpose::kDither, g);
  for (int q = 0; q < 4 && i0 + q < count; ++q)
    codes[i0 + q] = ditherCode(x[i0 + q], scale, levels, maxCode, partition, r.v[q]);
}

__global__ void unditherKernel(const int16_t* codes, size_t count, float scale, float d, float* out) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = ditherValue(codes[i], scale, d);
}

}  // namespace

size_t randomkScratchBytes(size_t n, size_t k) {
  uint32_t *draws, *counts, *offsets;
  uint64_t* bitmap;
  void* temp;
  size_t tempBytes;
  return randomkCarve(n, k < n ? k : n, nullptr, &draws, &bitmap, &counts, &offsets, &temp, &tempBytes);
}

int randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint32_t* indices, void* scratch,
                  size_t scratchBytes, void* stream) {
  if (k > n) k = n;
  if (k == 0) return 0;
  uint32_t *draws, *counts, *offsets;
  uint64_t* bitmap;
  void* temp;
  size_t tempBytes;
  if (randomkCarve(n, k, nullptr, &draws, &bitmap, &counts, &offsets, &temp, &tempBytes) > scratchBytes)
    return static_cast<int>(cudaErrorInvalidValue);
  randomkCarve(n, k, scratch, &draws, &bitmap, &counts, &offsets, &temp, &tempBytes);
  const size_t words = randomkWords(n);
  cudaStream_t s = asStream(stream);
  const uint64_t first = n - k;
  randomkDrawKernel<<<blocksFor(k), kThreads, 0, s>>>(randomkStream(seed, step), first, k, draws);
  if (int e = launched()) return e;
  if (int e = static_cast<int>(cudaMemsetAsync(bitmap, 0, words * sizeof(uint64_t), s))) return e;
  randomkMarkKernel<<<1, 1, 0, s>>>(draws, first, k, bitmap);
  popcountKernel<<<blocksFor(words), kThreads, 0, s>>>(bitmap, words, counts);
  if (int e = static_cast<int>(cub::DeviceScan::ExclusiveSum(temp, tempBytes, counts, offsets, words, s))) return e;
  emitKernel<<<blocksFor(words), kThreads, 0, s>>>(bitmap, words, offsets, indices);
  return launched();
}

size_t topkScratchBytes(size_t n, size_t k) {
  TopkPieces p{};
  return topkCarve(n, k < n ? k : n, nullptr, &p);
}

int topkSelect(const float* x, size_t n, size_t k, uint32_t* indices, void* scratch, size_t scratchBytes,
               void* stream) {
  if (k == 0 || n == 0) return 0;
  cudaStream_t s = asStream(stream);
  if (k >= n) {
    iotaKernel<<<blocksFor(n), kThreads, 0, s>>>(indices, n);
    return launched();
  }
  TopkPieces p{};
  if (topkCarve(n, k, nullptr, &p) > scratchBytes) return static_cast<int>(cudaErrorInvalidValue);
  topkCarve(n, k, scratch, &p);
  magnitudeKeysKernel<<<blocksFor(n), kThreads, 0, s>>>(x, n, p.keys, p.ids);
  if (int e = launched()) return e;
  size_t bytes = p.tempBytes;
  if (int e = static_cast<int>(cub::DeviceRadixSort::SortPairsDescending(p.temp, bytes, p.keys, p.keysSorted, p.ids,
                                                                         p.idsSorted, n, 0, 31, s)))
    return e;
  // The first k sorted ids are the selection; put them in increasing order (32 key bits).
  bytes = p.tempBytes;
  return static_cast<int>(cub::DeviceRadixSort::SortKeys(p.temp, bytes, p.idsSorted, indices, k, 0, 32, s));
}

int ditherQuantize(const float* x, size_t count, float scale, uint32_t s, DitherPartition partition,
                   const RngStream& rng, int16_t* codes, void* stream) {
  if (count == 0) return 0;
  const uint32_t maxCode = ditherMaxCodeOf(s, partition);
  if (scale <= 0.0f || maxCode == 0)  // as on the CPU: all codes 0
    return static_cast<int>(cudaMemsetAsync(codes, 0, count * sizeof(int16_t), asStream(stream)));
  const size_t groups = (count + 3) / 4;
  ditherKernel<<<blocksFor(groups), kThreads, 0, asStream(stream)>>>(x, count, scale, static_cast<float>(maxCode),
                                                                     maxCode, partition, rng, codes);
  return launched();
}

int ditherDequantize(const int16_t* codes, size_t count, float scale, uint32_t s, DitherPartition partition, float* out,
                     void* stream) {
  if (count == 0) return 0;
  const uint32_t maxCode = ditherMaxCodeOf(s, partition);
  const float d = maxCode == 0 ? 1.0f : static_cast<float>(maxCode);
  unditherKernel<<<blocksFor(count), kThreads, 0, asStream(stream)>>>(codes, count, scale, d, out);
  return launched();
}

}  // namespace tsr::kernels::cuda
