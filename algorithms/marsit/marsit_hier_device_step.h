// One two-level Marsit step on device memory (the direct device path, algorithms/team/device_path.h):
// the schedule of marsit_hier_step.h with every vector where the tensor's StepKernels run,
//   stage 1 (seq):     x = g + r on the device, cast to the intra type there (r = x - f16(x),
//                      StepKernels::castResidual), then the row reduce-scatter average with
//                      RunBuffers::memory = kCuda (f16 or f32 reduce and divide on the device);
//   stage 2 (seq+1,2): s' = s + c on the row block, its NaN/Inf scan, sum |s'| and sign words
//                      at the block's place (signPack's firstWord) on the device, then the bit
//                      plan (Marsit across hosts and the row all-gather) on device buffers and
//                      the 2-double scalar allreduce in host memory beside it;
//   end:               G = eta (2 bit - 1) into g, c = s' - G on the block, on the device.
// A full-precision step: y = x + X c on the device, the dense plan on device buffers.
// The pack=whole schedule (the block packed before the plan starts; results equal pack=
// chunked's bit for bit, marsit_hier_step.h): a pack=chunked plan's kLocal ops do nothing.
// Tested with a host-memory fake device over UCX (on a GPU: docs/gpu.md).
#pragma once

#include "algorithms/marsit/marsit_device.h"
#include "algorithms/marsit/marsit_hier_step_sequence.h"

namespace tsr::marsit {

class MarsitHierDeviceStepTask final : public TwoLevelMarsitSequence {
 public:
  MarsitHierDeviceStepTask(std::shared_ptr<MarsitState> state, const algorithms::TaskContext& ctx);
  std::string describe() const override {
    return "two-level marsit allreduce of device tensor " + state_->name +
           " (direct: device kernels, device buffers to the transport)";
  }

 private:
  Status prepareIntra() override;
  algorithms::RunBuffers intraBuffers() override;
  Status packBlock() override;
  algorithms::RunBuffers bitBuffers() override;
  float workValue(size_t index) override;
  Status writeResult() override;
  Status packWhole();
  Status named(const Status& st) const;
  algorithms::RunBuffers deviceBuffers(void* data, void* scratch) const;
};

}  // namespace tsr::marsit
