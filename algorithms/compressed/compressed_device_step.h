// One flat CompressedTensor step on device memory: the direct device path
// (algorithms/team/device_path.h), taken when the transport moves CUDA memory and the tensor's
// compressor has a device form (device_codec.h). The same two runs as the host step
// (compressed_step.h):
//   seq:   allreduce of [ranks with NaN/Inf in g] (host scalars: the scan runs on the device);
//   seq+1: compress on the device into this rank's device slot (8-byte length, written from
//          the host, then the payload), the ring all-gather of the slots with
//          RunBuffers::memory = kCuda (payloads posted to the transport as device buffers, its
//          copies through the kernels), then each slot decompressed and summed in rank order
//          and the sum times 1/N written to g, all on the device.
// Results equal the host path's bit for bit: the same per-element code, the same order. Only
// the NaN flag, the plan headers and the N slot lengths (8 bytes each) touch host memory.
#pragma once

#include <memory>

#include "algorithms/compressed/compressed_step.h"
#include "algorithms/compressed/device_codec.h"

namespace tsr::compressed {

struct CompressedHierDevice;  // compressed_hier_device_step.h

// A tensor's device arrays: its slot, the gathered slots, plan scratch, decode and sum.
// Two-level (s.hier): the codec is the shard's (null when the shard is empty), `all` holds the
// column's slots, decoded and sum the shard's elements, and `hier` the rest.
struct CompressedDevice {
  std::shared_ptr<algorithms::StepKernels> kernels;
  std::unique_ptr<DeviceCodec> codec;
  algorithms::DeviceBlock mine, all, gatherScratch, decoded, sum;
  std::shared_ptr<CompressedHierDevice> hier;
  static Result<std::shared_ptr<CompressedDevice>> create(std::shared_ptr<algorithms::StepKernels> kernels,
                                                          const CompressedState& s);
};

class CompressedDeviceStepTask final : public FlatStepSequence {
 public:
  CompressedDeviceStepTask(std::shared_ptr<CompressedState> state, const algorithms::TaskContext& ctx);
  std::string describe() const override {
    return "compressed allreduce of device tensor " + state_->name +
           " (direct: device kernels, device buffers to the transport)";
  }

 private:
  Result<size_t> findNonFinite() override;
  float valueOfG(size_t index) override;
  Result<algorithms::RunBuffers> fillSlot() override;
  Status averageSlots() override;
  // The kernels' and codec's errors, prefixed with the tensor, rank and path.
  Status named(const Status& st) const;
};

// Ok when g holds the tensor's count floats in the direct path's device memory; else the error
// names the tensor, the rank and the kernels (algorithms/team/tensor_step.h calls it).
Status checkDirect(const CompressedState& s, const float* g);

}  // namespace tsr::compressed
