#include "algorithms/compressed/compressed_hier_step_sequence.h"

#include <algorithm>

#include "algorithms/compressed/compressed_hier.h"
#include "algorithms/compressed/compressed_step.h"
#include "base/summed_count.h"

namespace tsr::compressed {

namespace {
bool running(const Status& s) { return s.code() == Code::kInProgress; }
}  // namespace

TwoLevelStepSequence::TwoLevelStepSequence(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx)
    : state_(std::move(state)), h_(*state_->hier), ctx_(ctx) {}

Status TwoLevelStepSequence::run(Stage stage, std::shared_ptr<const algorithms::Plan> plan,
                                 const algorithms::RunBuffers& buffers) {
  algorithms::RunIdentity id = ctx_.id;
  id.seq += static_cast<uint32_t>(stage);
  stage_ = stage;
  exec_[stage] = std::make_unique<algorithms::PlanExecutor>(std::move(plan), buffers, id, ctx_.transport);
  stageStatus_ = exec_[stage]->start();
  return drive();
}

Status TwoLevelStepSequence::start() {
  Status st = prepareIntra();
  if (!st.isOk()) return fail(st);
  return run(kIntra, h_.rowPlan, stageBuffers(kIntra));
}

// The shard is checked with everyone's inputs before anything changes state.
Status TwoLevelStepSequence::afterIntra() {
  CompressedState& s = *state_;
  auto bad = takeShard();
  if (!bad.isOk()) return fail(bad.status());
  s.badIndex = bad.value();  // within the shard
  s.flagIn[0] = h_.badIndex < s.count ? 1.0 : 0.0;
  s.flagIn[1] = s.badIndex < h_.shardReal ? 1.0 : 0.0;
  return run(kFlag, s.flagPlan, algorithms::RunBuffers{s.flagIn, s.flagOut, s.flagScratch.data()});
}

Status TwoLevelStepSequence::afterFlag() {
  CompressedState& s = *state_;
  if (s.flagOut[0] > 0 || s.flagOut[1] > 0) return fail(nonFiniteFailure());
  Status st = fillSlot();
  if (!st.isOk()) return fail(st);
  return run(kColumn, h_.columnPlan, stageBuffers(kColumn));
}

Status TwoLevelStepSequence::afterColumn() {
  Status st = averageColumn();
  if (!st.isOk()) return fail(st);
  return run(kRow, h_.rowGatherPlan, stageBuffers(kRow));
}

Status TwoLevelStepSequence::finish() {
  Status st = writeResult();
  if (!st.isOk()) return fail(st);
  ++state_->step;
  result_ = Status::ok();
  return result_;
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

Status TwoLevelStepSequence::progress() {
  if (!running(result_)) return result_;
  if (exec_[stage_] && running(stageStatus_)) stageStatus_ = exec_[stage_]->progress();
  return drive();
}

Status TwoLevelStepSequence::drive() {
  if (!running(result_) || running(stageStatus_)) return result_;
  if (!stageStatus_.isOk()) return fail(stageStatus_);
  switch (stage_) {
    case kIntra:
      return afterIntra();
    case kFlag:
      return afterFlag();
    case kColumn:
      return afterColumn();
    default:
      return finish();
  }
}

Status TwoLevelStepSequence::fail(Status status) {
  if (running(result_)) result_ = std::move(status);
  if (exec_[stage_] && running(stageStatus_)) exec_[stage_]->abort(result_);
  return result_;
}

void TwoLevelStepSequence::abort(const Status& reason) { fail(reason).ignore(); }

bool TwoLevelStepSequence::quiescent() const {
  return std::all_of(std::begin(exec_), std::end(exec_), [](const auto& e) { return !e || e->quiescent(); });
}

int TwoLevelStepSequence::waitingOn() const {
  return exec_[stage_] && running(stageStatus_) ? exec_[stage_]->waitingOn() : -1;
}

}  // namespace tsr::compressed
