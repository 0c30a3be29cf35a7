// A Marsit tensor's arrays on the direct device path (algorithms/team/device_staging.h), taken
// when the transport moves CUDA memory: its compensation, work vector, packed bits and plan
// scratch live where its StepKernels run (algorithms/plan/step_kernels.h), so the flat step
// (marsit_step.h) and the two-level one (marsit_hier_step.h) run their math there and
// hand the payloads to the transport as device buffers. Only the scalar allreduce and the
// plans' headers stay in host memory.
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
  // Two-level only (marsit_hier_step.h): the padded intra-host vector (intraType) and
  // its plan's scratch, what the f16 cast, sums and division dropped (count floats), the row
  // block's s' and G, and the host ring's f16 rounding of this step (padded floats).
  DeviceBlock intra, rowScratch, intraResidual, shard, shardOut, dropped;
  static Result<std::shared_ptr<MarsitDeviceArrays>> create(std::shared_ptr<algorithms::StepKernels> kernels,
                                                            const MarsitState& s);
};

// Ok when g holds the tensor's count floats in the direct path's device memory; else the
// error names the tensor, the rank and the kernels (algorithms/team/tensor_step.h calls it).
Status checkDirect(const MarsitState& s, const float* g);
// MarsitTensor::setResidual on the direct path: the values (count floats, host memory, the
// units of residual()) written where the device step keeps them, as the host step's are.
Status writeDeviceResidual(MarsitState& s, const float* values);
}  // namespace tsr::marsit
