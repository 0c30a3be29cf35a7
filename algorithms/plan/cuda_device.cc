#include "algorithms/plan/cuda_device.h"

#include <cstdio>

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

Result<CallerEvent> recordCallerEventOn(int device, void* stream, const std::string& who) {
  int current = -1;
  cudaGetDevice(&current);
  cudaEvent_t event = nullptr;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(event, stream ? static_cast<cudaStream_t>(stream) : cudaStreamLegacy);
  if (current >= 0 && current != device) cudaSetDevice(current);
  if (e != cudaSuccess) {
    if (event) cudaEventDestroy(event);
    char handle[40] = "(the legacy default stream)";
    if (stream) std::snprintf(handle, sizeof handle, "%p", stream);
    return Status(Code::kInvalidArgument, who + ": cannot record an event on the caller's stream " + handle +
                                              " (a CUDA stream of this device?): " + cudaText(e));
  }
  return CallerEvent(event, [](void* p) { cudaEventDestroy(static_cast<cudaEvent_t>(p)); });
}

Result<bool> callerEventReached(const CallerEvent& event, const std::string& who) {
  if (!event) return true;
  cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event.get()));
  if (e == cudaSuccess) return true;
  if (e == cudaErrorNotReady) {
    // Not an error, but the runtime may keep it as this thread's last error, which the next
    // launch check (cudaGetLastError) would then report (PyTorch's CUDAEvent::query clears it too).
    (void)cudaGetLastError();
    return false;
  }
  return Status(Code::kInternal, who + ": the caller's stream failed before the call: " + cudaText(e));
}

}  // namespace tsr::algorithms
