// One two-level compressed step (compressed_hier.h) on device memory: the direct device path
// (algorithms/team/device_path.h) for intra=none|fp16, the stages of compressed_hier_step.h with every
// vector where the tensor's StepKernels run:
//   seq:   x = g + q, the f16 cast and what it drops (q' = x - f16(x)) on the device, the row
//          ring's average with RunBuffers::memory = kCuda (f16 or f32 reduce and divide);
//   seq+1: the flag allreduce in host memory (the scans ran on the device);
//   seq+2: the shard compressed by the device codec (device_codec.h, the shard's compressor
//          chain, EF state on the device) into this rank's device slot, the column all-gather
//          of the slots on device buffers;
//   seq+3: the slots decoded and averaged in row order on the device, the row all-gather of
//          the blocks on device buffers; then g = the result, q = q'.
// Results and state equal the host step's bit for bit (the same per-element code and order).
// Tested with a host-memory fake device over UCX (on a GPU: docs/gpu.md).
#pragma once

#include <memory>

#include "algorithms/compressed/compressed_device.h"
#include "algorithms/compressed/compressed_hier.h"
#include "algorithms/compressed/compressed_hier_step_sequence.h"

namespace tsr::compressed {

// A two-level tensor's device arrays (CompressedDevice::create makes them when s.hier is set).
struct CompressedHierDevice {
  algorithms::DeviceBlock work, intraResidual, nextResidual, dropped, intra, rowScratch, shard, columnScratch, block,
      result, rowGatherScratch;
  static Status create(const std::shared_ptr<algorithms::StepKernels>& kernels, const CompressedState& s,
                       const std::string& who, CompressedHierDevice& into);
};

// twoLevelResidual (compressed_hier.h) of a direct tensor: q and the shard's EF error read
// back from the device.
void twoLevelDeviceResidual(const CompressedState& s, float* out);

class CompressedHierDeviceStepTask final : public TwoLevelStepSequence {
 public:
  CompressedHierDeviceStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx);
  std::string describe() const override {
    return "two-level compressed allreduce of device tensor " + state_->name +
           " (direct: device kernels, device buffers to the transport)";
  }

 private:
  Status prepareIntra() override;
  Result<size_t> takeShard() override;
  float workValue(size_t index) override;
  Status fillSlot() override;
  Status averageColumn() override;
  Status writeResult() override;
  algorithms::RunBuffers stageBuffers(Stage stage) override;
  // The kernels' and codec's errors, prefixed with the tensor, rank and path.
  Status named(const Status& st) const;
};

}  // namespace tsr::compressed
