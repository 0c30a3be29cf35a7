// One step of a CompressedTensor as a progress-thread task:
//   seq:   allreduce of [ranks with NaN/Inf in g] (so no compressor changes state on a step
//          that fails);
//   seq+1: compress into this rank's slot (8-byte length, then the payload), ring all-gather
//          of the slots, decompress each and average into g.
// The sequencing is FlatStepSequence's (compressed_step_sequence.h); this task does the host math.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.h"
#include "algorithms/compressed/compressed_step_sequence.h"
#include "algorithms/plan/executor.h"
#include "algorithms/team/device_staging.h"
#include "algorithms/team/result_scale.h"
#include "algorithms/team/team.h"

namespace tsr::compressed {

struct CompressedHier;    // compressed_hier.h
struct CompressedDevice;  // compressed_device_step.h

struct CompressedState {
  std::string name;
  size_t count = 0;
  int rank = 0, size = 1;
  std::string algorithm;
  std::unique_ptr<compress::Compressor> compressor;  // two-level: of the shard (null if empty)
  std::shared_ptr<CompressedHier> hier;              // two-level (intra=); null: flat
  size_t slotWords = 0;                              // 8-byte words per rank's slot
  std::vector<uint64_t> mine, all;                   // one slot; size slots (two-level: column size)
  std::vector<float> decoded, sum;
  std::shared_ptr<const algorithms::Plan> flagPlan, gatherPlan;
  std::vector<uint64_t> flagScratch, gatherScratch;
  double flagIn[2] = {0, 0}, flagOut[2] = {0, 0};
  uint64_t step = 0;
  algorithms::RequestPtr pending;
  algorithms::ResultScale resultScale = algorithms::ResultScale::kNone;  // op= (algorithms/team/result_scale.h)
  std::shared_ptr<algorithms::DeviceStaging> staging;                    // device tensors only (memory=cuda)
  std::shared_ptr<CompressedDevice> device;                              // the direct device path (flat or two-level)
  float* g = nullptr;
  size_t badIndex = 0;
};

class CompressedStepTask final : public FlatStepSequence {
 public:
  CompressedStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx);
  std::string describe() const override { return "compressed allreduce of tensor " + state_->name; }

 private:
  Result<size_t> findNonFinite() override;
  float valueOfG(size_t index) override;
  Result<algorithms::RunBuffers> fillSlot() override;
  Status averageSlots() override;
};

}  // namespace tsr::compressed
