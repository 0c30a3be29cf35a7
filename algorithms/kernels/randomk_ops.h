// Per-step random-k code shared by the CPU kernel (randomk.cc) and the CUDA kernel
// (cuda/select_kernels.cu), so both draw and mark exactly the same indices. TSR_HD, no
// allocation. See randomk.h for the method (Floyd's algorithm over a bitmap).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/kernels/philox.h"

namespace tsr::kernels {

// Bitmap words for n candidates.
TSR_HD size_t randomkWords(size_t n) { return (n + 63) / 64; }

// Random-k draws ignore the rank: every rank must pick the same indices.
TSR_HD RngStream randomkStream(uint64_t seed, uint32_t step) { return RngStream{seed, 0, step}; }

// Floyd's draw for step j: t uniform in [0, j] (Philox purpose kRandomK, counter j).
TSR_HD uint64_t randomkDraw(const RngStream& stream, uint64_t j) {
  return uniformBelow(philoxWord64(philoxDraw(stream, RngPurpose::kRandomK, j), 0), j + 1);
}

// Floyd's step j with draw t: take t, or j when t is already taken (j never is before step j).
TSR_HD void randomkMark(uint64_t* bitmap, uint64_t j, uint64_t t) {
  const uint64_t bit = 1ull << (t % 64);
  if (bitmap[t / 64] & bit) {
    bitmap[j / 64] |= 1ull << (j % 64);
  } else {
    bitmap[t / 64] |= bit;
  }
}

// Index of the lowest set bit of a non-zero word.
TSR_HD int lowestSetBit(uint64_t word) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(word)) - 1;
#else
  return __builtin_ctzll(word);
#endif
}

// Writes the indices of the set bits of bitmap word `w` (increasing) to out; returns how many.
TSR_HD size_t emitBitmapWord(uint64_t word, size_t w, uint32_t* out) {
  size_t n = 0;
  while (word) {
    out[n++] = static_cast<uint32_t>(w * 64 + static_cast<size_t>(lowestSetBit(word)));
    word &= word - 1;
  }
  return n;
}

}  // namespace tsr::kernels
