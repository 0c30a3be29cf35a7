#include "algorithms/marsit/marsit_hier_step_sequence.h"

#include <algorithm>
#include <cstdint>

#include "algorithms/marsit/marsit_step.h"

namespace tsr::marsit {

TwoLevelMarsitSequence::TwoLevelMarsitSequence(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

algorithms::RunIdentity TwoLevelMarsitSequence::seq(uint32_t offset) const {
  algorithms::RunIdentity id = ctx_.id;
  id.seq += offset;
  return id;
}

Status TwoLevelMarsitSequence::start() {
  MarsitState& s = *state_;
  startUs_ = nowUs();
  s.times = StepTimes{};
  full_ = s.fullPrecisionStep();
  s.times.fullPrecision = full_;
  s.mergeNanos = 0;
  Status st = prepareIntra();
  if (!st.isOk()) return fail(st);
  s.times.prepare = nowUs() - startUs_;
  if (full_) {  // no intra stage: y goes to the dense plan whole
    s.scalarIn[0] = 0;
    s.scalarIn[1] = s.badIndex < s.count ? 1.0 : 0.0;
    intraStatus_ = Status::ok();
    return startExchange();
  }
  intra_ = std::make_unique<algorithms::PlanExecutor>(s.hier.rowReduceScatter, intraBuffers(), seq(0), ctx_.transport);
  intraStatus_ = intra_->start();
  return drive();
}

// Stage 2: this rank's row block plus its compensation, packed; scalar and bits side by side.
Status TwoLevelMarsitSequence::startExchange() {
  MarsitState& s = *state_;
  chunked_ = false;
  packed_ = full_;
  localUs_ = 0;
  if (!full_) {
    Status st = packBlock();
    if (!st.isOk()) return fail(st);
  }
  bits_ = std::make_unique<algorithms::PlanExecutor>(full_ ? s.fullPlan : s.hier.bits, bitBuffers(), seq(2),
                                                     ctx_.transport);
  bitsStartUs_ = nowUs();
  // Chunked, the first chunk is packed and sent inside start(); the scalar allreduce waits
  // for the last chunk (its sum and NaN/Inf scan).
  if (packed_) startScalar();
  bitsStatus_ = bits_->start();
  if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  if (packed_ && !scalar_) startScalar();
  return drive();
}

// One small allreduce carries the block's |s'| sum and whether this rank saw a NaN or Inf.
void TwoLevelMarsitSequence::scalarsReady(size_t badInBlock, double sumAbs) {
  MarsitState& s = *state_;
  const size_t off = s.hier.shardOffset, n = s.hier.shardCount;
  const size_t real = s.count > off ? std::min(n, s.count - off) : 0;
  const bool bad = badInBlock < real;
  s.badIndex = bad ? off + badInBlock : s.count;
  s.scalarIn[0] = bad ? 0.0 : sumAbs;
  s.scalarIn[1] = bad ? 1.0 : 0.0;
  packed_ = true;
}

void TwoLevelMarsitSequence::startScalar() {
  MarsitState& s = *state_;
  scalar_ = std::make_unique<algorithms::PlanExecutor>(
      s.scalarPlan, algorithms::RunBuffers{s.scalarIn.data(), s.scalarOut.data(), s.scalarScratch.data()}, seq(1),
      ctx_.transport);
  scalarStatus_ = scalar_->start();
}

Status TwoLevelMarsitSequence::progress() {
  if (!running(status_)) return status_;
  if (intra_ && running(intraStatus_)) intraStatus_ = intra_->progress();
  if (scalar_ && running(scalarStatus_)) scalarStatus_ = scalar_->progress();
  if (bits_ && running(bitsStatus_)) {
    bitsStatus_ = bits_->progress();
    if (!running(bitsStatus_)) bitsEndUs_ = nowUs();
  }
  if (bits_ && !scalar_ && packed_) startScalar();
  return drive();
}

Status TwoLevelMarsitSequence::drive() {
  if (!running(status_)) return status_;
  for (const Status* st : {&intraStatus_, &scalarStatus_, &bitsStatus_})
    if (!running(*st) && !st->isOk()) return fail(*st);
  if (running(intraStatus_)) return status_;
  if (!bits_) return startExchange();
  if (running(scalarStatus_) || running(bitsStatus_)) return status_;
  return finish();
}

Status TwoLevelMarsitSequence::finish() {
  MarsitState& s = *state_;
  s.times.merge = s.mergeNanos / 1000.0;
  s.times.wire = std::max(0.0, bitsEndUs_ - bitsStartUs_ - s.times.merge - localUs_);
  if (s.scalarOut[1] > 0) {
    bool mine = s.badIndex < s.count;
    return fail(numericError(s, mine ? s.badIndex : SIZE_MAX, mine ? workValue(s.badIndex) : 0.0f));
  }
  Status st = writeResult();
  if (!st.isOk()) return fail(st);
  ++s.step;
  s.times.total = nowUs() - startUs_;
  status_ = Status::ok();
  return status_;
}

Status TwoLevelMarsitSequence::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  if (intra_ && running(intraStatus_)) intra_->abort(status_);
  if (scalar_ && running(scalarStatus_)) scalar_->abort(status_);
  if (bits_ && running(bitsStatus_)) bits_->abort(status_);
  return status_;
}

void TwoLevelMarsitSequence::abort(const Status& reason) { fail(reason).ignore(); }

bool TwoLevelMarsitSequence::quiescent() const {
  return (!intra_ || intra_->quiescent()) && (!scalar_ || scalar_->quiescent()) && (!bits_ || bits_->quiescent());
}

int TwoLevelMarsitSequence::waitingOn() const {
  if (intra_ && running(intraStatus_)) return intra_->waitingOn();
  if (scalar_ && running(scalarStatus_) && scalar_->waitingOn() >= 0) return scalar_->waitingOn();
  if (bits_ && running(bitsStatus_)) return bits_->waitingOn();
  return -1;
}

}  // namespace tsr::marsit
