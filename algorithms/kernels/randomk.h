// Random-k selection: a uniformly random k-subset of [0, n), identical on every rank for the
// same (seed, step), so ranks can sum the selected values without exchanging indices.
//
// Method: Floyd's algorithm (for j = n-k .. n-1: draw t uniform in [0, j]; take t, or j if t was
// already taken) over a bitmap, then a scan of the bitmap emits the indices in increasing order:
// O(k) draws + O(n/64) words, no allocation. Draw j uses Philox (purpose kRandomK, rank 0,
// counter j) and Lemire's multiply-shift, whose bias is below j / 2^64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tsr::kernels {

// Words of bitmap scratch randomkSelect needs: ceil(n / 64).
size_t randomkBitmapWords(size_t n);

// Writes min(k, n) distinct indices (increasing) and returns that count. n < 2^32.
size_t randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint64_t* bitmap, uint32_t* indices);

}  // namespace tsr::kernels
