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

  // One small allreduce carries both the shared magnitude and whether any rank saw a NaN or
  // Inf, so a bad value fails the step on every rank instead of leaving peers waiting.
  double sumAbs = 0;
  if (full_) {
    for (size_t j = 0; j < s.count; ++j) s.work[j] = s.g[j] + s.comp[j];
    s.badIndex = kernels::firstNonFinite(s.work.data(), s.count);
  } else {
    // g' = g + c, its signs and its magnitude in one pass over g and c.
    kernels::RngStream coin{s.params.seed, static_cast<uint32_t>(s.rank), static_cast<uint32_t>(s.step)};
    s.badIndex = kernels::signPrepare(s.g, s.comp.data(), s.count, s.work.data(), s.bits.data(), coin, 0, &sumAbs);
  }
  bool bad = s.badIndex < s.count;
  s.scalarIn[0] = bad || s.count == 0 ? 0.0 : sumAbs / s.count;
  s.scalarIn[1] = bad ? 1.0 : 0.0;
  s.times.prepare = nowUs() - startUs_;

  algorithms::RunIdentity id = ctx_.id;
  scalar_ = std::make_unique<algorithms::PlanExecutor>(
      s.scalarPlan, algorithms::RunBuffers{s.scalarIn, s.scalarOut, s.scalarScratch.data()}, id,
      ctx_.transport);
  id.seq = ctx_.id.seq + 1;
  algorithms::RunBuffers bitBuffers;
  if (full_) {
    bitBuffers = {s.work.data(), s.work.data(), s.fullScratch.data()};
    bits_ = std::make_unique<algorithms::PlanExecutor>(s.fullPlan, bitBuffers, id, ctx_.transport);
  } else {
    bitBuffers = {s.bits.data(), s.bits.data(), s.bitScratch.data()};
    bitBuffers.rngSeed = s.params.seed;
    bitBuffers.rngStep = static_cast<uint32_t>(s.step);
    bitBuffers.mergeNanos = &s.mergeNanos;
    bits_ = std::make_unique<algorithms::PlanExecutor>(s.bitPlan, bitBuffers, id, ctx_.transport);
  }
  bitsStartUs_ = nowUs();
  Status a = scalar_->start();
  Status b = bits_->start();
  return drive(a, b);
}

Status MarsitStepTask::progress() {
  if (!running(status_)) return status_;
  return drive(running(scalarStatus_) ? scalar_->progress() : scalarStatus_,
               running(bitsStatus_) ? bits_->progress() : bitsStatus_);
}

Status MarsitStepTask::drive(Status scalar, Status bits) {
  scalarStatus_ = std::move(scalar);
  if (running(bitsStatus_) && !running(bits)) bitsEndUs_ = nowUs();
  bitsStatus_ = std::move(bits);
  if (!running(scalarStatus_) && !scalarStatus_.isOk()) return fail(scalarStatus_);
  if (!running(bitsStatus_) && !bitsStatus_.isOk()) return fail(bitsStatus_);
  if (running(scalarStatus_) || running(bitsStatus_)) return status_;
  return finish();
}

Status MarsitStepTask::finish() {
  MarsitState& s = *state_;
  double merge = s.mergeNanos / 1000.0;
  s.times.merge = merge;
  s.times.wire = std::max(0.0, bitsEndUs_ - bitsStartUs_ - merge);
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
