// Dithering (stochastic s-level quantization), as in BytePS's dithering compressor (the BytePS
// compression framework): normalize by a scale, round |x| stochastically to one of the levels so
// that the expectation is |x|, keep the sign.
//
//   scale      max |x| (kMax, the default) or ||x||_2 (kL2).
//   linear     levels 0, 1/s, 2/s, ..., 1: code = floor(|x|/scale * s) + Bernoulli(frac).
//   natural    levels 0 and 2^-i: with L = 2^(s-1), y = |x|/scale * L, f = the largest power of
//              two <= y (0 if y < 1), len = max(f, 1): code = f + len * Bernoulli((y - f)/len).
//   value      sign(x) * code * scale / D with D = s (linear) or L (natural).
// E[value] = x up to float rounding; |value - x| <= scale / D (linear) or <= the gap between
// the two levels around |x| (natural). The Bernoulli draw compares a 32-bit Philox uniform with
// p * 2^32 (probability within 2^-32 of p). Codes are signed 16-bit: s <= 32767 (linear),
// s <= 15 (natural).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/kernels/philox.h"

namespace tsr::kernels {

enum class DitherPartition { kLinear, kNatural };
enum class DitherNormalize { kMax, kL2 };

// Largest code for s levels (s for linear, 2^(s-1) for natural); 0 when s is out of range.
uint32_t ditherMaxCode(uint32_t s, DitherPartition partition);

// max |x| or the L2 norm, as float. The norm is float(sqrt(ditherSumSquares(x))).
float ditherScale(const float* x, size_t count, DitherNormalize normalize);
// sum x^2 in double, in 1024-element blocks (dither_ops.h sumSquaresBlock) added in block
// order: the order a GPU reproduces (cuda/codec_kernels.cu), so its L2 norm is the same float.
double ditherSumSquares(const float* x, size_t count);
// The L2 scale from a sum of squares: float(sqrt(sum)) (sqrt is correctly rounded everywhere),
// capped at the largest float: a norm past it would be an Inf scale (every code 0, every value
// NaN), while any scale >= max |x| keeps the codes unbiased.
float ditherL2Scale(double sumSquares);

void ditherQuantize(const float* x, size_t count, float scale, uint32_t s, DitherPartition partition,
                    const RngStream& rng, int16_t* codes);
void ditherDequantize(const int16_t* codes, size_t count, float scale, uint32_t s, DitherPartition partition,
                      float* out);

}  // namespace tsr::kernels
