// Exact top-k selection by magnitude (sparse compressors, SparDL's block selection).
//
// Selected = the k elements with the largest |x|; ties are broken by the lower index, so the
// result is a deterministic function of the input. Magnitude order is the order of the IEEE
// bit patterns with the sign cleared (so NaN would rank above Inf; callers reject non-finite
// input first). Indices come out in increasing order.
//
// Method: estimate a band [lo, hi] of magnitudes that brackets the k-th largest from a strided
// sample of up to 32768 elements (+-4 standard deviations of the sample rank), then one pass
// counts the elements above the band and collects the magnitudes inside it, an nth_element on
// that small set gives the exact k-th magnitude T, and a last pass emits every index with
// |x| > T plus the first (k - #{|x| > T}) indices with |x| == T. When the band misses or
// overflows the scratch (adversarial or heavily tied data), an exact 3-pass radix select on the
// magnitude bits finds T instead. Either way the result is exact.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tsr::kernels {

// Recommended scratch size (in uint32_t) for topkSelect(n, k); smaller scratch stays exact but
// may take the slower radix path.
size_t topkScratchCount(size_t n, size_t k);

// Writes min(k, n) indices to `indices` (increasing) and returns that count. n < 2^32.
size_t topkSelect(const float* x, size_t n, size_t k, uint32_t* indices, uint32_t* scratch, size_t scratchCount);

// out[i] = x[indices[i]].
void gatherValues(const float* x, const uint32_t* indices, size_t k, float* out);
// out[indices[i]] = values[i]; other elements of out are left alone.
void scatterValues(const uint32_t* indices, const float* values, size_t k, float* out);

}  // namespace tsr::kernels
