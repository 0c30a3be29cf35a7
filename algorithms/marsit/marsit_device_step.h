// One Marsit step on device memory: the direct device path (algorithms/team/device_staging.h), taken
// when the transport moves CUDA memory. The tensor's gradient, compensation, work vector,
// packed bits and plan scratch all live where its StepKernels run (step_kernels.h); the bit
// plan (ring or torus) and, every K steps, the full-precision plan run with
// RunBuffers::memory = kCuda, so their payloads go to the transport as device buffers and the
// executor's merges, copies and reductions run through the same kernels. Only the scalar
// allreduce (eta per scale block, NaN/Inf count) and the plans' headers stay in host memory.
// Scale blocks beyond the first cost one sumAbs and one signFinish call each, and momentum
// five vector calls (scale, copy, scale, two adds: kernels::momentumHandOff's operations).
//
// The schedule is pack=whole's (the whole vector prepared before the plans start): results
// equal the host path's bit for bit either way (marsit_step.h); packing chunk by chunk on the
// device is not built. Two-level Marsit's device step is marsit_hier_device_step.h.
#pragma once

#include <memory>

#include "algorithms/marsit/marsit_step.h"
#include "algorithms/plan/device_block.h"
#include "algorithms/plan/step_kernels.h"

namespace tsr::marsit {

using algorithms::DeviceBlock;  // plan/device_block.h

// A tensor's state on the device (the compensation lives here, where the math runs).
struct MarsitDeviceArrays {
  std::shared_ptr<algorithms::StepKernels> kernels;
  DeviceBlock comp, work, bits, bitScratch, fullScratch;
  DeviceBlock prev, shift;  // momentum > 0: M and c + mu M (MarsitState::prev, shift)
  // Two-level only (marsit_hier_device_step.h): the padded intra-host vector (intraType) and
  // its plan's scratch, what the f16 cast, sums and division dropped (count floats), the row
  // block's s' and G, and the host ring's f16 rounding of this step (padded floats).
  DeviceBlock intra, rowScratch, intraResidual, shard, shardOut, dropped;
  static Result<std::shared_ptr<MarsitDeviceArrays>> create(std::shared_ptr<algorithms::StepKernels> kernels,
                                                            const MarsitState& s);
};

class MarsitDeviceStepTask final : public FlatMarsitSequence {
 public:
  MarsitDeviceStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx);
  std::string describe() const override {
    return "marsit allreduce of device tensor " + state_->name +
           " (direct: device kernels, device buffers to the transport)";
  }

 private:
  Status prepare() override;
  algorithms::RunBuffers bitBuffers() override;
  float workValue(size_t index) override;
  Status writeResult() override;
  Status named(const Status& st) const;
};

}  // namespace tsr::marsit

namespace tsr::marsit {
// Ok when g holds the tensor's count floats in the direct path's device memory; else the
// error names the tensor, the rank and the kernels (algorithms/team/tensor_step.h calls it).
Status checkDirect(const MarsitState& s, const float* g);
}  // namespace tsr::marsit
