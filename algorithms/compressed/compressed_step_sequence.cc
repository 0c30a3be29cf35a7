#include "algorithms/compressed/compressed_step_sequence.h"

#include "algorithms/compressed/compressed_step.h"
#include "base/summed_count.h"

namespace tsr::compressed {

namespace {
bool running(const Status& s) { return s.code() == Code::kInProgress; }
}  // namespace

FlatStepSequence::FlatStepSequence(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

Status FlatStepSequence::start() {
  CompressedState& s = *state_;
  auto bad = findNonFinite();
  if (!bad.isOk()) return fail(bad.status());
  s.badIndex = bad.value();
  s.flagIn[0] = s.badIndex < s.count ? 1.0 : 0.0;
  flag_ = std::make_unique<algorithms::PlanExecutor>(
      s.flagPlan, algorithms::RunBuffers{s.flagIn, s.flagOut, s.flagScratch.data()}, ctx_.id, ctx_.transport);
  flagStatus_ = flag_->start();
  return drive();
}

Status FlatStepSequence::progress() {
  if (!running(status_)) return status_;
  if (flag_ && running(flagStatus_)) flagStatus_ = flag_->progress();
  if (gather_ && running(gatherStatus_)) gatherStatus_ = gather_->progress();
  return drive();
}

Status FlatStepSequence::drive() {
  for (const Status* st : {&flagStatus_, &gatherStatus_})
    if (!running(*st) && !st->isOk()) return fail(*st);
  if (running(flagStatus_)) return status_;
  if (!gather_) return startGather();
  if (running(gatherStatus_)) return status_;
  return finish();
}

Status FlatStepSequence::startGather() {
  CompressedState& s = *state_;
  if (s.flagOut[0] > 0) {
    bool mine = s.badIndex < s.count;
    return fail(Status(Code::kNumericError,
                       "compressed tensor " + s.name + ": " + summedCount(s.flagOut[0], s.size, "rank(s)") +
                           " had NaN or Inf" +
                           (mine ? " (rank " + std::to_string(s.rank) + ": element " + std::to_string(s.badIndex) +
                                       " is " + std::to_string(valueOfG(s.badIndex)) + ")"
                                 : std::string()) +
                           "; the tensor and its residual are unchanged"));
  }
  auto buffers = fillSlot();
  if (!buffers.isOk()) return fail(buffers.status());
  algorithms::RunIdentity id = ctx_.id;
  id.seq += 1;
  gather_ = std::make_unique<algorithms::PlanExecutor>(s.gatherPlan, buffers.value(), id, ctx_.transport);
  gatherStatus_ = gather_->start();
  return drive();
}

Status FlatStepSequence::finish() {
  Status st = averageSlots();
  if (!st.isOk()) return fail(st);
  ++state_->step;
  status_ = Status::ok();
  return status_;
}

Status FlatStepSequence::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  if (flag_ && running(flagStatus_)) flag_->abort(status_);
  if (gather_ && running(gatherStatus_)) gather_->abort(status_);
  return status_;
}

void FlatStepSequence::abort(const Status& reason) { fail(reason).ignore(); }

bool FlatStepSequence::quiescent() const {
  return (!flag_ || flag_->quiescent()) && (!gather_ || gather_->quiescent());
}

int FlatStepSequence::waitingOn() const {
  if (flag_ && running(flagStatus_)) return flag_->waitingOn();
  if (gather_ && running(gatherStatus_)) return gather_->waitingOn();
  return -1;
}

Status oversizedPayload(const CompressedState& s, int from, uint64_t length) {
  return Status(Code::kInvalidArgument, "compressed tensor " + s.name + ": rank " + std::to_string(from) +
                                            " sent a payload of " + std::to_string(length) +
                                            " bytes, more than its slot holds");
}

Status undecodablePayload(const CompressedState& s, int from, const Status& why) {
  return Status(why.code(),
                "compressed tensor " + s.name + ": payload of rank " + std::to_string(from) + ": " + why.message());
}

}  // namespace tsr::compressed
