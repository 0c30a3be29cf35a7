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

MarsitStepTask::MarsitStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

Status MarsitStepTask::start() {
  MarsitState& s = *state_;
  startUs_ = nowUs();
  s.times = StepTimes{};
  full_ = s.fullPrecisionStep();
  s.times.fullPrecision = full_;
  s.mergeNanos = 0;
  chunked_ = !full_ && s.params.chunkedPack;
  coin_ = {s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
  packed_ = false;
  if (chunked_) {
    s.prep.reset(s.count);
    if (s.count == 0) scalarsReady(0, 0.0);  // nothing to pack
  } else {
    prepareWhole();
  }
  algorithms::RunIdentity id = ctx_.id;
  id.seq = ctx_.id.seq + 1;
  bits_ = std::make_unique<algorithms::PlanExecutor>(full_ ? s.fullPlan : s.bitPlan, bitBuffers(), id,
                                                     ctx_.transport);
  bitsStartUs_ = nowUs();
  // Chunked, the first chunk is packed and sent before start() returns; the scalar allreduce
  // waits for the last chunk (its sum and NaN/Inf scan).
  if (!chunked_) startScalar();
  bitsStatus_ = bits_->start();
  if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  if (packed_ && !scalar_) startScalar();
  return drive();
}

// One small allreduce carries both the shared magnitude and whether any rank saw a NaN or
// Inf, so a bad value fails the step on every rank instead of leaving peers waiting.
void MarsitStepTask::scalarsReady(size_t badIndex, double sumAbs) {
  MarsitState& s = *state_;
  s.badIndex = badIndex;
  bool bad = badIndex < s.count;
  s.scalarIn[0] = bad || s.count == 0 ? 0.0 : sumAbs / s.count;
  s.scalarIn[1] = bad ? 1.0 : 0.0;
  packed_ = true;
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
  algorithms::RunBuffers b{s.bits.data(), s.bits.data(), s.bitScratch.data()};
  b.rngSeed = s.params.seed;
  b.rngStep = static_cast<uint32_t>(s.step);
  b.mergeNanos = &s.mergeNanos;
  if (chunked_) b.local = [this](const algorithms::PlanOp& op) { return packChunk(op); };
  return b;
}

void MarsitStepTask::startScalar() {
  MarsitState& s = *state_;
  scalar_ = std::make_unique<algorithms::PlanExecutor>(
      s.scalarPlan, algorithms::RunBuffers{s.scalarIn, s.scalarOut, s.scalarScratch.data()}, ctx_.id,
      ctx_.transport);
  scalarStatus_ = scalar_->start();
}

Status MarsitStepTask::progress() {
  if (!running(status_)) return status_;
  if (running(bitsStatus_)) {
    bitsStatus_ = bits_->progress();
    if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  }
  if (!scalar_ && packed_) startScalar();
  else if (scalar_ && running(scalarStatus_)) scalarStatus_ = scalar_->progress();
  return drive();
}

Status MarsitStepTask::drive() {
  if (!running(scalarStatus_) && !scalarStatus_.isOk()) return fail(scalarStatus_);
  if (!running(bitsStatus_) && !bitsStatus_.isOk()) return fail(bitsStatus_);
  if (running(scalarStatus_) || running(bitsStatus_)) return status_;
  return finish();
}

Status MarsitStepTask::finish() {
  MarsitState& s = *state_;
  double merge = s.mergeNanos / 1000.0;
  s.times.merge = merge;
  // Chunked, the packing ran inside the bit plan: it is prepare's, not the wire's.
  s.times.wire = std::max(0.0, bitsEndUs_ - bitsStartUs_ - merge - (chunked_ ? s.times.prepare : 0.0));
  if (s.scalarOut[1] > 0) {
    bool mine = s.badIndex < s.count;
    return fail(numericError(s, mine ? s.badIndex : SIZE_MAX, mine ? s.work[s.badIndex] : 0.0f));
  }
  double t = nowUs();
  if (full_) {
    std::copy_n(s.work.data(), s.count, s.g);
    std::fill(s.comp.begin(), s.comp.end(), 0.0f);
    s.times.decompress = nowUs() - t;
  } else {
    float eta = static_cast<float>(s.scalarOut[0] / s.size);
    kernels::signFinish(s.work.data(), s.bits.data(), s.count, eta, s.g, s.comp.data());  // G and c
    s.times.decompress = nowUs() - t;
  }
  ++s.step;
  s.times.total = nowUs() - startUs_;
  status_ = Status::ok();
  return status_;
}

Status MarsitStepTask::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  if (scalar_ && running(scalarStatus_)) scalar_->abort(status_);
  if (bits_ && running(bitsStatus_)) bits_->abort(status_);
  return status_;
}

void MarsitStepTask::abort(const Status& reason) { fail(reason).ignore(); }

bool MarsitStepTask::quiescent() const {
  return (!scalar_ || scalar_->quiescent()) && (!bits_ || bits_->quiescent());
}

int MarsitStepTask::waitingOn() const {
  if (scalar_ && running(scalarStatus_) && scalar_->waitingOn() >= 0) return scalar_->waitingOn();
  if (bits_ && running(bitsStatus_)) return bits_->waitingOn();
  return -1;
}

}  // namespace tsr::marsit
