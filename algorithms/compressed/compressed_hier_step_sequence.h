// The stages of a two-level compressed step (compressed_hier.h; a schedule: algorithms/plan/
// schedule_task.h), shared by the host task (compressed_hier_step.h) and the direct device task
// (compressed_hier_device_step.h):
//   seq:   prepareIntra (x = g + q in the intra type, q' = what the cast drops), row average;
//   seq+1: takeShard, then the flag allreduce [ranks with NaN/Inf in g + q, shards whose host
//          average is not finite]: any > 0 fails the step on every rank, nothing changed;
//   seq+2: fillSlot (compress the shard: EF and the compressor's step change only now),
//          the column all-gather of the slots;
//   seq+3: averageColumn (decode the slots in row order into the block), the row all-gather;
//   end:   writeResult (g = the gathered result, q = q').
// The subclass says only where the data lives: the stage hooks and the buffers each plan runs on.
#pragma once

#include <memory>

#include "algorithms/plan/schedule_task.h"

namespace tsr::compressed {

struct CompressedState;  // compressed_step.h
struct CompressedHier;   // compressed_hier.h

class TwoLevelStepSequence : public algorithms::ScheduleTask {
 protected:
  // The stages that run a plan; the value is the plan's sequence number offset.
  enum Stage { kIntra, kFlag, kColumn, kRow };
  TwoLevelStepSequence(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx);

  // Sets h_.work, h_.badIndex and h_.overflow and the intra vector the row averages.
  virtual Status prepareIntra() = 0;
  // Copies this rank's shard out of the host average; the index of its first NaN/Inf
  // (shardReal if none).
  virtual Result<size_t> takeShard() = 0;
  // (g + q)[index], for the error message only.
  virtual float workValue(size_t index) = 0;
  // Compresses the shard into this rank's slot (length 0 when the shard is empty).
  virtual Status fillSlot() = 0;
  // Decodes the column's slots and writes their average to the block.
  virtual Status averageColumn() = 0;
  // g = the gathered result; q = q' (intra=fp16).
  virtual Status writeResult() = 0;
  // Where the plan of kIntra, kColumn or kRow runs (the flags are always host scalars).
  virtual algorithms::RunBuffers stageBuffers(Stage stage) = 0;

  std::shared_ptr<CompressedState> state_;
  CompressedHier& h_;

 private:
  Status addStages() final;
  Result<std::unique_ptr<algorithms::Task>> beginFlag();
  Result<std::unique_ptr<algorithms::Task>> beginColumn();
  Result<std::unique_ptr<algorithms::Task>> beginRow();
  Status finish();
  Status nonFiniteFailure();
};

}  // namespace tsr::compressed
