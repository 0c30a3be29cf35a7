// AVX2 versions of the hot kernels. This file alone is compiled with -mavx2 (see
// CMakeLists.txt) and is only entered after isa.cc saw AVX2 on the CPU. Each function must give
// exactly the portable result: the tests run both paths on the same inputs.
#include <immintrin.h>

#include "algorithms/kernels/detail/avx2.h"
#include "algorithms/kernels/detail/reduce_loops.h"
#include "algorithms/kernels/sign_ops.h"
#include "algorithms/kernels/topk_ops.h"
#include "base/half.h"

namespace tsr::kernels::avx2 {

void reduceInto(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  reduceLoop(dst, src, count, dtype, op);  // the compiler vectorizes it with 256-bit code here
}

namespace {

inline uint32_t nonFiniteMask8(__m256 v) {
  const __m256i expMask = _mm256_set1_epi32(0x7f800000);
  __m256i e = _mm256_and_si256(_mm256_castps_si256(v), expMask);
  return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(e, expMask))));
}

inline size_t scalarFirstBad(const float* x, size_t begin, size_t end) {
  for (size_t j = begin; j < end; ++j)
    if (!isFiniteFloat(x[j])) return j;
  return end;
}

}  // namespace

size_t signPack(const float* x, size_t count, uint64_t* words, const RngStream& rng, uint64_t firstWord) {
  const size_t fullWords = count / 64;
  const __m256 zero = _mm256_setzero_ps();
  size_t firstBad = count;
  for (size_t w = 0; w < fullWords; ++w) {
    const float* p = x + w * 64;
    // Reads are the whole cost: ask for the word after next early (hardware prefetch alone
    // leaves this loop slower than a memcpy of the same input).
    _mm_prefetch(reinterpret_cast<const char*>(p + 256), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p + 256 + 16), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p + 256 + 32), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p + 256 + 48), _MM_HINT_T0);
    uint64_t pos = 0, zer = 0;
    uint32_t bad = 0;
    for (int g = 0; g < 8; ++g) {
      __m256 v = _mm256_loadu_ps(p + 8 * g);
      // Positive = sign bit clear and not zero; NaN words are redone by the scalar code below.
      uint64_t neg = static_cast<uint32_t>(_mm256_movemask_ps(v));
      uint64_t eq = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_EQ_OQ)));
      pos |= (~(neg | eq) & 0xffu) << (8 * g);
      zer |= eq << (8 * g);
      bad |= nonFiniteMask8(v);
    }
    if (zer != 0) pos |= zer & zeroSignWord(rng, firstWord + w);
    if (bad != 0) {
      pos = packSignWord(p, 64, rng, firstWord + w);
      if (firstBad == count) firstBad = scalarFirstBad(x, w * 64, w * 64 + 64);
    }
    words[w] = pos;
  }
  if (fullWords * 64 < count) {
    size_t base = fullWords * 64;
    words[fullWords] = packSignWord(x + base, static_cast<int>(count - base), rng, firstWord + fullWords);
    if (firstBad == count) firstBad = scalarFirstBad(x, base, count);
  }
  return firstBad;
}

namespace {

// Lane k of the result is eta when bit k of `byte` is set, else -eta.
inline __m256 expandByte(uint32_t byte, __m256 eta, __m256 negEta) {
  const __m256i bitsel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  __m256i b = _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(byte)), bitsel);
  __m256 m = _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, bitsel));
  return _mm256_blendv_ps(negEta, eta, m);
}

}  // namespace

void signDecompress(const uint64_t* words, size_t count, float eta, float* out) {
  const __m256 pe = _mm256_set1_ps(eta), ne = _mm256_set1_ps(-eta);
  const size_t blocks = count / 8;
  for (size_t blk = 0; blk < blocks; ++blk) {
    uint32_t byte = static_cast<uint32_t>(words[blk / 8] >> (8 * (blk % 8))) & 0xffu;
    _mm256_storeu_ps(out + 8 * blk, expandByte(byte, pe, ne));
  }
  for (size_t j = blocks * 8; j < count; ++j) out[j] = signValue(words[j / 64], static_cast<int>(j % 64), eta);
}

void signCompensate(const float* g, const uint64_t* words, size_t count, float eta, float* c) {
  const __m256 pe = _mm256_set1_ps(eta), ne = _mm256_set1_ps(-eta);
  const size_t blocks = count / 8;
  for (size_t blk = 0; blk < blocks; ++blk) {
    uint32_t byte = static_cast<uint32_t>(words[blk / 8] >> (8 * (blk % 8))) & 0xffu;
    __m256 v = _mm256_loadu_ps(g + 8 * blk);
    _mm256_storeu_ps(c + 8 * blk, _mm256_sub_ps(v, expandByte(byte, pe, ne)));
  }
  for (size_t j = blocks * 8; j < count; ++j) c[j] = g[j] - signValue(words[j / 64], static_cast<int>(j % 64), eta);
}

size_t signPrepare(const float* g, const float* c, size_t count, float* work, uint64_t* words, const RngStream& rng,
                   uint64_t firstWord, double* sumAbsOut, double* blockSums) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const size_t fullWords = count / 64;
  size_t firstBad = count;
  double total = 0.0;
  __m256 lanes = zero;
  for (size_t w = 0; w < fullWords; ++w) {
    const size_t base = w * 64;
    _mm_prefetch(reinterpret_cast<const char*>(g + base + 256), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + base + 256), _MM_HINT_T0);
    uint64_t pos = 0, zer = 0;
    uint32_t bad = 0;
    for (int q = 0; q < 8; ++q) {
      __m256 v = _mm256_add_ps(_mm256_loadu_ps(g + base + 8 * q), _mm256_loadu_ps(c + base + 8 * q));
      _mm256_storeu_ps(work + base + 8 * q, v);
      lanes = _mm256_add_ps(lanes, _mm256_and_ps(v, absMask));
      uint64_t neg = static_cast<uint32_t>(_mm256_movemask_ps(v));
      uint64_t eq = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_EQ_OQ)));
      pos |= (~(neg | eq) & 0xffu) << (8 * q);
      zer |= eq << (8 * q);
      bad |= nonFiniteMask8(v);
    }
    if (zer != 0) pos |= zer & zeroSignWord(rng, firstWord + w);
    if (bad != 0) {
      pos = packSignWord(work + base, 64, rng, firstWord + w);
      if (firstBad == count) firstBad = scalarFirstBad(work, base, base + 64);
    }
    words[w] = pos;
    if ((w + 1) % 16 == 0 || w + 1 == fullWords) {  // end of a 1024-element block (or of the words)
      alignas(32) float l[8];
      _mm256_store_ps(l, lanes);
      if ((w + 1) % 16 == 0) {
        double part = 0.0;
        for (int k = 0; k < 8; ++k) part += l[k];
        if (sumOverflowed(part)) part = sumAbsBlockWide(work + (w / 16) * 1024, 1024);
        total += part;
        if (blockSums) blockSums[w / 16] = part;
        lanes = zero;
      }
    }
  }
  // The tail: finish the last (partial) 1024-block exactly as sumAbs does, then pack.
  size_t blockStart = (fullWords / 16) * 1024;
  if (blockStart < count) {
    for (size_t j = fullWords * 64; j < count; ++j) work[j] = g[j] + c[j];
    alignas(32) float l[8];
    _mm256_store_ps(l, lanes);
    size_t j = fullWords * 64;
    for (; j + 8 <= count; j += 8)
      for (int k = 0; k < 8; ++k) l[k] += work[j + k] < 0 ? -work[j + k] : work[j + k];
    double part = 0.0;
    for (int k = 0; k < 8; ++k) part += l[k];
    for (; j < count; ++j) part += work[j] < 0 ? -work[j] : work[j];
    if (sumOverflowed(part)) part = sumAbsBlockWide(work + blockStart, count - blockStart);
    total += part;
    if (blockSums) blockSums[fullWords / 16] = part;
  }
  if (fullWords * 64 < count) {
    size_t base = fullWords * 64;
    words[fullWords] = packSignWord(work + base, static_cast<int>(count - base), rng, firstWord + fullWords);
    if (firstBad == count) firstBad = scalarFirstBad(work, base, count);
  }
  *sumAbsOut = total;
  return firstBad;
}

void signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out, float* comp) {
  const __m256 pe = _mm256_set1_ps(eta), ne = _mm256_set1_ps(-eta);
  const size_t blocks = count / 8;
  for (size_t blk = 0; blk < blocks; ++blk) {
    uint32_t byte = static_cast<uint32_t>(words[blk / 8] >> (8 * (blk % 8))) & 0xffu;
    __m256 v = expandByte(byte, pe, ne);
    _mm256_storeu_ps(out + 8 * blk, v);
    _mm256_storeu_ps(comp + 8 * blk, _mm256_sub_ps(_mm256_loadu_ps(work + 8 * blk), v));
  }
  for (size_t j = blocks * 8; j < count; ++j) {
    out[j] = signValue(words[j / 64], static_cast<int>(j % 64), eta);
    comp[j] = work[j] - out[j];
  }
}

size_t firstNonFinite(const float* x, size_t count) {
  const size_t blocks = count / 32;
  for (size_t blk = 0; blk < blocks; ++blk) {
    const float* p = x + blk * 32;
    uint32_t bad = nonFiniteMask8(_mm256_loadu_ps(p)) | nonFiniteMask8(_mm256_loadu_ps(p + 8)) |
                   nonFiniteMask8(_mm256_loadu_ps(p + 16)) | nonFiniteMask8(_mm256_loadu_ps(p + 24));
    if (bad) return scalarFirstBad(x, blk * 32, blk * 32 + 32);
  }
  return scalarFirstBad(x, blocks * 32, count);
}

namespace {

inline __m256i magnitudes8(const float* p) {
  return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), _mm256_set1_epi32(0x7fffffff));
}

}  // namespace

size_t topkBand(const float* x, size_t n, uint32_t lo, uint32_t hi, uint32_t* mid, size_t capacity, size_t* above) {
  const __m256i vlo = _mm256_set1_epi32(static_cast<int>(lo));
  const __m256i vhi = _mm256_set1_epi32(static_cast<int>(hi));
  size_t cntAbove = 0, cntMid = 0;
  const size_t blocks = n / 8;
  for (size_t blk = 0; blk < blocks; ++blk) {
    __m256i m = magnitudes8(x + 8 * blk);
    __m256i gt = _mm256_cmpgt_epi32(m, vhi);
    __m256i out = _mm256_or_si256(gt, _mm256_cmpgt_epi32(vlo, m));
    cntAbove +=
        static_cast<size_t>(__builtin_popcount(static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(gt)))));
    uint32_t in = ~static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(out))) & 0xffu;
    while (in) {
      int l = __builtin_ctz(in);
      in &= in - 1;
      if (cntMid < capacity) mid[cntMid] = magnitudeBits(x[8 * blk + l]);
      ++cntMid;
    }
  }
  for (size_t j = blocks * 8; j < n; ++j) {
    uint32_t m = magnitudeBits(x[j]);
    if (m > hi) {
      ++cntAbove;
    } else if (m >= lo) {
      if (cntMid < capacity) mid[cntMid] = m;
      ++cntMid;
    }
  }
  *above = cntAbove;
  return cntMid;
}

size_t topkEmit(const float* x, size_t n, uint32_t t, size_t equalBudget, uint32_t* indices) {
  const __m256i vt = _mm256_set1_epi32(static_cast<int>(t));
  size_t out = 0;
  const size_t blocks = n / 8;
  for (size_t blk = 0; blk < blocks; ++blk) {
    __m256i m = magnitudes8(x + 8 * blk);
    uint32_t gt = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(m, vt))));
    uint32_t eq = equalBudget == 0
                      ? 0u
                      : static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(m, vt))));
    uint32_t any = gt | eq;
    while (any) {
      int l = __builtin_ctz(any);
      any &= any - 1;
      if ((gt >> l) & 1u) {
        indices[out++] = static_cast<uint32_t>(8 * blk + l);
      } else if (equalBudget > 0) {
        --equalBudget;
        indices[out++] = static_cast<uint32_t>(8 * blk + l);
      }
    }
  }
  for (size_t j = blocks * 8; j < n; ++j) {
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

}  // namespace tsr::kernels::avx2

namespace tsr::kernels::avx2 {

// floatToBf16 in integer AVX2: NaN -> (u >> 16) | 0x40 (quiet bit set, sign and top payload
// kept), otherwise u + 0x7fff + ((u >> 16) & 1), top half (round to nearest even; overflow
// carries into the exponent and gives Inf exactly as the scalar code does).
void castF32ToBf16(const float* in, size_t count, uint16_t* out) {
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff);
  const __m256i infBits = _mm256_set1_epi32(0x7f800000);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  auto convert8 = [&](const float* p) {
    __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absMask), infBits);
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(hi, one))), 16);
    return _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), nan);
  };
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    // Lanes hold 0..0xffff, so the unsigned-saturating pack is exact; it interleaves the
    // 128-bit halves, which the permute puts back in order.
    __m256i packed = _mm256_packus_epi32(convert8(in + i), convert8(in + i + 8));
    packed = _mm256_permute4x64_epi64(packed, 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  for (; i < count; ++i) out[i] = floatToBf16(in[i]);
}

void castBf16ToF32(const uint16_t* in, size_t count, float* out) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  for (; i < count; ++i) out[i] = bf16ToFloat(in[i]);
}

}  // namespace tsr::kernels::avx2
