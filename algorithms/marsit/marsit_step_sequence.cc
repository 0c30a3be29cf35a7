#include "algorithms/marsit/marsit_step_sequence.h"

#include <algorithm>
#include <cstdint>

#include "algorithms/marsit/marsit_step.h"

namespace tsr::marsit {

FlatMarsitSequence::FlatMarsitSequence(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

Status FlatMarsitSequence::start() {
  MarsitState& s = *state_;
  startUs_ = nowUs();
  s.times = StepTimes{};
  full_ = s.fullPrecisionStep();
  s.times.fullPrecision = full_;
  s.mergeNanos = 0;
  packed_ = false;
  chunked_ = false;
  Status st = prepare();
  if (!st.isOk()) return fail(st);
  algorithms::RunIdentity id = ctx_.id;
  id.seq = ctx_.id.seq + 1;
  bits_ = std::make_unique<algorithms::PlanExecutor>(full_ ? s.fullPlan : s.bitPlan, bitBuffers(), id, ctx_.transport);
  bitsStartUs_ = nowUs();
  // Chunked, the first chunk is packed and sent before start() returns; the scalar allreduce
  // waits for the last chunk (its sum and NaN/Inf scan).
  if (!chunked_) startScalar();
  bitsStatus_ = bits_->start();
  if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  if (packed_ && !scalar_) startScalar();
  return drive();
}

// One small allreduce carries both the shared magnitudes and whether any rank saw a NaN or
// Inf, so a bad value fails the step on every rank instead of leaving peers waiting.
void FlatMarsitSequence::scalarsReady(size_t badIndex) {
  MarsitState& s = *state_;
  s.badIndex = badIndex;
  bool bad = badIndex < s.count;
  for (size_t b = 0; b < s.scaleBlocks; ++b) {
    size_t len = s.scaleLength(b);
    s.scalarIn[b] = bad || len == 0 ? 0.0 : s.blockSums[b] / len;
  }
  s.scalarIn.back() = bad ? 1.0 : 0.0;
  packed_ = true;
}

void FlatMarsitSequence::startScalar() {
  MarsitState& s = *state_;
  scalar_ = std::make_unique<algorithms::PlanExecutor>(
      s.scalarPlan, algorithms::RunBuffers{s.scalarIn.data(), s.scalarOut.data(), s.scalarScratch.data()}, ctx_.id,
      ctx_.transport);
  scalarStatus_ = scalar_->start();
}

Status FlatMarsitSequence::progress() {
  if (!running(status_)) return status_;
  if (running(bitsStatus_)) {
    bitsStatus_ = bits_->progress();
    if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  }
  if (!scalar_ && packed_)
    startScalar();
  else if (scalar_ && running(scalarStatus_))
    scalarStatus_ = scalar_->progress();
  return drive();
}

Status FlatMarsitSequence::drive() {
  if (!running(scalarStatus_) && !scalarStatus_.isOk()) return fail(scalarStatus_);
  if (!running(bitsStatus_) && !bitsStatus_.isOk()) return fail(bitsStatus_);
  if (running(scalarStatus_) || running(bitsStatus_)) return status_;
  return finish();
}

Status FlatMarsitSequence::finish() {
  MarsitState& s = *state_;
  s.times.merge = s.mergeNanos / 1000.0;
  // Chunked, the packing ran inside the bit plan: it is prepare's, not the wire's.
  s.times.wire = std::max(0.0, bitsEndUs_ - bitsStartUs_ - s.times.merge - (chunked_ ? s.times.prepare : 0.0));
  if (s.scalarOut.back() > 0) {
    bool mine = s.badIndex < s.count;
    return fail(numericError(s, mine ? s.badIndex : SIZE_MAX, mine ? workValue(s.badIndex) : 0.0f));
  }
  double t = nowUs();
  Status st = writeResult();
  if (!st.isOk()) return fail(st);
  s.times.decompress = nowUs() - t;
  ++s.step;
  s.times.total = nowUs() - startUs_;
  status_ = Status::ok();
  return status_;
}

Status FlatMarsitSequence::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  if (scalar_ && running(scalarStatus_)) scalar_->abort(status_);
  if (bits_ && running(bitsStatus_)) bits_->abort(status_);
  return status_;
}

void FlatMarsitSequence::abort(const Status& reason) { fail(reason).ignore(); }

bool FlatMarsitSequence::quiescent() const {
  return (!scalar_ || scalar_->quiescent()) && (!bits_ || bits_->quiescent());
}

int FlatMarsitSequence::waitingOn() const {
  if (scalar_ && running(scalarStatus_) && scalar_->waitingOn() >= 0) return scalar_->waitingOn();
  if (bits_ && running(bitsStatus_)) return bits_->waitingOn();
  return -1;
}

}  // namespace tsr::marsit
