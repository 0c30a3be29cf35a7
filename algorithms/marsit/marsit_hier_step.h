// One two-level Marsit step (hier_plan.h) as a progress-thread task, in two stages:
//   stage 1 (seq):     x = g + r (r: what the last f16 cast dropped), cast to the intra type
//                      (r = x - f16(x)), average over the host's ranks: this rank gets its
//                      row block s.
//   stage 2 (seq+1,2): the bit plan (Marsit across hosts, then the row all-gather), whose
//                      kLocal ops pack s' = s + c chunk by chunk (signs, NaN/Inf scan, block
//                      sums of |s'|: piecewise_prepare.h) in the order the column ring sends
//                      them; once the block is packed, the eta/NaN scalar allreduce beside it.
//                      With pack=whole the block is packed first and both start together.
//   end:               G = eta * (2 bit - 1) into g, c = s' - G on the block.
// eta is the mean over hosts of mean |s'|: each host's ranks together hold every element once.
// A full-precision step (every K) averages y = x + X c (c placed at the block, X = ranks per
// host: c is in units of a host average) with the dense plan, which accounts for everything
// that was kept back, and resets c and r.
#pragma once

#include "algorithms/marsit/marsit_hier_step_sequence.h"
#include "algorithms/marsit/marsit_step.h"

namespace tsr::marsit {

// The host form, packing chunk by chunk inside the bit plan when params.chunkedPack (the
// sequencing: marsit_hier_step_sequence.h).
class MarsitHierStepTask final : public TwoLevelMarsitSequence {
 public:
  MarsitHierStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx);
  std::string describe() const override { return "two-level marsit allreduce of tensor " + state_->name; }

 private:
  Status prepareIntra() override;
  algorithms::RunBuffers intraBuffers() override;
  Status packBlock() override;
  algorithms::RunBuffers bitBuffers() override;
  float workValue(size_t index) override;
  Status writeResult() override;
  void shardSum(size_t begin, size_t end);  // s' = s + c on [begin, end) of the block
  void packWhole();
  Status packChunk(const algorithms::PlanOp& op);  // a kLocal op of the bit plan

  size_t packedElems_ = 0;  // of the block (padding included)
  kernels::RngStream coin_{};
};

}  // namespace tsr::marsit
