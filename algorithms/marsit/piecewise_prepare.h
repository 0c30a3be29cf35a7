// Marsit's first pass (g' = g + c, signs, sum |g'|, first non-finite index) done piece by piece,
// in whatever order the bit plan asks for the pieces, with the whole-vector call's results bit
// for bit: the words' random coins are keyed by word index already, and the sum is kept per
// 1024-element block and added up in block order at the end, as kernels::signPrepare adds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/kernels/philox.h"

namespace tsr::marsit {

class PiecewisePrepare {
 public:
  // Starts a step over `count` elements (allocates only when count grows).
  void reset(size_t count);
  // Prepares elements [begin, end) (begin a multiple of 64; end too, or count).
  void prepare(const float* g, const float* c, size_t begin, size_t end, float* work, uint64_t* words,
               const kernels::RngStream& rng);
  // For a piece whose work is already computed (two-level: s' = host average + c): notes
  // [begin, min(end, count))'s first non-finite element and block sums; the piece may run on
  // into padding past count, which is neither scanned nor summed.
  void account(const float* work, size_t begin, size_t end);
  // Once every element is prepared: sum |work| over the whole vector, in signPrepare's order.
  double sumAbs(const float* work);
  // Once every element is prepared: out[b] = sum |work| over [b span, (b + 1) span) in
  // kernels::sumAbs's order over that range (span a multiple of 1024, or the whole vector).
  void scaleSums(const float* work, size_t span, double* out);
  // The first non-finite element over the pieces prepared so far, or count.
  size_t firstBad() const { return firstBad_; }
  size_t prepared() const { return prepared_; }

 private:
  size_t count_ = 0;
  size_t firstBad_ = 0;
  size_t prepared_ = 0;            // elements
  std::vector<double> blockSums_;  // per 1024-element block
  std::vector<size_t> cutBlocks_;  // blocks split between two pieces
};

}  // namespace tsr::marsit
