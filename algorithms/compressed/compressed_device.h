// A compressed tensor's arrays on the direct device path (algorithms/team/device_path.h),
// taken when the transport moves CUDA memory and the tensor's compressor has a device form
// (device_codec.h): its slot, the gathered slots, plan scratch, decode and sum, where its
// StepKernels run. The flat step (compressed_step.h) runs on them with the device kernels;
// the two-level step's own arrays are compressed_hier_device.h's.
#pragma once

#include <memory>

#include "algorithms/compressed/compressed_step.h"
#include "algorithms/compressed/device_codec.h"
#include "algorithms/plan/device_block.h"

namespace tsr::compressed {

struct CompressedHierDevice;  // compressed_hier_device.h

// A tensor's device arrays: its slot, the gathered slots, plan scratch, decode and sum.
// Two-level (s.hier): the codec is the shard's (null when the shard is empty), `all` holds the
// column's slots, decoded and sum the shard's elements, and `hier` the rest.
struct CompressedDevice {
  std::shared_ptr<algorithms::StepKernels> kernels;
  std::unique_ptr<DeviceCodec> codec;
  algorithms::DeviceBlock mine, all, gatherScratch, decoded, sum;
  algorithms::DeviceBlock estimate;  // the momentum hand-off's M (flat, optimizer_momentum > 0)
  std::shared_ptr<CompressedHierDevice> hier;
  static Result<std::shared_ptr<CompressedDevice>> create(std::shared_ptr<algorithms::StepKernels> kernels,
                                                          const CompressedState& s);
};

// "compressed tensor NAME (rank R, direct device path)": the prefix of the path's errors.
std::string whoOf(const CompressedState& s);

// Ok when g holds the tensor's count floats in the direct path's device memory; else the error
// names the tensor, the rank and the kernels (algorithms/team/tensor_step.h calls it).
Status checkDirect(const CompressedState& s, const float* g);

}  // namespace tsr::compressed
