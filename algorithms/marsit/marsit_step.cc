#include "algorithms/marsit/marsit_step.h"

#include <algorithm>
#include <cstdint>
#include <chrono>
#include <cstring>

#include "algorithms/kernels/sign.h"

namespace tsr::marsit {

double nowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status numericError(const MarsitState& s, size_t badIndex, float badValue) {
  bool mine = badIndex != SIZE_MAX;
  return Status(Code::kNumericError,
                "marsit tensor " + s.name + ": " + std::to_string(static_cast<int>(s.scalarOut[1])) +
                    " rank(s) had NaN or Inf in gradient + compensation" +
                    (mine ? " (rank " + std::to_string(s.rank) + ": element " + std::to_string(badIndex) +
                                " is " + std::to_string(badValue) + ")"
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

MarsitStepTask::MarsitStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : FlatMarsitSequence(std::move(state), ctx) {}

Status MarsitStepTask::prepare() {
  MarsitState& s = *state_;
  chunked_ = !full_ && s.params.chunkedPack;
  coin_ = {s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
  if (chunked_) {
    s.prep.reset(s.count);
    if (s.count == 0) scalarsReady(0, 0.0);  // nothing to pack
  } else {
    prepareWhole();
  }
  return Status::ok();
}

void MarsitStepTask::prepareWhole() {
  MarsitState& s = *state_;
  double sumAbs = 0;
  size_t bad;
  if (full_) {
    for (size_t j = 0; j < s.count; ++j) s.work[j] = s.g[j] + s.comp[j];
    bad = kernels::firstNonFinite(s.work.data(), s.count);
  } else {
    // g' = g + c, its signs and its magnitude in one pass over g and c.
    bad = kernels::signPrepare(s.g, s.comp.data(), s.count, s.work.data(), s.bits.data(), coin_, 0, &sumAbs);
  }
  scalarsReady(bad, sumAbs);
  s.times.prepare = nowUs() - startUs_;
}

Status MarsitStepTask::packChunk(const algorithms::PlanOp& op) {
  MarsitState& s = *state_;
  double t = nowUs();
  size_t firstWord = op.dst.offset / sizeof(uint64_t);
  size_t begin = firstWord * 64, end = std::min(s.count, (firstWord + op.count) * 64);
  s.prep.prepare(s.g, s.comp.data(), begin, end, s.work.data(), s.bits.data(), coin_);
  if (s.prep.prepared() == s.count) {
    size_t bad = s.prep.firstBad();
    scalarsReady(bad, bad < s.count ? 0.0 : s.prep.sumAbs(s.work.data()));
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
    float eta = static_cast<float>(s.scalarOut[0] / s.size);
    kernels::signFinish(s.work.data(), s.bits.data(), s.count, eta, s.g, s.comp.data());  // G and c
  }
  return Status::ok();
}

}  // namespace tsr::marsit
