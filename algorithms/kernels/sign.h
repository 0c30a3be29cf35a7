// Sign-bit kernels for Marsit (Sign Bit is Enough) and the onebit compressor (BytePS compression), CPU side.
// Bit layout, sign rule and the merge's exact probabilities are defined in sign_ops.h.
//
// `firstWord` is the global index of words[0] within the whole tensor: it keys the random
// streams, so a segment packed or merged on its own (any split, CPU or GPU) gets the same bits
// as when the tensor is processed in one call. Segments therefore start on a 64-element
// boundary. All functions are allocation-free; AVX2 versions are bit-identical to the portable
// ones.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/kernels/philox.h"

namespace tsr::kernels {

// Packs sign bits of x[0..count) into ceil(count/64) words (unused high bits of the last word
// are 0). Returns the index of the first non-finite element (NaN/Inf), or count if none; the
// words are written either way.
size_t signPack(const float* x, size_t count, uint64_t* words, const RngStream& rng, uint64_t firstWord = 0);

// out = merge(v, s) word by word (v represents a workers, s represents b workers). out may
// alias v or s. a == 0 copies s, b == 0 copies v; unused bits stay 0 when they are 0 in both.
void signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a, uint32_t b,
               const RngStream& rng, uint64_t firstWord = 0);

// out[j] = eta * (2 bit_j - 1) for j < count.
void signDecompress(const uint64_t* words, size_t count, float eta, float* out);

// c[j] = g[j] - eta * (2 bit_j - 1): Marsit's compensation update in one pass (c may alias g).
void signCompensate(const float* g, const uint64_t* words, size_t count, float eta, float* c);

// Marsit's first pass, fused (one read of g and c instead of four passes): work = g + c,
// words = signPack(work), *sumAbsOut = sumAbs(work) (same bits as the separate kernels).
// Returns the first non-finite index of work, or count.
size_t signPrepare(const float* g, const float* c, size_t count, float* work, uint64_t* words, const RngStream& rng,
                   uint64_t firstWord, double* sumAbsOut);

// signPrepare on elements [begin, end) of a tensor, so a tensor can be prepared piece by piece
// in any order (Marsit packs the chunk it sends first, first): g, c, work and words are the
// whole tensor's arrays and the result is the whole call's, element for element. begin is a
// multiple of 64; so is end unless it is the tensor's end. blockSums[b] gets the |work| sum (in
// sumAbs's order) of 1024-element block b over [1024 b, min(1024 b + 1024, end)) for every
// block starting inside [begin, end); a block that a later piece continues is summed only in
// part, and is summed again once both are packed (marsit/piecewise_prepare.h). Returns the
// first non-finite index in [begin, end), or end.
size_t signPrepareRange(const float* g, const float* c, size_t begin, size_t end, float* work, uint64_t* words,
                        const RngStream& rng, double* blockSums);

// Marsit's last pass, fused: out[j] = eta * (2 bit_j - 1) and comp[j] = work[j] - out[j]
// (signDecompress then signCompensate in one read of work and the words).
void signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out, float* comp);

// Marsit's momentum hand-off (marsit/marsit.h), element by element with M' = g[j] as given:
// g[j] = M' - mu prev[j], carry[j] = comp[j] + mu M', prev[j] = M'. The device path composes
// the same float operations (scale, add, copy), so both round alike.
void momentumHandOff(float* g, float* prev, const float* comp, float* carry, size_t count, float mu);

// bits[j] = bit j (0 or 1), for tests and debugging.
void signUnpack(const uint64_t* words, size_t count, uint8_t* bits);

// Index of the first NaN or Inf in x[0..count), or count when all are finite.
size_t firstNonFinite(const float* x, size_t count);

// sum |x[j]| in double (onebit scaling uses the mean).
double sumAbs(const float* x, size_t count);

// Number of set bits in words[0..n).
uint64_t popcountWords(const uint64_t* words, size_t n);

}  // namespace tsr::kernels
