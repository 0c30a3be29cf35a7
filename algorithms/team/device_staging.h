// Device staging: how a compressed tensor whose gradient lives in device (CUDA) memory runs
// its step when it cannot take the direct path. The spec: device buffers go to UCX directly
// when UCX reports CUDA memory support, otherwise through pinned host staging buffers. Which
// of the two a tensor takes is chosen in algorithms/team/device_path.h. Staging:
//
//   step on a device tensor = copy device -> pinned host buffer (the copier's stream),
//                             the tensor's host step on that buffer (unchanged: same
//                             kernels, same wire, same state), then copy the result back.
//
// All three stages are one Task on the team's progress thread (StagedTask): the
// caller's non-blocking call returns at once and the copies are polled, never waited for.
// The tensor's state (Marsit compensation, error-feedback residual, SparDL residual) stays in
// host memory, as for a host tensor, so results and residuals are bit-identical to the host
// path. When the host step fails (NaN/Inf, a peer died) nothing is copied back: the device
// buffer keeps the caller's gradient.
//
// The direct path (built for Marsit ring and torus: algorithms/marsit/marsit_device.h,
// two-level Marsit: marsit_hier_step.h, the flat compressed tensor:
// algorithms/compressed/compressed_device.h, and the two-level one:
// compressed_hier_device.h):
// when ucp_context_query lists UCS_MEMORY_TYPE_CUDA (Communicator::transportMovesCuda), the
// step runs on the device through StepKernels (plan/step_kernels.h: the CUDA
// kernels of algorithms/kernels/cuda on cudaMalloc'd scratch), the compensation stays on the
// device, and the plans hand the device payload buffers to ucp_tag_send_nbx /
// ucp_tag_recv_nbx as UCS_MEMORY_TYPE_CUDA, so no byte crosses PCIe twice. Every registry
// compressor has a device form (compressed/device_codec.h), flat or two-level; SparDL tensors
// have no device step and always stage.
// Status on a GPU: docs/gpu.md (Debian's UCX reports no CUDA memory, so with it every device
// tensor stages). Both are tested with fakes (a host-memcpy copier; a host-memory "device" running the
// CPU kernels behind a transport wrapper that claims CUDA support: tests/device_direct_test.cc,
// compressed_direct_test.cc, marsit_hier_direct_test.cc, compressed_hier_direct_test.cc);
// the CUDA code is compiled and linked only.
#pragma once

#include <memory>
#include <string>

#include "algorithms/plan/task.h"
#include "algorithms/team/device_copier.h"

namespace tsr::algorithms {

class DeviceStaging : public std::enable_shared_from_this<DeviceStaging> {
 public:
  // A pinned host buffer of `count` floats for tensor `tensor`, copied through `copier`.
  static Result<std::shared_ptr<DeviceStaging>> create(std::unique_ptr<DeviceCopier> copier, std::string tensor,
                                                       size_t count);
  ~DeviceStaging();
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;

  // Where the host step reads the gradient and writes the result.
  float* host() const { return host_; }
  size_t count() const { return count_; }
  const std::string& tensor() const { return tensor_; }
  DeviceCopier& copier() { return *copier_; }
  // Ok when `device` holds the tensor's count floats in device memory; else names the tensor.
  Status checkDevice(const float* device) const;
  // The step as one task: copy `device` to host(), run the task `hostStep` builds (it works on
  // host()), copy host() back to `device`. The copy waits for nothing: start the task once the
  // caller's work before the step has ended (afterCallerEvent with copier().reached).
  TaskFactory wrap(float* device, TaskFactory hostStep);

 private:
  DeviceStaging(std::unique_ptr<DeviceCopier> copier, std::string tensor, size_t count)
      : copier_(std::move(copier)), tensor_(std::move(tensor)), count_(count) {}
  std::unique_ptr<DeviceCopier> copier_;
  std::string tensor_;
  size_t count_ = 0;
  float* host_ = nullptr;
};

// Staging for tensor `tensor` of `count` floats on the current CUDA device. Fails with
// NotSupported naming the tensor and why (built without CUDA, no CUDA device).
Result<std::shared_ptr<DeviceStaging>> openDeviceStaging(const std::string& tensor, size_t count);

}  // namespace tsr::algorithms
