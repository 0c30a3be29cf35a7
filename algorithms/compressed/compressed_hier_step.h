// One two-level compressed step (compressed_hier.h) as a progress-thread task:
//   seq:   the host's ranks average g + q (f32 or f16) over the row ring;
//   seq+1: the flag allreduce [ranks with NaN/Inf (or f16 overflow) in g + q, shards whose
//          host average is not finite]: any > 0 fails the step on every rank, nothing changed;
//   seq+2: compress the shard into this rank's slot, all-gather the slots over the column;
//   seq+3: decode and average them into the block, all-gather the blocks over the row;
//   end:   g = the gathered result, q = q'.
// The staging is TwoLevelStepSequence's (compressed_hier_step_sequence.h); this task does the
// host math.
#pragma once

#include <memory>

#include "algorithms/compressed/compressed_hier.h"
#include "algorithms/compressed/compressed_hier_step_sequence.h"
#include "algorithms/compressed/compressed_step.h"

namespace tsr::compressed {

class CompressedHierStepTask final : public TwoLevelStepSequence {
 public:
  CompressedHierStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx);
  std::string describe() const override { return "two-level compressed allreduce of tensor " + state_->name; }

 private:
  Status prepareIntra() override;
  Result<size_t> takeShard() override;
  float workValue(size_t index) override;
  Status fillSlot() override;
  Status averageColumn() override;
  Status writeResult() override;
  algorithms::RunBuffers stageBuffers(Stage stage) override;
};

}  // namespace tsr::compressed
