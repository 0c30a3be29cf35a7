#include "algorithms/team/device_path.h"

namespace tsr::algorithms {

DeviceOpeners cudaDeviceOpeners(const std::string& tensor, size_t count) {
  DeviceOpeners o;
  o.kernels = [tensor]() -> Result<std::shared_ptr<StepKernels>> {
    auto k = openCudaStepKernels();
    if (k.isOk()) return k;
    return Status(k.status().code(), "tensor " + tensor + ": memory=cuda is not possible here: " +
                                         k.status().message() + "; declare it memory=host and pass host memory");
  };
  o.staging = [tensor, count] { return openDeviceStaging(tensor, count); };
  return o;
}

DevicePath chooseDevicePath(bool transportMovesCuda, const std::string& noDirect) {
  return transportMovesCuda && noDirect.empty() ? DevicePath::kDirect : DevicePath::kStaged;
}

std::string devicePathNote(DevicePath path, bool transportMovesCuda, const std::string& noDirect) {
  if (path == DevicePath::kDirect)
    return "direct device path: UCX reports CUDA memory support, so the step runs on device kernels and "
           "hands device buffers to UCX (no host staging)";
  if (!transportMovesCuda) return "staged through pinned host memory: UCX reports no CUDA memory support";
  return "staged through pinned host memory: UCX reports CUDA memory support, but " + noDirect;
}

}  // namespace tsr::algorithms
