// The stages of a flat compressed step (a schedule: algorithms/plan/schedule_task.h), shared by
// the host task (compressed_step.h) and the direct device task (compressed_device_step.h):
//   seq:   allreduce of [ranks with NaN/Inf in g]; any > 0 fails the step on every rank before
//          a compressor changes state;
//   seq+1: this rank's slot filled, the all-gather of the slots; then the slots averaged into g.
// The subclass says only where the data lives: how NaN/Inf is found, how the slot is filled
// (and on which memory the gather runs), how the slots are averaged.
#pragma once

#include <memory>
#include <string>

#include "algorithms/plan/schedule_task.h"

namespace tsr::compressed {

struct CompressedState;  // compressed_step.h

class FlatStepSequence : public algorithms::ScheduleTask {
 protected:
  FlatStepSequence(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx);

  // Index of the first NaN/Inf in g (count if none).
  virtual Result<size_t> findNonFinite() = 0;
  // g[index], for the error message only.
  virtual float valueOfG(size_t index) = 0;
  // Compresses g into this rank's slot; returns the buffers the gather of the slots runs on.
  virtual Result<algorithms::RunBuffers> fillSlot() = 0;
  // Decodes the gathered slots and writes their average to g.
  virtual Status averageSlots() = 0;

  std::shared_ptr<CompressedState> state_;

 private:
  Status addStages() final;
  Result<std::unique_ptr<algorithms::Task>> beginFlag();
  Result<std::unique_ptr<algorithms::Task>> beginGather();
  Status finish();
};

// The errors of a gathered slot, worded the same on every path (from: the sender's rank).
Status oversizedPayload(const CompressedState& s, int from, uint64_t length);
Status undecodablePayload(const CompressedState& s, int from, const Status& why);

}  // namespace tsr::compressed
