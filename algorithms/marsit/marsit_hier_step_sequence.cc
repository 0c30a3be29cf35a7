#include "algorithms/marsit/marsit_hier_step_sequence.h"

#include <algorithm>
#include <cstdint>

#include "algorithms/marsit/marsit_step.h"

namespace tsr::marsit {

TwoLevelMarsitSequence::TwoLevelMarsitSequence(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : ScheduleTask(ctx), state_(std::move(state)) {}

Status TwoLevelMarsitSequence::addStages() {
  MarsitState& s = *state_;
  startUs_ = nowUs();
  s.times = StepTimes{};
  full_ = s.fullPrecisionStep();
  s.times.fullPrecision = full_;
  s.mergeNanos = 0;
  chunked_ = false;
  packed_ = false;
  localUs_ = 0;
  StageId intra = addStage({}, [this] { return beginIntra(); });
  // Stage 2: this rank's row block plus its compensation, packed; scalar and bits side by side.
  // Chunked, the first chunk is packed and sent as the bit plan starts; the scalar allreduce
  // waits for the last chunk (its sum and NaN/Inf scan).
  StageId packed = addStage({intra}, [this] {
    packed_ = full_;
    return localOnly(full_ ? Status::ok() : packBlock());
  });
  StageId scalars = addStage(
      {packed},
      [this, &s] {
        return runPlan(1, s.scalarPlan,
                       algorithms::RunBuffers{s.scalarIn.data(), s.scalarOut.data(), s.scalarScratch.data()});
      },
      [this] { return packed_; });
  bits_ = addStage({packed}, [this, &s] { return runPlan(2, full_ ? s.fullPlan : s.hier.bits, bitBuffers()); });
  addStage({scalars, bits_}, [this] { return localOnly(finish()); });
  return Status::ok();
}

// Stage 1: the intra-host vector and the row reduce-scatter; a full-precision step skips the
// reduce-scatter (y goes to the dense plan whole).
Result<std::unique_ptr<algorithms::Task>> TwoLevelMarsitSequence::beginIntra() {
  MarsitState& s = *state_;
  TSR_RETURN_IF_ERROR(prepareIntra());
  s.times.prepare = nowUs() - startUs_;
  if (!full_) return runPlan(0, s.hier.rowReduceScatter, intraBuffers());
  s.scalarIn[0] = 0;
  s.scalarIn[1] = s.badIndex < s.count ? 1.0 : 0.0;
  return localOnly(Status::ok());
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

Status TwoLevelMarsitSequence::finish() {
  MarsitState& s = *state_;
  s.times.merge = s.mergeNanos / 1000.0;
  s.times.wire = std::max(0.0, childEndUs(bits_) - childStartUs(bits_) - s.times.merge - localUs_);
  if (s.scalarOut[1] > 0) {
    bool mine = s.badIndex < s.count;
    return numericError(s, mine ? s.badIndex : SIZE_MAX, mine ? workValue(s.badIndex) : 0.0f);
  }
  TSR_RETURN_IF_ERROR(writeResult());
  ++s.step;
  s.times.total = nowUs() - startUs_;
  return Status::ok();
}

}  // namespace tsr::marsit
