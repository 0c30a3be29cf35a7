#include "algorithms/marsit/marsit_step_sequence.h"

#include <algorithm>
#include <cstdint>

#include "algorithms/marsit/marsit_step.h"

namespace tsr::marsit {

FlatMarsitSequence::FlatMarsitSequence(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx)
    : ScheduleTask(ctx), state_(std::move(state)) {}

Status FlatMarsitSequence::addStages() {
  MarsitState& s = *state_;
  startUs_ = nowUs();
  s.times = StepTimes{};
  full_ = s.fullPrecisionStep();
  s.times.fullPrecision = full_;
  s.mergeNanos = 0;
  packed_ = false;
  chunked_ = false;
  StageId prepared = addStage({}, [this] { return localOnly(prepare()); });
  // Chunked, the first chunk is packed and sent as the bit plan starts; the scalar allreduce
  // waits for the last chunk (its sum and NaN/Inf scan).
  StageId scalars = addStage(
      {prepared},
      [this, &s] {
        return runPlan(0, s.scalarPlan,
                       algorithms::RunBuffers{s.scalarIn.data(), s.scalarOut.data(), s.scalarScratch.data()});
      },
      [this] { return packed_; });
  bits_ = addStage({prepared}, [this, &s] { return runPlan(1, full_ ? s.fullPlan : s.bitPlan, bitBuffers()); });
  addStage({scalars, bits_}, [this] { return localOnly(finish()); });
  return Status::ok();
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

Status FlatMarsitSequence::finish() {
  MarsitState& s = *state_;
  s.times.merge = s.mergeNanos / 1000.0;
  // Chunked, the packing ran inside the bit plan: it is prepare's, not the wire's.
  s.times.wire =
      std::max(0.0, childEndUs(bits_) - childStartUs(bits_) - s.times.merge - (chunked_ ? s.times.prepare : 0.0));
  if (s.scalarOut.back() > 0) {
    bool mine = s.badIndex < s.count;
    return numericError(s, mine ? s.badIndex : SIZE_MAX, mine ? workValue(s.badIndex) : 0.0f);
  }
  double t = nowUs();
  TSR_RETURN_IF_ERROR(writeResult());
  s.times.decompress = nowUs() - t;
  ++s.step;
  s.times.total = nowUs() - startUs_;
  return Status::ok();
}

}  // namespace tsr::marsit
