// One two-level Marsit step (hier_plan.h), a schedule (algorithms/plan/schedule_task.h) of:
//   seq:     x = g + r (r: what the last f16 cast dropped), cast to the intra type
//            (r = x - f16(x), a non-finite difference kept as 0), the row reduce-scatter
//            average over the host's ranks: this rank gets its row block s;
//   pack:    s' = s + c on the block, its NaN/Inf scan, sum |s'| and sign words at the block's
//            place in the whole bit vector; with pack=chunked (host memory) the bit plan's
//            kLocal ops do it chunk by chunk in the order the column ring sends them;
//   seq+2:   the bit plan (Marsit across hosts, then the row all-gather);
//   seq+1:   beside it, once the block is packed, the [sum |s'|, ranks with NaN/Inf]
//            allreduce;
//   end:     any rank with NaN/Inf fails the step on every rank, nothing changed; else
//            G = eta (2 bit - 1) into g and c = s' - G on the block.
// eta is the mean over hosts of mean |s'|: each host's ranks together hold every element once.
// A full-precision step (every K) averages y = x + X c (c placed at the block, X = ranks per
// host: c is in units of a host average) with the dense plan instead, which accounts for
// everything that was kept back, and resets c and r.
// One task for host memory and the direct device path (marsit_device.h): every vector step
// runs through the StepKernels seam, so both give the same bits.
#pragma once

#include <memory>
#include <string>

#include "algorithms/marsit/marsit_step.h"

namespace tsr::marsit {

class MarsitHierStepTask final : public MarsitStepBase {
 public:
  MarsitHierStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx);

 private:
  Status addStages() override;
  Result<std::unique_ptr<algorithms::Task>> beginIntra();
  Status prepareIntra();
  Status packBlock();
  Status packWhole();
  Status packChunk(const algorithms::PlanOp& op);  // a kLocal op of the bit plan (host memory)
  void shardSum(size_t begin, size_t end);         // s' = s + c on [begin, end) of the block (host)
  // The block's first bad index (shard-relative) and sum |s'| into the scalars.
  void scalarsReady(size_t badInBlock, double sumAbs);
  algorithms::RunBuffers onPlace(void* data, void* scratch) const;
  algorithms::RunBuffers bitBuffers() override;
  Status finish() override;
  Status writeResult();

  size_t packedElems_ = 0;  // of the block (padding included), chunk by chunk
  double localUs_ = 0;      // spent in kLocal ops: prepare's and pack's, not the wire's
};

}  // namespace tsr::marsit
