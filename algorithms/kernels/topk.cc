#include "algorithms/kernels/topk.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "algorithms/kernels/detail/avx2.h"
#include "algorithms/kernels/isa.h"
#include "algorithms/kernels/topk_ops.h"

namespace tsr::kernels {
namespace {

constexpr size_t kMaxSample = 32768;
constexpr uint32_t kMaxMagnitude = 0x7fffffffu;

size_t sampleSize(size_t n) { return std::min(n, kMaxSample); }

size_t bandPortable(const float* x, size_t n, uint32_t lo, uint32_t hi, uint32_t* mid, size_t capacity, size_t* above) {
  size_t cntAbove = 0, cntMid = 0;
  for (size_t j = 0; j < n; ++j) {
    uint32_t m = magnitudeBits(x[j]);
    cntAbove += m > hi;
    if (m >= lo && m <= hi) {
      if (cntMid < capacity) mid[cntMid] = m;
      ++cntMid;
    }
  }
  *above = cntAbove;
  return cntMid;
}

size_t emitPortable(const float* x, size_t n, uint32_t t, size_t equalBudget, uint32_t* indices) {
  size_t out = 0;
  for (size_t j = 0; j < n; ++j) {
    uint32_t m = magnitudeBits(x[j]);
    if (m > t) {
      indices[out++] = static_cast<uint32_t>(j);
    } else if (m == t && equalBudget > 0) {
      --equalBudget;
      indices[out++] = static_cast<uint32_t>(j);
    }
  }
  return out;
}

size_t band(const float* x, size_t n, uint32_t lo, uint32_t hi, uint32_t* mid, size_t capacity, size_t* above) {
  if (activeIsa() == Isa::kAvx2) return avx2::topkBand(x, n, lo, hi, mid, capacity, above);
  return bandPortable(x, n, lo, hi, mid, capacity, above);
}

size_t emit(const float* x, size_t n, uint32_t t, size_t equalBudget, uint32_t* indices) {
  if (activeIsa() == Isa::kAvx2) return avx2::topkEmit(x, n, t, equalBudget, indices);
  return emitPortable(x, n, t, equalBudget, indices);
}

// Exact k-th largest magnitude by radix select over bits [30:20], [19:9], [8:0]. Returns T and
// sets *equalNeeded to how many elements equal to T belong to the top k.
uint32_t radixSelect(const float* x, size_t n, size_t k, size_t* equalNeeded) {
  static constexpr int kShift[3] = {20, 9, 0};
  static constexpr int kWidth[3] = {11, 11, 9};
  uint32_t prefix = 0, prefixMask = 0;
  size_t need = k;  // rank (1-based, from the top) among elements matching the prefix
  uint32_t hist[2048];
  for (int pass = 0; pass < 3; ++pass) {
    const uint32_t bins = 1u << kWidth[pass];
    std::fill(hist, hist + bins, 0u);
    for (size_t j = 0; j < n; ++j) {
      uint32_t m = magnitudeBits(x[j]);
      if ((m & prefixMask) == prefix) ++hist[(m >> kShift[pass]) & (bins - 1)];
    }
    size_t cum = 0;
    uint32_t b = bins;
    while (b > 0) {
      --b;
      if (cum + hist[b] >= need) break;
      cum += hist[b];
    }
    need -= cum;
    prefix |= b << kShift[pass];
    prefixMask |= (bins - 1) << kShift[pass];
  }
  *equalNeeded = need;
  return prefix;
}

}  // namespace

size_t topkScratchCount(size_t n, size_t k) {
  size_t m = sampleSize(n);
  if (n == 0) return 0;
  double r = static_cast<double>(std::min(k, n)) * static_cast<double>(m) / static_cast<double>(n);
  double est = static_cast<double>(n) * (16.0 * std::sqrt(r) + 16.0) / static_cast<double>(m) + 1024.0;
  size_t band = static_cast<size_t>(std::min(est, static_cast<double>(n)));
  return std::max(m, band);
}

size_t topkSelect(const float* x, size_t n, size_t k, uint32_t* indices, uint32_t* scratch, size_t scratchCount) {
  if (k == 0 || n == 0) return 0;
  if (k >= n) {
    for (size_t j = 0; j < n; ++j) indices[j] = static_cast<uint32_t>(j);
    return n;
  }
  const size_t m = sampleSize(n);
  uint32_t t = 0;
  size_t equalBudget = 0;
  bool found = false;
  if (scratchCount >= m) {
    // 1. Strided sample and the band that brackets the k-th largest with high probability.
    for (size_t i = 0; i < m; ++i) scratch[i] = magnitudeBits(x[i * n / m]);
    const double r = static_cast<double>(k) * static_cast<double>(m) / static_cast<double>(n);
    const double spread = 4.0 * std::sqrt(r) + 2.0;
    const double hiRank = std::floor(r - spread), loRank = std::ceil(r + spread);
    uint32_t hi = kMaxMagnitude, lo = 0;
    if (hiRank >= 0) {
      auto pos = scratch + static_cast<size_t>(hiRank);
      std::nth_element(scratch, pos, scratch + m, std::greater<uint32_t>());
      hi = *pos;
    }
    if (loRank < static_cast<double>(m)) {
      auto pos = scratch + static_cast<size_t>(loRank);
      std::nth_element(scratch, pos, scratch + m, std::greater<uint32_t>());
      lo = *pos;
    }
    // 2. One pass: count above the band, collect magnitudes inside it.
    size_t above = 0;
    size_t inBand = band(x, n, lo, hi, scratch, scratchCount, &above);
    if (above < k && above + inBand >= k && inBand <= scratchCount) {
      size_t idx = k - above - 1;
      std::nth_element(scratch, scratch + idx, scratch + inBand, std::greater<uint32_t>());
      t = scratch[idx];
      size_t greater = above;
      for (size_t i = 0; i < inBand; ++i) greater += scratch[i] > t;
      equalBudget = k - greater;
      found = true;
    }
  }
  if (!found) t = radixSelect(x, n, k, &equalBudget);
  // 3. Emit in index order.
  return emit(x, n, t, equalBudget, indices);
}

void gatherValues(const float* x, const uint32_t* indices, size_t k, float* out) {
  for (size_t i = 0; i < k; ++i) out[i] = x[indices[i]];
}

void scatterValues(const uint32_t* indices, const float* values, size_t k, float* out) {
  for (size_t i = 0; i < k; ++i) out[indices[i]] = values[i];
}

}  // namespace tsr::kernels
