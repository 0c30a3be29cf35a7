// One two-level compressed step (compressed_hier.h), a schedule of four plans
// (algorithms/plan/schedule_task.h):
//   seq:   x = g + q, cast to the intra type (q' = what the cast drops), the host's ranks
//          average it (f32 or f16) over the row ring;
//   seq+1: this rank's shard of the host average, then the flag allreduce [ranks with NaN/Inf
//          (or f16 overflow) in g + q, shards whose host average is not finite or that the
//          column's compressor would refuse]: any > 0
//          fails the step on every rank, nothing changed;
//   seq+2: encode the shard into this rank's slot (Compressor::encode: nothing changes yet),
//          all-gather the slots over the column;
//   seq+3: decode and average them in row order into the block, all-gather the blocks over
//          the row;
//   end:   the column compressor commits (its EF residual and momentum move on), g = the
//          gathered result, q = q'. A step failing before this leaves everything as it was.
// One task for both places the data can live: host memory (the shard's registry compressor)
// and the direct device path (compressed_hier_device.h: the device codec, every plan but the
// flags' on device buffers). Every vector step runs through the StepKernels seam
// (algorithms/plan/step_kernels.h), so the two give the same result bit for bit.
#pragma once

#include <memory>
#include <string>

#include "algorithms/compressed/compressed_hier.h"
#include "algorithms/compressed/compressed_step.h"

namespace tsr::compressed {

class CompressedHierStepTask final : public algorithms::ScheduleTask {
 public:
  CompressedHierStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx);
  std::string describe() const override;

 private:
  // Where this step's vectors live and which kernels reach them.
  struct Place {
    algorithms::StepKernels* kernels;
    float *work, *intraResidual, *nextResidual, *dropped, *shard, *block, *result, *decoded, *sum;
    void *intra, *rowScratch, *columnScratch, *rowGatherScratch;
    uint64_t *mine, *all;
  };
  // The plans' sequence number offsets.
  enum Stage : uint32_t { kIntra, kFlag, kColumn, kRow };

  Status addStages() override;
  Status prepareIntra();
  Result<std::unique_ptr<algorithms::Task>> beginFlag();
  Result<std::unique_ptr<algorithms::Task>> beginColumn();
  Result<std::unique_ptr<algorithms::Task>> beginRow();
  Status averageColumn();
  Status writeResult();
  Status nonFiniteFailure();
  // Where the plan of kIntra, kColumn or kRow runs (the flags are always host scalars).
  algorithms::RunBuffers stageBuffers(Stage stage) const;
  // Errors of the kernels and the device codec, prefixed with the tensor, rank and path.
  Status named(const Status& st) const;

  std::shared_ptr<CompressedState> state_;
  CompressedHier& h_;
  algorithms::HostStepKernels hostKernels_;
  Place at_;
};

}  // namespace tsr::compressed
