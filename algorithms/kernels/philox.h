// Philox4x32-10: the counter-based random generator behind every random choice in the kernels
// (Marsit's Bernoulli merge mask, the fair coin for exact zeros in sign packing, random-k,
// dithering). Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11).
//
// Why counter-based: a random word is a pure function of (key, counter), so any element's
// randomness can be recomputed anywhere (CPU, GPU, another segment split) and a run replays
// bit for bit. Nothing is stateful; there is no sequence to keep in step.
//
// Counter layout used by Tessera (RngStream::counter):
//   ctr[0], ctr[1] = low / high 32 bits of a 64-bit index (element, word or draw number)
//   ctr[2]         = (purpose << 24) | (rank & 0xffffff)
//   ctr[3]         = step
//   key            = {seed low 32 bits, seed high 32 bits}
// Different purposes never share a counter, so e.g. the merge mask and the zero-sign coin of
// the same word are independent.
#pragma once

#include <cstdint>

#include "base/half.h"  // TSR_HD

namespace tsr::kernels {

struct Philox4x32 {
  uint32_t v[4];
};

TSR_HD void philoxMulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// The reference Philox4x32 with 10 rounds (Random123's philox4x32_R(10, ...)).
TSR_HD Philox4x32 philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philoxMulHiLo(kM0, c0, &hi0, &lo0);
    philoxMulHiLo(kM1, c2, &hi1, &lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0;
    uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return Philox4x32{{c0, c1, c2, c3}};
}

// What a stream of random words is used for; part of the counter (see the layout above).
enum class RngPurpose : uint32_t {
  kMergeMask = 1,  // Marsit bit merge Bernoulli mask
  kZeroSign = 2,   // fair coin for elements that are exactly zero in sign packing
  kRandomK = 3,    // random-k index choice (rank is ignored: every rank draws the same)
  kDither = 4,     // dithering stochastic rounding
  kTest = 255,
};

// Identifies one replayable random stream: same (seed, rank, step, purpose) -> same words.
struct RngStream {
  uint64_t seed = 0;
  uint32_t rank = 0;
  uint32_t step = 0;
};

// Four random 32-bit words for draw `index` of `purpose` in `stream`.
TSR_HD Philox4x32 philoxDraw(const RngStream& stream, RngPurpose purpose, uint64_t index) {
  return philox4x32(static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                    (static_cast<uint32_t>(purpose) << 24) | (stream.rank & 0xffffffu), stream.step,
                    static_cast<uint32_t>(stream.seed), static_cast<uint32_t>(stream.seed >> 32));
}

// Uniform integer in [0, bound) from 64 random bits (Lemire's multiply-shift). The bias is at
// most bound / 2^64 per draw, far below anything a training run can observe.
TSR_HD uint64_t uniformBelow(uint64_t random64, uint64_t bound) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(random64, bound);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(random64) * bound) >> 64);
#endif
}

TSR_HD uint64_t philoxWord64(const Philox4x32& r, int half) {
  return half == 0 ? (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0] : (static_cast<uint64_t>(r.v[3]) << 32) | r.v[2];
}

}  // namespace tsr::kernels
