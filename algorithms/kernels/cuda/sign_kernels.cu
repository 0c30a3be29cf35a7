// CUDA kernels over the shared TSR_HD per-word code (sign_ops.h) and half conversions
// (base/half.h). One thread per 64-bit word for the bit kernels but the pack (a warp per 32
// words), 4 elements a thread for the decompression and 8 for the casts (16-byte stores).
#include <cuda_runtime.h>

#include <cstdint>

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

// Four elements a thread, one 16-byte store (out 16-byte aligned): the four bits share a word.
__global__ void decompress4Kernel(const uint64_t* words, size_t count, float eta, float* out) {
  size_t j = 4 * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
  if (j >= count) return;
  uint64_t w = words[j / 64];
  int bit = static_cast<int>(j % 64);
  if (j + 4 <= count) {
    *reinterpret_cast<float4*>(out + j) = float4{signValue(w, bit, eta), signValue(w, bit + 1, eta),
                                                 signValue(w, bit + 2, eta), signValue(w, bit + 3, eta)};
  } else {
    for (; j < count; ++j, ++bit) out[j] = signValue(w, bit, eta);
  }
}

__global__ void compensateKernel(const float* g, const uint64_t* words, size_t count, float eta, float* c) {
  size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (j < count) c[j] = g[j] - signValue(words[j / 64], static_cast<int>(j % 64), eta);
}

// The casts: each thread converts 8 elements with 16-byte loads and stores on both sides (two
// float4, one uint4 of 8 halves); one element a thread, 2-byte stores, ran at about half the
// bandwidth of a device copy on Hopper. Pointers not 16-byte aligned (a tensor's shard at an
// odd offset) take the element-wise form.
struct ToF16 {
  __device__ uint16_t operator()(float f) const { return floatToF16(f); }
};
struct ToBf16 {
  __device__ uint16_t operator()(float f) const { return floatToBf16(f); }
};
struct FromF16 {
  __device__ float operator()(uint16_t h) const { return f16ToFloat(h); }
};
struct FromBf16 {
  __device__ float operator()(uint16_t h) const { return bf16ToFloat(h); }
};

constexpr size_t kCastPerThread = 8;

__device__ inline uint32_t pairOf(uint16_t lo, uint16_t hi) { return lo | (static_cast<uint32_t>(hi) << 16); }

template <typename Convert>
__global__ void narrowKernel(const float* in, size_t n, uint16_t* out, Convert convert) {
  size_t i = kCastPerThread * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
  if (i + kCastPerThread <= n) {
    float4 a = reinterpret_cast<const float4*>(in + i)[0], b = reinterpret_cast<const float4*>(in + i)[1];
    uint4 r{pairOf(convert(a.x), convert(a.y)), pairOf(convert(a.z), convert(a.w)), pairOf(convert(b.x), convert(b.y)),
            pairOf(convert(b.z), convert(b.w))};
    *reinterpret_cast<uint4*>(out + i) = r;
  } else {
    for (; i < n; ++i) out[i] = convert(in[i]);
  }
}

template <typename Convert>
__global__ void widenKernel(const uint16_t* in, size_t n, float* out, Convert convert) {
  size_t i = kCastPerThread * (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x);
  if (i + kCastPerThread <= n) {
    uint4 r = *reinterpret_cast<const uint4*>(in + i);
    auto lo = [&](uint32_t w) { return convert(static_cast<uint16_t>(w & 0xFFFFu)); };
    auto hi = [&](uint32_t w) { return convert(static_cast<uint16_t>(w >> 16)); };
    reinterpret_cast<float4*>(out + i)[0] = float4{lo(r.x), hi(r.x), lo(r.y), hi(r.y)};
    reinterpret_cast<float4*>(out + i)[1] = float4{lo(r.z), hi(r.z), lo(r.w), hi(r.w)};
  } else {
    for (; i < n; ++i) out[i] = convert(in[i]);
  }
}

template <typename In, typename Out, typename Convert>
__global__ void castEachKernel(const In* in, size_t n, Out* out, Convert convert) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = convert(in[i]);
}

bool aligned16(const void* a, const void* b) {
  return reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
}

template <typename Convert>
void narrow(const float* in, size_t count, uint16_t* out, cudaStream_t stream) {
  if (aligned16(in, out))
    narrowKernel<<<blocksFor((count + kCastPerThread - 1) / kCastPerThread), kThreads, 0, stream>>>(in, count, out,
                                                                                                    Convert{});
  else
    castEachKernel<<<blocksFor(count), kThreads, 0, stream>>>(in, count, out, Convert{});
}

template <typename Convert>
void widen(const uint16_t* in, size_t count, float* out, cudaStream_t stream) {
  if (aligned16(in, out))
    widenKernel<<<blocksFor((count + kCastPerThread - 1) / kCastPerThread), kThreads, 0, stream>>>(in, count, out,
                                                                                                   Convert{});
  else
    castEachKernel<<<blocksFor(count), kThreads, 0, stream>>>(in, count, out, Convert{});
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
  if (reinterpret_cast<uintptr_t>(out) % 16 == 0)
    decompress4Kernel<<<blocksFor((count + 3) / 4), kThreads, 0, asStream(stream)>>>(words, count, eta, out);
  else
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
  narrow<ToF16>(in, count, out, asStream(stream));
  return launched();
}
int castF16ToF32(const uint16_t* in, size_t count, float* out, void* stream) {
  if (count == 0) return 0;
  widen<FromF16>(in, count, out, asStream(stream));
  return launched();
}
int castF32ToBf16(const float* in, size_t count, uint16_t* out, void* stream) {
  if (count == 0) return 0;
  narrow<ToBf16>(in, count, out, asStream(stream));
  return launched();
}
int castBf16ToF32(const uint16_t* in, size_t count, float* out, void* stream) {
  if (count == 0) return 0;
  widen<FromBf16>(in, count, out, asStream(stream));
  return launched();
}

}  // namespace tsr::kernels::cuda
