#include "algorithms/compressed/compressed_step_sequence.h"

#include "algorithms/compressed/compressed_step.h"
#include "base/summed_count.h"

namespace tsr::compressed {

FlatStepSequence::FlatStepSequence(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx)
    : ScheduleTask(ctx), state_(std::move(state)) {}

Status FlatStepSequence::addStages() {
  StageId flag = addStage({}, [this] { return beginFlag(); });
  StageId gather = addStage({flag}, [this] { return beginGather(); });
  addStage({gather}, [this] { return localOnly(finish()); });
  return Status::ok();
}

Result<std::unique_ptr<algorithms::Task>> FlatStepSequence::beginFlag() {
  CompressedState& s = *state_;
  auto bad = findNonFinite();
  if (!bad.isOk()) return bad.status();
  s.badIndex = bad.value();
  s.flagIn[0] = s.badIndex < s.count ? 1.0 : 0.0;
  return runPlan(0, s.flagPlan, algorithms::RunBuffers{s.flagIn, s.flagOut, s.flagScratch.data()});
}

Result<std::unique_ptr<algorithms::Task>> FlatStepSequence::beginGather() {
  CompressedState& s = *state_;
  if (s.flagOut[0] > 0) {
    bool mine = s.badIndex < s.count;
    return Status(Code::kNumericError,
                  "compressed tensor " + s.name + ": " + summedCount(s.flagOut[0], s.size, "rank(s)") +
                      " had NaN or Inf" +
                      (mine ? " (rank " + std::to_string(s.rank) + ": element " + std::to_string(s.badIndex) + " is " +
                                  std::to_string(valueOfG(s.badIndex)) + ")"
                            : std::string()) +
                      "; the tensor and its residual are unchanged");
  }
  auto buffers = fillSlot();
  if (!buffers.isOk()) return buffers.status();
  return runPlan(1, s.gatherPlan, buffers.value());
}

Status FlatStepSequence::finish() {
  TSR_RETURN_IF_ERROR(averageSlots());
  ++state_->step;
  return Status::ok();
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
