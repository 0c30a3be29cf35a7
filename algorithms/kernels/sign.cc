#include "algorithms/kernels/sign.h"

#include <algorithm>
#include <cstring>

#include "algorithms/kernels/detail/avx2.h"
#include "algorithms/kernels/isa.h"
#include "algorithms/kernels/sign_ops.h"

namespace tsr::kernels {

size_t signPack(const float* x, size_t count, uint64_t* words, const RngStream& rng, uint64_t firstWord) {
  if (activeIsa() == Isa::kAvx2) return avx2::signPack(x, count, words, rng, firstWord);
  size_t nwords = wordsForElements(count);
  for (size_t w = 0; w < nwords; ++w) {
    size_t base = w * 64;
    int n = static_cast<int>(count - base < 64 ? count - base : 64);
    words[w] = packSignWord(x + base, n, rng, firstWord + w);
  }
  return firstNonFinite(x, count);
}

void signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a, uint32_t b,
               const RngStream& rng, uint64_t firstWord) {
  if (b == 0 || a == 0) {
    const uint64_t* src = b == 0 ? v : s;
    if (src != out) std::memmove(out, src, words * sizeof(uint64_t));
    return;
  }
  const uint64_t q64 = mergeThreshold(a, b);
  for (size_t w = 0; w < words; ++w) out[w] = mergeSignWord(v[w], s[w], q64, rng, firstWord + w);
}

void signDecompress(const uint64_t* words, size_t count, float eta, float* out) {
  if (activeIsa() == Isa::kAvx2) {
    avx2::signDecompress(words, count, eta, out);
    return;
  }
  for (size_t j = 0; j < count; ++j) out[j] = signValue(words[j / 64], static_cast<int>(j % 64), eta);
}

void signCompensate(const float* g, const uint64_t* words, size_t count, float eta, float* c) {
  if (activeIsa() == Isa::kAvx2) {
    avx2::signCompensate(g, words, count, eta, c);
    return;
  }
  for (size_t j = 0; j < count; ++j) c[j] = g[j] - signValue(words[j / 64], static_cast<int>(j % 64), eta);
}

void signUnpack(const uint64_t* words, size_t count, uint8_t* bits) {
  for (size_t j = 0; j < count; ++j) bits[j] = static_cast<uint8_t>((words[j / 64] >> (j % 64)) & 1u);
}

size_t firstNonFinite(const float* x, size_t count) {
  if (activeIsa() == Isa::kAvx2) return avx2::firstNonFinite(x, count);
  constexpr size_t kBlock = 256;
  for (size_t base = 0; base < count; base += kBlock) {
    size_t end = base + kBlock < count ? base + kBlock : count;
    uint32_t bad = 0;  // branch-free scan of a block, then locate
    for (size_t j = base; j < end; ++j) bad |= !isFiniteFloat(x[j]);
    if (bad)
      for (size_t j = base; j < end; ++j)
        if (!isFiniteFloat(x[j])) return j;
  }
  return count;
}

double sumAbs(const float* x, size_t count) {
  // Blocks of float partial sums (vectorizable) accumulated in double (sign_ops.h).
  double total = 0.0;
  for (size_t base = 0; base < count; base += kSumAbsBlock)
    total += sumAbsBlock(x + base, count - base < kSumAbsBlock ? count - base : kSumAbsBlock);
  return total;
}

// The sum of |work| uses sumAbs's order: per 1024-element block, eight float lanes (lane l
// takes the elements j = l mod 8 in order), then the lanes and blocks in double.
size_t signPrepare(const float* g, const float* c, size_t count, float* work, uint64_t* words, const RngStream& rng,
                   uint64_t firstWord, double* sumAbsOut) {
  if (activeIsa() == Isa::kAvx2) return avx2::signPrepare(g, c, count, work, words, rng, firstWord, sumAbsOut);
  for (size_t j = 0; j < count; ++j) work[j] = g[j] + c[j];
  *sumAbsOut = sumAbs(work, count);
  return signPack(work, count, words, rng, firstWord);
}

namespace {

// signPrepare on one piece starting at a 1024-element boundary, each block's sum into blockSums.
size_t prepareBlocks(const float* g, const float* c, size_t count, float* work, uint64_t* words, const RngStream& rng,
                     uint64_t firstWord, double* blockSums) {
  double total = 0;
  if (activeIsa() == Isa::kAvx2) return avx2::signPrepare(g, c, count, work, words, rng, firstWord, &total, blockSums);
  for (size_t j = 0; j < count; ++j) work[j] = g[j] + c[j];
  constexpr size_t kBlock = 1024;
  for (size_t b = 0; b * kBlock < count; ++b)
    blockSums[b] = sumAbs(work + b * kBlock, count - b * kBlock < kBlock ? count - b * kBlock : kBlock);
  return signPack(work, count, words, rng, firstWord);
}

}  // namespace

size_t signPrepareRange(const float* g, const float* c, size_t begin, size_t end, float* work, uint64_t* words,
                        const RngStream& rng, double* blockSums) {
  constexpr size_t kBlock = 1024;
  size_t bad = end;
  // The head, up to the next block boundary, belongs to a block that starts in an earlier
  // piece: its sum is not this piece's to give.
  size_t head = std::min(end, (begin + kBlock - 1) / kBlock * kBlock);
  if (begin < head) {
    double ignored = 0;
    size_t b =
        signPrepare(g + begin, c + begin, head - begin, work + begin, words + begin / 64, rng, begin / 64, &ignored);
    if (b < head - begin) bad = begin + b;
  }
  if (head < end) {
    size_t b = prepareBlocks(g + head, c + head, end - head, work + head, words + head / 64, rng, head / 64,
                             blockSums + head / kBlock);
    if (bad == end && b < end - head) bad = head + b;
  }
  return bad;
}

void signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out, float* comp) {
  if (activeIsa() == Isa::kAvx2) {
    avx2::signFinish(work, words, count, eta, out, comp);
    return;
  }
  for (size_t j = 0; j < count; ++j) {
    out[j] = signValue(words[j / 64], static_cast<int>(j % 64), eta);
    comp[j] = work[j] - out[j];
  }
}

void momentumHandOff(float* g, float* prev, const float* comp, float* carry, size_t count, float mu) {
  for (size_t j = 0; j < count; ++j) {
    const float m = g[j];
    g[j] = m - mu * prev[j];
    carry[j] = comp[j] + mu * m;
    prev[j] = m;
  }
}

uint64_t popcountWords(const uint64_t* words, size_t n) {
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) total += static_cast<uint64_t>(__builtin_popcountll(words[i]));
  return total;
}

}  // namespace tsr::kernels
