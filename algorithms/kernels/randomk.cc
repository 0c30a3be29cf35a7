#include "algorithms/kernels/randomk.h"

#include <cstring>

#include "algorithms/kernels/philox.h"

namespace tsr::kernels {

size_t randomkBitmapWords(size_t n) { return (n + 63) / 64; }

size_t randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint64_t* bitmap,
                     uint32_t* indices) {
  if (k > n) k = n;
  const size_t words = randomkBitmapWords(n);
  std::memset(bitmap, 0, words * sizeof(uint64_t));
  const RngStream stream{seed, 0, step};
  for (size_t j = n - k; j < n; ++j) {
    uint64_t r = philoxWord64(philoxDraw(stream, RngPurpose::kRandomK, j), 0);
    uint64_t t = uniformBelow(r, j + 1);
    uint64_t bit = 1ull << (t % 64);
    if (bitmap[t / 64] & bit) {
      bitmap[j / 64] |= 1ull << (j % 64);
    } else {
      bitmap[t / 64] |= bit;
    }
  }
  size_t out = 0;
  for (size_t w = 0; w < words; ++w) {
    uint64_t word = bitmap[w];
    while (word) {
      indices[out++] = static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(word)));
      word &= word - 1;
    }
  }
  return out;
}

}  // namespace tsr::kernels
