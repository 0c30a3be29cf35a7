// Sign packing by warps, shared by the pack kernel (sign_kernels.cu) and Marsit's fused
// g + c + pack (step_kernels.cu). One warp per 32 words (2048 elements): each load reads 32
// consecutive floats (coalesced); __ballot_sync turns the warp's 32 comparisons into half a
// word, the same bits packSignWord (sign_ops.h) sets; lane k keeps word k, so the warp stores
// its 32 words in one coalesced write. A thread per word reading its own 64 floats ran at 0.29x
// a device copy on an H100.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/kernels/sign_ops.h"

namespace tsr::kernels::cuda {

inline constexpr int kWordsPerWarp = 32;

// Threads to launch for `count` elements: a warp per kWordsPerWarp words.
inline size_t packThreadsFor(size_t count) {
  return (wordsForElements(count) + kWordsPerWarp - 1) / kWordsPerWarp * 32;
}

// load(j) gives element j (j < count); it may also store it elsewhere (the fused g + c). The
// first non-finite element's index goes into *firstBad (atomicMin).
template <typename Load>
__device__ void packWarpWords(Load load, size_t count, uint64_t* words, const RngStream& rng, uint64_t firstWord,
                              unsigned long long* firstBad) {
  const size_t nwords = wordsForElements(count);
  const unsigned lane = threadIdx.x & 31u;
  const size_t w0 = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32 * kWordsPerWarp;
  if (w0 >= nwords) return;  // the whole warp: w0 is the same for its lanes
  uint64_t mine = 0, mineZero = 0;
  unsigned long long bad = ~0ull;
#pragma unroll 4
  for (int k = 0; k < kWordsPerWarp; ++k) {
    const size_t base = (w0 + k) * 64;
    const size_t j0 = base + lane, j1 = base + 32 + lane;
    const bool in0 = j0 < count, in1 = j1 < count;
    const float v0 = in0 ? load(j0) : 0.0f, v1 = in1 ? load(j1) : 0.0f;
    const auto bits = [](bool lo, bool hi) {
      return __ballot_sync(0xffffffffu, lo) | static_cast<uint64_t>(__ballot_sync(0xffffffffu, hi)) << 32;
    };
    const uint64_t pos = bits(in0 && v0 > 0.0f, in1 && v1 > 0.0f);
    const uint64_t zero = bits(in0 && v0 == 0.0f, in1 && v1 == 0.0f);
    const uint64_t nonFinite = bits(in0 && !isFiniteFloat(v0), in1 && !isFiniteFloat(v1));
    if (nonFinite != 0 && bad == ~0ull) bad = base + static_cast<unsigned>(__ffsll(nonFinite) - 1);
    if (lane == static_cast<unsigned>(k)) {
      mine = pos;
      mineZero = zero;
    }
  }
  const size_t w = w0 + lane;
  if (w < nwords) {
    if (mineZero != 0) mine |= mineZero & zeroSignWord(rng, firstWord + w);
    words[w] = mine;
  }
  if (lane == 0 && bad != ~0ull) atomicMin(firstBad, bad);
}

}  // namespace tsr::kernels::cuda
