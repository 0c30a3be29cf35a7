#include "algorithms/marsit/marsit_step.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "algorithms/kernels/sign.h"
#include "base/summed_count.h"

namespace tsr::marsit {

double nowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Status numericError(const MarsitState& s, size_t badIndex, float badValue) {
  bool mine = badIndex != SIZE_MAX;
  return Status(Code::kNumericError, "marsit tensor " + s.name + ": " +
                                         summedCount(s.scalarOut.back(), s.size, "rank(s)") +
                                         " had NaN or Inf in gradient + compensation" +
                                         (mine ? " (rank " + std::to_string(s.rank) + ": element " +
                                                     std::to_string(badIndex) + " is " + std::to_string(badValue) + ")"
                                               : std::string()) +
                                         "; the tensor and its compensation are unchanged");
}

algorithms::RunBuffers signBitBuffers(MarsitState& s, void* bits, void* scratch) {
  algorithms::RunBuffers b{bits, bits, scratch};
  b.rngSeed = s.params.seed;
  b.rngStep = static_cast<uint32_t>(s.step);
  b.mergeNanos = &s.mergeNanos;
  return b;
}

void sizeFlatState(MarsitState& s) {
  s.scaleSpan =
      s.params.scaleBlock && s.count > s.params.scaleBlock ? s.params.scaleBlock : std::max<size_t>(s.count, 1);
  s.scaleBlocks = s.count ? (s.count + s.scaleSpan - 1) / s.scaleSpan : 1;
  s.scalarIn.assign(s.scaleBlocks + 1, 0.0);
  s.scalarOut.assign(s.scaleBlocks + 1, 0.0);
  s.blockSums.assign(s.scaleBlocks, 0.0);
  if (s.params.momentum > 0) {
    s.prev.assign(s.count, 0.0f);
    s.shift.assign(s.count, 0.0f);
  }
}

MarsitStepTask::MarsitStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : FlatMarsitSequence(std::move(state), ctx) {}

Status MarsitStepTask::prepare() {
  MarsitState& s = *state_;
  chunked_ = !full_ && s.params.chunkedPack;
  coin_ = {s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
  if (chunked_) {
    s.prep.reset(s.count);
    if (s.count == 0) scalarsReady(0);  // nothing to pack
  } else {
    prepareWhole();
  }
  return Status::ok();
}

void MarsitStepTask::prepareWhole() {
  MarsitState& s = *state_;
  double sumAbs = 0;
  size_t bad;
  const float* c = s.carried().data();
  if (full_) {
    for (size_t j = 0; j < s.count; ++j) s.work[j] = s.g[j] + c[j];
    bad = kernels::firstNonFinite(s.work.data(), s.count);
  } else {
    // g' = g + c, its signs and its magnitude in one pass over g and c.
    bad = kernels::signPrepare(s.g, c, s.count, s.work.data(), s.bits.data(), coin_, 0, &sumAbs);
  }
  if (s.scaleBlocks == 1) {
    s.blockSums[0] = sumAbs;
  } else {
    for (size_t b = 0; b < s.scaleBlocks; ++b)
      s.blockSums[b] = full_ ? 0.0 : kernels::sumAbs(s.work.data() + s.scaleBegin(b), s.scaleLength(b));
  }
  scalarsReady(bad);
  s.times.prepare = nowUs() - startUs_;
}

Status MarsitStepTask::packChunk(const algorithms::PlanOp& op) {
  MarsitState& s = *state_;
  double t = nowUs();
  size_t firstWord = op.dst.offset / sizeof(uint64_t);
  size_t begin = firstWord * 64, end = std::min(s.count, (firstWord + op.count) * 64);
  s.prep.prepare(s.g, s.carried().data(), begin, end, s.work.data(), s.bits.data(), coin_);
  if (s.prep.prepared() == s.count) {
    size_t bad = s.prep.firstBad();
    if (bad >= s.count) s.prep.scaleSums(s.work.data(), s.scaleSpan, s.blockSums.data());
    scalarsReady(bad);
  }
  s.times.prepare += nowUs() - t;
  return Status::ok();
}

algorithms::RunBuffers MarsitStepTask::bitBuffers() {
  MarsitState& s = *state_;
  if (full_) return {s.work.data(), s.work.data(), s.fullScratch.data()};
  algorithms::RunBuffers b = signBitBuffers(s, s.bits.data(), s.bitScratch.data());
  if (chunked_) b.local = [this](const algorithms::PlanOp& op) { return packChunk(op); };
  return b;
}

float MarsitStepTask::workValue(size_t index) { return state_->work[index]; }

Status MarsitStepTask::writeResult() {
  MarsitState& s = *state_;
  if (full_) {
    std::copy_n(s.work.data(), s.count, s.g);
    std::fill(s.comp.begin(), s.comp.end(), 0.0f);
  } else {
    for (size_t b = 0; b < s.scaleBlocks; ++b) {  // M' and c, block by block (64-aligned)
      size_t at = s.scaleBegin(b);
      kernels::signFinish(s.work.data() + at, s.bits.data() + at / 64, s.scaleLength(b), s.eta(b), s.g + at,
                          s.comp.data() + at);
    }
  }
  // g = M' - mu M, M = M', next carry c + mu M'.
  if (s.params.momentum > 0)
    kernels::momentumHandOff(s.g, s.prev.data(), s.comp.data(), s.shift.data(), s.count, s.params.momentum);
  return Status::ok();
}

}  // namespace tsr::marsit
