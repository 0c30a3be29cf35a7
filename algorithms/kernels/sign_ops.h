// Per-word sign-bit operations shared by the CPU kernels (sign.cc, avx2.cc) and the CUDA
// kernels (cuda/sign_kernels.cu). Everything here is TSR_HD and allocation-free.
//
// Vocabulary (Marsit, Sign Bit is Enough):
//   word   64 sign bits; element j of a segment lives in word j/64, bit j%64 (LSB first).
//   s      the local worker's sign bits, standing for b workers.
//   v      the received bits, standing for a workers.
//   merge  v' = (v AND s) OR ((v XOR s) AND t), t_j ~ Bernoulli(b/(a+b)) if s_j = 1 and
//          Bernoulli(a/(a+b)) if s_j = 0, so E[v'_j] = (a v_j + b s_j) / (a + b).
//
// Sign rule (packing). bit = 1 if x > 0, bit = 0 if x < 0, and for x == +0 or -0 the bit is a
// fair coin drawn from Philox (purpose kZeroSign, counter = global word index). Hence for every
// finite x, E[2 bit - 1] = sgn(x) exactly, which is the unbiased sgn() that Marsit's analysis
// assumes (a deterministic rule for zeros would bias all-zero rows of a gradient, e.g. unused
// embeddings, towards +1). NaN packs as 0, +Inf as 1, -Inf as 0; the pack functions report the
// first non-finite element so callers can refuse the input.
//
// Merge mask construction. Instead of drawing t with a per-bit probability we draw one mask c
// with P(c_j = 1) = q = a/(a+b) for all j and take v' = s XOR ((v XOR s) AND c): where v and s
// differ, v' = v with probability q and s otherwise, which is the same distribution as the
// formula above (t = c XOR s on the differing bits). c is built by comparing, bit-parallel, a
// uniform u = 0.r1 r2 r3 ... (r_i = bit j of the i-th random word) with the binary expansion of
// q, most significant bit first; a lane is decided at the first position where r_i != q_i, so
// about log2(64) + 1.3 random words are needed per 64 bits, and only the lanes where v and s
// differ are tracked. q is represented as q64 = floor(q * 2^64): P(c_j = 1) = q64 / 2^64
// exactly, which is q exactly when a + b is a power of two and within 2^-64 otherwise.
#pragma once

#include <cstdint>

#include "algorithms/kernels/philox.h"
#include "base/half.h"

namespace tsr::kernels {

inline constexpr int kWordBits = 64;

TSR_HD uint64_t wordsForElements(uint64_t count) { return (count + 63) / 64; }

// Fair-coin word for the exact zeros of global word `word`.
TSR_HD uint64_t zeroSignWord(const RngStream& rng, uint64_t word) {
  return philoxWord64(philoxDraw(rng, RngPurpose::kZeroSign, word), 0);
}

TSR_HD bool isFiniteFloat(float x) { return (floatBits(x) & 0x7f800000u) != 0x7f800000u; }

// Packs x[0..count) (count <= 64) into one word; bits past count are 0. `word` is the global
// word index that keys the zero coin.
TSR_HD uint64_t packSignWord(const float* x, int count, const RngStream& rng, uint64_t word) {
  uint64_t pos = 0, zero = 0;
  for (int j = 0; j < count; ++j) {
    pos |= static_cast<uint64_t>(x[j] > 0.0f) << j;
    zero |= static_cast<uint64_t>(x[j] == 0.0f) << j;
  }
  if (zero != 0) pos |= zero & zeroSignWord(rng, word);
  return pos;
}

// q64 = floor(a * 2^64 / (a + b)) for 0 < a and 0 < b (callers handle a == 0 or b == 0).
inline uint64_t mergeThreshold(uint32_t a, uint32_t b) {
  unsigned __int128 num = static_cast<unsigned __int128>(a) << 64;
  return static_cast<uint64_t>(num / (static_cast<uint64_t>(a) + b));
}

// Maximum Philox draws per word in the merge (two 64-bit random words per draw).
inline constexpr uint32_t kMergeDrawsPerWord = 32;

// One merged word; `word` is the global word index that keys the mask. Requires 0 < q64.
TSR_HD uint64_t mergeSignWord(uint64_t v, uint64_t s, uint64_t q64, const RngStream& rng, uint64_t word) {
  uint64_t undecided = v ^ s;
  uint64_t c = 0;
  uint64_t rest = q64;
  uint64_t draw = 0;
  while (undecided != 0 && rest != 0) {
    Philox4x32 r4 = philoxDraw(rng, RngPurpose::kMergeMask, word * kMergeDrawsPerWord + draw);
    ++draw;
    for (int half = 0; half < 2 && undecided != 0 && rest != 0; ++half) {
      uint64_t r = philoxWord64(r4, half);
      if (rest >> 63) {
        c |= undecided & ~r;
        undecided &= r;
      } else {
        undecided &= ~r;
      }
      rest <<= 1;
    }
  }
  return s ^ c;
}

// Elements per block of sumAbs: each block is summed on its own (sumAbsBlock), the blocks in
// double in order, so a GPU (one thread per block) gives the CPU's sum bit for bit.
inline constexpr uint64_t kSumAbsBlock = 1024;

// sum |x[j]| over one block in double, element by element: where the float lanes overflowed.
TSR_HD double sumAbsBlockWide(const float* x, uint64_t n) {
  double part = 0.0;
  for (uint64_t j = 0; j < n; ++j) part += x[j] < 0 ? -static_cast<double>(x[j]) : static_cast<double>(x[j]);
  return part;
}

// A float lane's sum that overflowed (finite values averaging past ~2.7e36 over a lane's 128
// elements) gives an Inf block sum; the block is then summed again in double, where no finite
// input overflows, so the scale (a mean, at most the largest |x|) stays finite. NaN or Inf in x
// gives a non-finite sum either way.
TSR_HD bool sumOverflowed(double part) { return !(part <= 1.7976931348623157e308); }

// sum |x[j]| over one block (n <= kSumAbsBlock): eight float lanes (lane l takes the elements
// j = l mod 8 in order), the lanes then the tail added in double; sumAbsBlockWide where a lane
// overflowed.
TSR_HD double sumAbsBlock(const float* x, uint64_t n) {
  float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += x[j + l] < 0 ? -x[j + l] : x[j + l];
  double part = 0.0;
  for (int l = 0; l < 8; ++l) part += lanes[l];
  for (; j < n; ++j) part += x[j] < 0 ? -x[j] : x[j];
  return sumOverflowed(part) ? sumAbsBlockWide(x, n) : part;
}

// Decompressed value of bit `bit` of `w`: eta * (2 bit - 1).
TSR_HD float signValue(uint64_t w, int bit, float eta) { return ((w >> bit) & 1u) ? eta : -eta; }

}  // namespace tsr::kernels
