// The stages of a two-level Marsit step (hier_plan.h; a schedule: algorithms/plan/
// schedule_task.h), shared by the host task (marsit_hier_step.h) and the direct device task
// (marsit_hier_device_step.h):
//   seq:     prepareIntra (x = g + r cast to the intra type, r = what the cast drops), the row
//            reduce-scatter average: this rank gets its row block s. A full-precision step
//            skips it: prepareIntra makes y = x + X c and scans it, whole.
//   seq+2:   packBlock (s' = s + c, its signs, scan and sum; or sets chunked_ so the bit
//            plan's kLocal ops pack it), the bit plan (or the dense full-precision plan);
//   seq+1:   beside it, the eta/NaN scalar allreduce, once the block is packed.
//   end:     any rank with NaN/Inf fails the step on every rank, nothing changed; else
//            writeResult (G into g, c = s' - G on the block; full: g = y, c = r = 0).
// The subclass says only where the data lives.
#pragma once

#include <memory>

#include "algorithms/plan/schedule_task.h"

namespace tsr::marsit {

struct MarsitState;  // marsit_step.h

class TwoLevelMarsitSequence : public algorithms::ScheduleTask {
 protected:
  TwoLevelMarsitSequence(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx);

  // The intra-host vector (full_: y, whole, with s.badIndex its first NaN/Inf, count if none).
  virtual Status prepareIntra() = 0;
  // Where the row reduce-scatter runs.
  virtual algorithms::RunBuffers intraBuffers() = 0;
  // s' = s + c on the row block, packed (calls scalarsReady) or left to the bit plan's
  // kLocal ops (chunked_). Not called on a full-precision step.
  virtual Status packBlock() = 0;
  // Where the bit plan (full_: the full-precision plan) runs.
  virtual algorithms::RunBuffers bitBuffers() = 0;
  // y[index] (full_) or s'[index - shardOffset], for the error message only.
  virtual float workValue(size_t index) = 0;
  // g and c (and r) from the exchange; sets the decompress and compensate times.
  virtual Status writeResult() = 0;

  // The block's first bad index (shard-relative) and sum |s'| into the scalars.
  void scalarsReady(size_t badInBlock, double sumAbs);

  std::shared_ptr<MarsitState> state_;
  bool full_ = false;
  bool chunked_ = false;  // packing inside the bit plan: the scalars wait for the last chunk
  double localUs_ = 0;    // spent in kLocal ops: prepare's and pack's, not the wire's
  double startUs_ = 0;

 private:
  Status addStages() final;
  Result<std::unique_ptr<algorithms::Task>> beginIntra();
  Status finish();

  bool packed_ = false;  // the whole block packed, the scalars set
  StageId bits_ = 0;
};

}  // namespace tsr::marsit
