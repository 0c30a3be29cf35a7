// The stages of a flat Marsit step (a schedule: algorithms/plan/schedule_task.h), shared by the
// host task (marsit_step.h) and the direct device task (marsit_device_step.h):
//   prepare: g' = g + c, whole, or left to the bit plan's kLocal ops chunk by chunk;
//   seq+1: the bit plan (or, every K steps, the dense full-precision plan) on g' = g + c;
//   seq:   beside it, the scalar allreduce [mean|g'| of each scale block, ranks with NaN/Inf],
//          started once every element is packed (at once unless packing runs inside the plan).
//   end:   any rank with NaN/Inf fails the step on every rank, nothing changed; else the
//          subclass writes G = eta_b * (2 bit - 1) into g and c = g' - G (then the momentum
//          hand-off, marsit.h).
// The subclass says only where the data lives: how g' is prepared, which buffers the bit plan
// runs on, how a bad value is read back for the message, how the result is written.
#pragma once

#include <memory>

#include "algorithms/plan/schedule_task.h"

namespace tsr::marsit {

struct MarsitState;  // marsit_step.h

class FlatMarsitSequence : public algorithms::ScheduleTask {
 protected:
  FlatMarsitSequence(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx);

  // Prepares g' (whole, or sets chunked_ so the bit plan's kLocal ops pack it); calls
  // scalarsReady once every element is packed. full_ is set.
  virtual Status prepare() = 0;
  // Where the bit plan (full_: the full-precision plan) runs.
  virtual algorithms::RunBuffers bitBuffers() = 0;
  // g'[index], for the error message only.
  virtual float workValue(size_t index) = 0;
  // g = G and c = g' - G (full_: g = the average, c = 0).
  virtual Status writeResult() = 0;

  // The scan's first bad index (count if none) and the state's blockSums (sum |g'| per scale
  // block; not read when bad) into the scalars.
  void scalarsReady(size_t badIndex);

  std::shared_ptr<MarsitState> state_;
  bool full_ = false;
  bool chunked_ = false;  // packing inside the bit plan: the scalars wait for the last chunk
  double startUs_ = 0;

 private:
  Status addStages() final;
  Status finish();

  bool packed_ = false;  // every element packed, the scalars set
  StageId bits_ = 0;
};

}  // namespace tsr::marsit
