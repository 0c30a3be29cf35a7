// The CUDA DeviceCopier (device_copier.h). Plain C++ against the CUDA runtime API; compiled
// only when TSR_CUDA_ENABLED. Status on a GPU: docs/gpu.md.
#include <cuda_runtime.h>

#include "algorithms/plan/cuda_device.h"
#include "algorithms/team/device_copier.h"

namespace tsr::algorithms {
namespace {

class CudaCopier final : public DeviceCopier {
 public:
  CudaCopier(int device, std::string deviceName, cudaStream_t stream, cudaEvent_t event)
      : device_(device), name_(std::move(deviceName)), stream_(stream), event_(event) {}
  ~CudaCopier() override {
    cudaStreamSynchronize(stream_);  // no copy may outlive the buffers it targets
    cudaEventDestroy(event_);
    cudaStreamDestroy(stream_);
  }

  std::string describe() const override { return "CUDA device " + std::to_string(device_) + " (" + name_ + ")"; }

  Result<void*> allocPinned(size_t bytes) override {
    void* p = nullptr;
    cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess)
      return Status(Code::kInternal, "cudaMallocHost(" + std::to_string(bytes) + " bytes): " + cudaText(e));
    return p;
  }
  void freePinned(void* p) override { cudaFreeHost(p); }

  Status checkDevice(const void* p, size_t) const override {
    cudaPointerAttributes a{};
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error so later calls are unaffected
      return Status(Code::kInvalidArgument, "cudaPointerGetAttributes: " + cudaText(e));
    }
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
      return Status(Code::kInvalidArgument, "the buffer is not CUDA device memory (cudaMemoryType " +
                                                std::to_string(static_cast<int>(a.type)) + ")");
    // One device per communicator, as NCCL's: the copies, kernels and the caller's event are
    // ordered on this copier's device, so a buffer on another would be read unordered.
    if (a.type == cudaMemoryTypeDevice && a.device != device_)
      return Status(Code::kInvalidArgument, "the buffer is on CUDA device " + std::to_string(a.device) +
                                                ", the staging on " + describe() +
                                                " (opened on the device current at the first CUDA call)");
    return Status::ok();
  }

  Result<CallerEvent> recordCallerEvent(void* stream) override {
    return recordCallerEventOn(device_, stream, describe());
  }

  Result<bool> reached(const CallerEvent& event) override { return callerEventReached(event, describe()); }

  // The caller's later work on its stream does not wait for this copy.
  Status postToHost(void* host, const void* device, size_t bytes, const CallerEvent& after) override {
    return post(host, device, bytes, cudaMemcpyDeviceToHost, "device to host", after.get());
  }
  Status postToDevice(void* device, const void* host, size_t bytes) override {
    return post(device, host, bytes, cudaMemcpyHostToDevice, "host to device", nullptr);
  }

  Result<bool> finished() override {
    cudaError_t e = cudaEventQuery(event_);
    if (e == cudaSuccess) return true;
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: kept from the next launch check (cuda_device.cc)
      return false;
    }
    return Status(Code::kInternal, describe() + ": copy failed: " + cudaText(e));
  }

 private:
  Status post(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* what, void* callerEvent) {
    // The progress thread posts the copies: make the tensor's device current there.
    cudaError_t e = cudaSetDevice(device_);
    if (e == cudaSuccess && callerEvent) e = cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(callerEvent), 0);
    if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, bytes, kind, stream_);
    if (e == cudaSuccess) e = cudaEventRecord(event_, stream_);
    if (e != cudaSuccess)
      return Status(Code::kInternal,
                    describe() + ": " + what + " copy of " + std::to_string(bytes) + " bytes: " + cudaText(e));
    return Status::ok();
  }

  int device_;
  std::string name_;
  cudaStream_t stream_;
  cudaEvent_t event_;
};

}  // namespace

Result<std::unique_ptr<DeviceCopier>> openCudaCopier() {
  // Non-blocking: the copies run beside the caller's work, ordered after it only where they
  // read its buffers (reached, or postToHost's `after`).
  TSR_ASSIGN_OR_RETURN(CudaDeviceStream d, openCudaDeviceStream(cudaStreamNonBlocking));
  cudaEvent_t event = nullptr;
  cudaError_t e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    cudaStreamDestroy(d.stream);
    return Status(Code::kNotSupported, "cudaEventCreateWithFlags: " + cudaText(e));
  }
  return std::unique_ptr<DeviceCopier>(new CudaCopier(d.device, std::move(d.name), d.stream, event));
}

}  // namespace tsr::algorithms
