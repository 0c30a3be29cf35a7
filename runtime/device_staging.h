// Device staging: how a compressed tensor whose gradient lives in device (CUDA) memory runs
// its step. The spec: device buffers go to UCX directly when UCX reports CUDA memory support,
// otherwise through pinned host staging buffers. Only staging is built:
//
//   step on a device tensor = copy device -> pinned host buffer (the copier's stream),
//                             the tensor's host step on that buffer (unchanged: same
//                             kernels, same wire, same state), then copy the result back.
//
// All three stages are one Task on the communicator's progress thread (StagedTask): the
// caller's non-blocking call returns at once and the copies are polled, never waited for.
// The tensor's state (Marsit compensation, error-feedback residual, SparDL residual) stays in
// host memory, as for a host tensor, so results and residuals are bit-identical to the host
// path. When the host step fails (NaN/Inf, a peer died) nothing is copied back: the device
// buffer keeps the caller's gradient.
//
// The direct path (not built, and not testable here: Debian's UCX reports no CUDA memory
// and no GPU exists): when ucp_context_query lists UCS_MEMORY_TYPE_CUDA
// (Communicator::transportMovesCuda), the step would run on the device with the CUDA kernels
// (algorithms/kernels/cuda: sign pack/merge/decompress/compensate, casts, top-k, random-k,
// dithering) on device scratch, and hand the device payload buffers to ucp_tag_send_nbx /
// ucp_tag_recv_nbx with memory_type UCS_MEMORY_TYPE_CUDA, so no byte crosses PCIe twice.
// Until it exists, both cases stage; devicePathNote says which one applies and why.
#pragma once

#include <memory>
#include <string>

#include "algorithms/plan/task.h"
#include "runtime/device_copier.h"

namespace tsr::runtime {

class DeviceStaging : public std::enable_shared_from_this<DeviceStaging> {
 public:
  // A pinned host buffer of `count` floats for tensor `tensor`, copied through `copier`.
  static Result<std::shared_ptr<DeviceStaging>> create(std::unique_ptr<DeviceCopier> copier,
                                                       std::string tensor, size_t count);
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
  // The step as one task: copy `device` to host(), run the task `hostStep` builds (it works
  // on host()), copy host() back to `device`.
  algorithms::TaskFactory wrap(float* device, algorithms::TaskFactory hostStep);

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

}  // namespace tsr::runtime
