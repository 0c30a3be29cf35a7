#include "algorithms/plan/cuda_device.h"

namespace tsr::algorithms {

std::string cudaText(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

Result<CudaDeviceStream> openCudaDeviceStream(unsigned flags) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return Status(Code::kNotSupported, "no usable CUDA device (cudaGetDeviceCount: " + cudaText(e) + ")");
  if (count == 0) return Status(Code::kNotSupported, "no usable CUDA device (cudaGetDeviceCount found 0)");
  CudaDeviceStream out;
  cudaGetDevice(&out.device);
  cudaDeviceProp prop{};
  out.name = cudaGetDeviceProperties(&prop, out.device) == cudaSuccess ? prop.name : "unknown";
  e = cudaStreamCreateWithFlags(&out.stream, flags);
  if (e != cudaSuccess) return Status(Code::kNotSupported, "cudaStreamCreateWithFlags: " + cudaText(e));
  return out;
}

cudaError_t waitForDefaultStream(cudaStream_t stream, cudaEvent_t marker) {
  cudaError_t e = cudaEventRecord(marker, cudaStreamLegacy);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(stream, marker, 0);
  return e;
}

}  // namespace tsr::algorithms
