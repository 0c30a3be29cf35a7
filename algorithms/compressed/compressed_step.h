// One flat step of a CompressedTensor, a schedule of two plans (algorithms/plan/schedule_task.h):
//   seq:   allreduce of [ranks with NaN/Inf in g] (so no compressor changes state on a step
//          that fails);
//   seq+1: compress into this rank's slot (8-byte length, then the payload), ring all-gather
//          of the slots, decompress each and average into g (summed in rank order, times 1/N);
//          only then does the compressor commit (Compressor::encode/commit): a step failing in
//          its exchange leaves the residual and the momentum as they were.
// With the momentum hand-off (optimizer_momentum = mu > 0) the step compresses g + mu M
// instead of g (M: the last average, the same on every rank) and leaves M' - mu M, M = M':
// an optimizer with momentum mu then holds M' in its buffer, the compressed estimate of the
// momentum itself, so the buffer no longer compounds the compressor's errors (the remedy
// Marsit uses; docs/convergence.md).
// One task for both places the data can live: host memory (the registry's compressor chain,
// the CPU kernels) and the direct device path (compressed_device.h: the device codec, the
// device kernels, RunBuffers::memory = kCuda so the slots go to the transport as device
// buffers; only the NaN flag, the plan headers and the N slot lengths touch host memory).
// Every vector step runs through the StepKernels seam (algorithms/plan/step_kernels.h), so the
// two give the same result bit for bit: the same per-element code, the same order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.h"
#include "algorithms/plan/schedule_task.h"
#include "algorithms/plan/step_kernels.h"
#include "algorithms/team/device_staging.h"
#include "algorithms/team/first_step_agreement.h"
#include "algorithms/team/result_scale.h"
#include "algorithms/team/team.h"

namespace tsr::compressed {

struct CompressedHier;    // compressed_hier.h
struct CompressedDevice;  // compressed_device.h

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
  std::string settings;                                      // settingsText() beside the algorithm: the seed
  std::shared_ptr<algorithms::SettingsAgreement> agreement;  // checked before the first step (null: not)
  algorithms::ResultScale resultScale = algorithms::ResultScale::kNone;  // op= (algorithms/team/result_scale.h)
  std::shared_ptr<algorithms::DeviceStaging> staging;                    // device tensors only (memory=cuda)
  std::shared_ptr<CompressedDevice> device;                              // the direct device path (flat or two-level)
  float handoff = 0.0f;         // optimizer_momentum: the hand-off's mu (0: none)
  std::vector<float> estimate;  // the hand-off's M (count floats; on the direct path: the device's)
  float* g = nullptr;
  size_t badIndex = 0;
  bool unencodable = false;  // badIndex is finite in g, but the compressor cannot take it (EF, f16)
};

class CompressedStepTask final : public algorithms::ScheduleTask {
 public:
  CompressedStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx);
  std::string describe() const override;

 private:
  // Where this step's vectors live and which kernels reach them.
  struct Place {
    algorithms::StepKernels* kernels;
    uint64_t *mine, *all;
    void* gatherScratch;
    float *decoded, *sum, *estimate;
  };
  Status addStages() override;
  Result<std::unique_ptr<algorithms::Task>> beginFlag();
  Result<std::unique_ptr<algorithms::Task>> beginGather();
  Status averageSlots();
  Status handOff();
  // The compressor's (or device codec's) encode into this rank's slot, and its commit once the
  // step has ended: a step that fails in its exchange leaves the residual and momentum as they were.
  Result<size_t> compress(const float* input, std::byte* payload);
  Status commit();
  Status decompress(const std::byte* payload, uint64_t bytes, float* out);
  // Errors of the kernels and the device codec, prefixed with the tensor, rank and path.
  Status named(const Status& st) const;

  std::shared_ptr<CompressedState> state_;
  algorithms::HostStepKernels hostKernels_;
  Place at_;
  const float* input_ = nullptr;  // what this step compresses: g, or g + mu M (the hand-off)
};

// The errors of a gathered slot, worded the same on every path (from: the sender's rank).
Status oversizedPayload(const CompressedState& s, int from, uint64_t length);
Status undecodablePayload(const CompressedState& s, int from, const Status& why);

}  // namespace tsr::compressed
