#include "algorithms/compressed/compressed_hier_step_sequence.h"

#include "algorithms/compressed/compressed_hier.h"
#include "algorithms/compressed/compressed_step.h"
#include "base/summed_count.h"

namespace tsr::compressed {

TwoLevelStepSequence::TwoLevelStepSequence(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx)
    : ScheduleTask(ctx), state_(std::move(state)), h_(*state_->hier) {}

Status TwoLevelStepSequence::addStages() {
  StageId intra = addStage({}, [this]() -> Result<std::unique_ptr<algorithms::Task>> {
    TSR_RETURN_IF_ERROR(prepareIntra());
    return runPlan(kIntra, h_.rowPlan, stageBuffers(kIntra));
  });
  StageId flag = addStage({intra}, [this] { return beginFlag(); });
  StageId column = addStage({flag}, [this] { return beginColumn(); });
  StageId row = addStage({column}, [this] { return beginRow(); });
  addStage({row}, [this] { return localOnly(finish()); });
  return Status::ok();
}

// The shard is checked with everyone's inputs before anything changes state.
Result<std::unique_ptr<algorithms::Task>> TwoLevelStepSequence::beginFlag() {
  CompressedState& s = *state_;
  auto bad = takeShard();
  if (!bad.isOk()) return bad.status();
  s.badIndex = bad.value();  // within the shard
  s.flagIn[0] = h_.badIndex < s.count ? 1.0 : 0.0;
  s.flagIn[1] = s.badIndex < h_.shardReal ? 1.0 : 0.0;
  return runPlan(kFlag, s.flagPlan, algorithms::RunBuffers{s.flagIn, s.flagOut, s.flagScratch.data()});
}

Result<std::unique_ptr<algorithms::Task>> TwoLevelStepSequence::beginColumn() {
  CompressedState& s = *state_;
  if (s.flagOut[0] > 0 || s.flagOut[1] > 0) return nonFiniteFailure();
  TSR_RETURN_IF_ERROR(fillSlot());
  return runPlan(kColumn, h_.columnPlan, stageBuffers(kColumn));
}

Result<std::unique_ptr<algorithms::Task>> TwoLevelStepSequence::beginRow() {
  TSR_RETURN_IF_ERROR(averageColumn());
  return runPlan(kRow, h_.rowGatherPlan, stageBuffers(kRow));
}

Status TwoLevelStepSequence::finish() {
  TSR_RETURN_IF_ERROR(writeResult());
  ++state_->step;
  return Status::ok();
}

Status TwoLevelStepSequence::nonFiniteFailure() {
  CompressedState& s = *state_;
  std::string what = "compressed tensor " + s.name + ": ";
  if (s.flagOut[0] > 0) {
    what += summedCount(s.flagOut[0], s.size, "rank(s)") + " had NaN or Inf in gradient + residual";
    if (h_.badIndex < s.count)
      what += " (rank " + std::to_string(s.rank) + ": element " + std::to_string(h_.badIndex) + " is " +
              std::to_string(workValue(h_.badIndex)) + (h_.overflow ? ", beyond f16 (intra=fp16)" : "") + ")";
  } else {
    what += summedCount(s.flagOut[1], s.size, "host average block(s)") + " overflowed f16 (intra=fp16)";
    if (s.badIndex < h_.shardReal)
      what += " (rank " + std::to_string(s.rank) + ": element " + std::to_string(h_.shardOffset + s.badIndex) + ")";
  }
  return Status(Code::kNumericError, what + "; the tensor and its residual are unchanged");
}

}  // namespace tsr::compressed
