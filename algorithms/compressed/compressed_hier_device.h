// A two-level compressed tensor's arrays on the direct device path (intra=none|fp16;
// algorithms/team/device_path.h): g + q, the f16 cast residual, the intra-host vector, the
// shard, the block, the result and the plans' scratch, where its StepKernels run. The step
// (compressed_hier_step.h) runs on them with the device kernels and the shard's device codec
// (device_codec.h, EF state on the device); results and state equal the host step's bit for
// bit. Tested with a host-memory fake device over UCX (on a GPU: docs/gpu.md).
#pragma once

#include <memory>

#include "algorithms/compressed/compressed_device.h"
#include "algorithms/compressed/compressed_hier.h"

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
// setResidual of a direct two-level tensor, as the host's: the values (count floats, host
// memory) become the cast residual q on the device, the shard's EF error starts at 0.
Status writeTwoLevelDeviceResidual(CompressedState& s, const float* values);

}  // namespace tsr::compressed
