// Which path a compressed tensor declared memory=cuda takes (device_staging.h describes both):
//   direct  when the transport moves CUDA memory (Communicator::transportMovesCuda: UCX's
//           ucp_context_query lists UCS_MEMORY_TYPE_CUDA) and the tensor's algorithm has a
//           device step (Marsit ring, torus and two-level; a flat or two-level compressed
//           tensor whose compressor has a device form, compressed/device_codec.h): device
//           kernels, device buffers
//           to UCX. Tested with a host-memory fake device (on a GPU: docs/gpu.md);
//   staged  otherwise: pinned host buffers around the host step.
// The openers make the path's resources, so tests substitute fakes for CUDA; the choice and
// its reason are logged (devicePathNote) by whoever attaches the tensor.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "algorithms/plan/step_kernels.h"
#include "algorithms/team/device_staging.h"

namespace tsr::algorithms {

enum class DevicePath { kStaged, kDirect };

struct DeviceOpeners {
  std::function<Result<std::shared_ptr<StepKernels>>()> kernels;    // the direct path's
  std::function<Result<std::shared_ptr<DeviceStaging>>()> staging;  // the staged path's
};

// The real ones: CUDA step kernels on the current device, pinned staging for `count` floats.
DeviceOpeners cudaDeviceOpeners(const std::string& tensor, size_t count);

// `noDirect`: why the tensor's algorithm has no device step (empty when it has one).
DevicePath chooseDevicePath(bool transportMovesCuda, const std::string& noDirect);

// One line for the log: the path taken and why.
std::string devicePathNote(DevicePath path, bool transportMovesCuda, const std::string& noDirect);

}  // namespace tsr::algorithms
