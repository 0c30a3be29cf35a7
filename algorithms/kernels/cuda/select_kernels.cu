// CUDA random-k, top-k and dithering over the shared TSR_HD code (randomk_ops.h, topk_ops.h,
// dither_ops.h). Status on a GPU: docs/gpu.md.
#include <cuda_runtime.h>

#include <algorithm>
#include <iterator>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
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

// ---- top-k: radix select of the k-th largest magnitude, then an ordered emit
//
// The 31 magnitude bits (topk_ops.h) are decided 11, 10 and 10 at a time: a histogram of the
// digit among the elements whose higher bits match the prefix decided so far, then one block
// picks the digit where the k-th largest falls. That leaves T, the k-th largest magnitude, and
// kLeft, how many elements equal to T the selection takes (the lowest-indexed ones, as on the
// CPU). Each tile then counts its elements above and at T, a scan of those counts gives every
// tile its place, and the tile writes its selected indices in increasing order. Five reads of
// x in all; a full radix sort of (|x|, index) pairs ran at 1.7x torch.topk on an H100.

struct RadixPass {
  int shift;         // the digit's lowest bit
  int bits;          // its width
  uint32_t decided;  // the bits above it, decided by the earlier passes
};
constexpr RadixPass kRadixPasses[] = {{20, 11, 0u}, {10, 10, 0x7ff00000u}, {0, 10, 0x7ffffc00u}};
constexpr int kMaxBins = 2048;
constexpr int kPickThreads = kMaxBins / 2;
constexpr int kTileItems = 16;
constexpr size_t kTile = static_cast<size_t>(kThreads) * kTileItems;

struct SelectState {
  uint32_t prefix;  // the bits of T decided so far
  uint32_t kLeft;   // how many of the elements at or below the prefix the selection still takes
};

__global__ void selectInitKernel(SelectState* state, uint32_t k) {
  state->prefix = 0;
  state->kLeft = k;
}

__global__ void digitHistogramKernel(const float* x, size_t n, RadixPass pass, const SelectState* state,
                                     uint32_t* hist) {
  __shared__ uint32_t local[kMaxBins];
  const uint32_t bins = 1u << pass.bits;
  for (uint32_t b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const uint32_t prefix = state->prefix;
  const size_t stride = gridDim.x * static_cast<size_t>(blockDim.x);
  for (size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; j < n; j += stride) {
    const uint32_t key = magnitudeBits(x[j]);
    if ((key & pass.decided) == prefix) atomicAdd(&local[(key >> pass.shift) & (bins - 1)], 1u);
  }
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < bins; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&hist[b], local[b]);
}

// One block: counts from the highest digit down; the digit where the running count reaches
// kLeft is T's. Exactly one thread finds it (the counts under the prefix add up to >= kLeft).
__global__ void pickDigitKernel(const uint32_t* hist, RadixPass pass, SelectState* state) {
  using Scan = cub::BlockScan<uint32_t, kPickThreads>;
  __shared__ typename Scan::TempStorage temp;
  const int bins = 1 << pass.bits;
  const uint32_t kLeft = state->kLeft;
  const int top = bins - 1 - 2 * static_cast<int>(threadIdx.x);  // this thread's digits: top, top - 1
  const uint32_t a0 = top >= 0 ? hist[top] : 0u;
  const uint32_t a1 = top >= 1 ? hist[top - 1] : 0u;
  uint32_t above = 0;
  Scan(temp).ExclusiveSum(a0 + a1, above);
  int digit = -1;
  if (above < kLeft && above + a0 >= kLeft) {
    digit = top;
  } else if (above + a0 < kLeft && above + a0 + a1 >= kLeft) {
    digit = top - 1;
    above += a0;
  }
  if (digit >= 0) {
    state->prefix |= static_cast<uint32_t>(digit) << pass.shift;
    state->kLeft = kLeft - above;
  }
}

// Per tile: (elements above T) << 32 | (elements equal to T). Each is at most kTile, and their
// sums over all tiles at most n < 2^32, so the scan of the packed pairs never carries.
__global__ void tileCountKernel(const float* x, size_t n, const SelectState* state, unsigned long long* tileCounts) {
  const uint32_t t = state->prefix;
  const size_t base = blockIdx.x * kTile;
  uint32_t above = 0, equal = 0;
  for (int i = 0; i < kTileItems; ++i) {
    const size_t j = base + static_cast<size_t>(i) * kThreads + threadIdx.x;
    if (j < n) {
      const uint32_t key = magnitudeBits(x[j]);
      above += key > t;
      equal += key == t;
    }
  }
  using Reduce = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const unsigned long long sum = Reduce(temp).Sum(static_cast<unsigned long long>(above) << 32 | equal);
  if (threadIdx.x == 0) tileCounts[blockIdx.x] = sum;
}

// A block's row of kThreads flags: how many flags before this thread's are set (warp ballot,
// then the lower warps' counts in `warpCounts`, one slot per warp) and how many in the row.
struct RowCount {
  uint32_t before, row;
};
__device__ RowCount countRow(bool flag, uint32_t* warpCounts) {
  constexpr unsigned kWarps = kThreads / 32;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  const unsigned mask = __ballot_sync(0xffffffffu, flag);
  if (lane == 0) warpCounts[warp] = __popc(mask);
  __syncthreads();
  RowCount c{static_cast<uint32_t>(__popc(mask & ((1u << lane) - 1u))), 0};
  for (unsigned w = 0; w < kWarps; ++w) {
    if (w < warp) c.before += warpCounts[w];
    c.row += warpCounts[w];
  }
  return c;
}

// Per tile, row by row: each element's rank among the equal ones decides whether it is
// selected, and its place among the selected ones where its index goes. The two counts use
// their own shared slots, so a row's second count never overwrites what the first still reads.
__global__ void emitSelectedKernel(const float* x, size_t n, const SelectState* state,
                                   const unsigned long long* tileOffsets, uint32_t* indices) {
  __shared__ uint32_t warpEqual[kThreads / 32], warpSelected[kThreads / 32];
  const uint32_t t = state->prefix, kLeft = state->kLeft;
  const unsigned long long offset = tileOffsets[blockIdx.x];
  uint32_t equalSeen = static_cast<uint32_t>(offset);  // equal to T, in earlier tiles and rows
  uint32_t selectedSeen = static_cast<uint32_t>(offset >> 32) + (equalSeen < kLeft ? equalSeen : kLeft);
  const size_t base = blockIdx.x * kTile;
  for (int i = 0; i < kTileItems; ++i) {
    const size_t j = base + static_cast<size_t>(i) * kThreads + threadIdx.x;
    const uint32_t key = j < n ? magnitudeBits(x[j]) : 0u;
    const bool above = j < n && key > t, equal = j < n && key == t;
    const RowCount eq = countRow(equal, warpEqual);
    const bool selected = above || (equal && equalSeen + eq.before < kLeft);
    const RowCount sel = countRow(selected, warpSelected);
    if (selected) indices[selectedSeen + sel.before] = static_cast<uint32_t>(j);
    equalSeen += eq.row;
    selectedSeen += sel.row;
  }
}

__global__ void iotaKernel(uint32_t* out, size_t n) {
  size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (j < n) out[j] = static_cast<uint32_t>(j);
}

struct TopkPieces {
  uint32_t* hist;  // one kMaxBins histogram per radix pass
  SelectState* state;
  unsigned long long *tileCounts, *tileOffsets;
  void* temp;
  size_t tempBytes;
};

size_t topkTiles(size_t n) { return (n + kTile - 1) / kTile; }

size_t topkCarve(size_t n, void* scratch, TopkPieces* p) {
  Carve c{static_cast<char*>(scratch)};
  const size_t tiles = topkTiles(n);
  p->hist = c.take<uint32_t>(kMaxBins * std::size(kRadixPasses));
  p->state = c.take<SelectState>(1);
  p->tileCounts = c.take<unsigned long long>(tiles);
  p->tileOffsets = c.take<unsigned long long>(tiles);
  p->tempBytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, p->tempBytes, p->tileCounts, p->tileOffsets, tiles);
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
  if (n > UINT32_MAX) return static_cast<int>(cudaErrorInvalidValue);  // the indices are 32-bit
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

size_t topkScratchBytes(size_t n, size_t) {
  TopkPieces p{};
  return topkCarve(n, nullptr, &p);
}

int topkSelect(const float* x, size_t n, size_t k, uint32_t* indices, void* scratch, size_t scratchBytes,
               void* stream) {
  if (n > UINT32_MAX) return static_cast<int>(cudaErrorInvalidValue);  // the indices are 32-bit
  if (k == 0 || n == 0) return 0;
  cudaStream_t s = asStream(stream);
  if (k >= n) {
    iotaKernel<<<blocksFor(n), kThreads, 0, s>>>(indices, n);
    return launched();
  }
  TopkPieces p{};
  if (topkCarve(n, nullptr, &p) > scratchBytes) return static_cast<int>(cudaErrorInvalidValue);
  topkCarve(n, scratch, &p);
  int device = 0, sms = 0;
  if (int e = static_cast<int>(cudaGetDevice(&device))) return e;
  if (int e = static_cast<int>(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device))) return e;
  // Enough blocks to fill the device; each loops over its share of x.
  const unsigned histBlocks = static_cast<unsigned>(std::min<size_t>(blocksFor(n), static_cast<size_t>(sms) * 8));
  if (int e = static_cast<int>(cudaMemsetAsync(p.hist, 0, kMaxBins * std::size(kRadixPasses) * sizeof(uint32_t), s)))
    return e;
  selectInitKernel<<<1, 1, 0, s>>>(p.state, static_cast<uint32_t>(k));
  for (size_t i = 0; i < std::size(kRadixPasses); ++i) {
    digitHistogramKernel<<<histBlocks, kThreads, 0, s>>>(x, n, kRadixPasses[i], p.state, p.hist + i * kMaxBins);
    pickDigitKernel<<<1, kPickThreads, 0, s>>>(p.hist + i * kMaxBins, kRadixPasses[i], p.state);
  }
  const size_t tiles = topkTiles(n);
  tileCountKernel<<<static_cast<unsigned>(tiles), kThreads, 0, s>>>(x, n, p.state, p.tileCounts);
  if (int e = launched()) return e;
  size_t bytes = p.tempBytes;
  if (int e = static_cast<int>(cub::DeviceScan::ExclusiveSum(p.temp, bytes, p.tileCounts, p.tileOffsets, tiles, s)))
    return e;
  emitSelectedKernel<<<static_cast<unsigned>(tiles), kThreads, 0, s>>>(x, n, p.state, p.tileOffsets, indices);
  return launched();
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
