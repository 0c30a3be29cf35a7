#include "algorithms/kernels/randomk.h"

#include <algorithm>

#include "algorithms/kernels/randomk_ops.h"

namespace tsr::kernels {

size_t randomkBitmapWords(size_t n) { return randomkWords(n); }

size_t randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint64_t* bitmap, uint32_t* indices) {
  if (k > n) k = n;
  const size_t words = randomkBitmapWords(n);
  std::fill_n(bitmap, words, uint64_t{0});  // not memset: an empty tensor's bitmap may be null
  const RngStream stream = randomkStream(seed, step);
  for (size_t j = n - k; j < n; ++j) randomkMark(bitmap, j, randomkDraw(stream, j));
  size_t out = 0;
  for (size_t w = 0; w < words; ++w) out += emitBitmapWord(bitmap[w], w, indices + out);
  return out;
}

}  // namespace tsr::kernels
