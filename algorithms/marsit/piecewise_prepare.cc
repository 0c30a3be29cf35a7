#include "algorithms/marsit/piecewise_prepare.h"

#include <algorithm>

#include "algorithms/kernels/sign.h"

namespace tsr::marsit {

namespace {
constexpr size_t kBlock = 1024;  // kernels::sumAbs's block
}

void PiecewisePrepare::reset(size_t count) {
  count_ = count;
  firstBad_ = count;
  prepared_ = 0;
  blockSums_.assign((count + kBlock - 1) / kBlock, 0.0);
  cutBlocks_.clear();
}

void PiecewisePrepare::prepare(const float* g, const float* c, size_t begin, size_t end, float* work, uint64_t* words,
                               const kernels::RngStream& rng) {
  size_t bad = kernels::signPrepareRange(g, c, begin, end, work, words, rng, blockSums_.data());
  if (bad < end) firstBad_ = std::min(firstBad_, bad);
  prepared_ += end - begin;
  // A block cut by this piece's end is summed only in part: redo it when all are prepared.
  if (end % kBlock != 0 && end < count_) cutBlocks_.push_back(end / kBlock);
}

void PiecewisePrepare::account(const float* work, size_t begin, size_t end) {
  const size_t stop = std::min(end, count_);
  if (begin >= stop) return;
  size_t bad = begin + kernels::firstNonFinite(work + begin, stop - begin);
  if (bad < stop) firstBad_ = std::min(firstBad_, bad);
  // Blocks that start in this piece; the head belongs to a block an earlier piece starts.
  for (size_t b = (begin + kBlock - 1) / kBlock; b * kBlock < stop; ++b)
    blockSums_[b] = kernels::sumAbs(work + b * kBlock, std::min(kBlock, stop - b * kBlock));
  prepared_ += stop - begin;
  if (stop % kBlock != 0 && stop < count_) cutBlocks_.push_back(stop / kBlock);
}

double PiecewisePrepare::sumAbs(const float* work) {
  double total = 0;
  scaleSums(work, std::max<size_t>(count_, 1), &total);
  return total;
}

void PiecewisePrepare::scaleSums(const float* work, size_t span, double* out) {
  for (size_t b : cutBlocks_) {
    size_t start = b * kBlock;
    blockSums_[b] = kernels::sumAbs(work + start, std::min(kBlock, count_ - start));
  }
  cutBlocks_.clear();
  const size_t perScale = (span + kBlock - 1) / kBlock;  // a whole-vector span: every block
  for (size_t b = 0; b < blockSums_.size(); ++b) {
    if (b % perScale == 0) out[b / perScale] = 0;
    out[b / perScale] += blockSums_[b];
  }
  if (blockSums_.empty()) out[0] = 0;
}

}  // namespace tsr::marsit
