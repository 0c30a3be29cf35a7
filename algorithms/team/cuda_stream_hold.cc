// The CUDA FlagMemory (stream_hold.h): flags in mapped, portable pinned memory (one address for
// the host and every device, under unified addressing), waits through the driver's
// cuStreamWaitValue32, looked up in libcuda at first use so that loading Tessera never needs
// the driver. Compiled only when TSR_CUDA_ENABLED. Status on a GPU: docs/gpu.md.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>

#include "algorithms/plan/cuda_device.h"
#include "algorithms/team/stream_hold.h"

namespace tsr::algorithms {
namespace {

using WaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

class CudaFlagMemory final : public FlagMemory {
 public:
  explicit CudaFlagMemory(WaitValue32 wait) : wait_(wait) {}
  std::string describe() const override { return "CUDA stream memory operations (cuStreamWaitValue32)"; }

  Result<uint32_t*> allocFlags(size_t count) override {
    void* host = nullptr;
    cudaError_t e = cudaHostAlloc(&host, count * sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) return Status(Code::kInternal, "cudaHostAlloc (mapped): " + cudaText(e));
    std::fill_n(static_cast<uint32_t*>(host), count, 0u);
    return static_cast<uint32_t*>(host);
  }

  Status enqueueWait(void* stream, uint32_t* flag, uint32_t value) override {
    void* device = nullptr;
    cudaError_t e = cudaHostGetDevicePointer(&device, flag, 0);
    if (e != cudaSuccess) return Status(Code::kInternal, "cudaHostGetDevicePointer: " + cudaText(e));
    CUresult r =
        wait_(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(device), value, CU_STREAM_WAIT_VALUE_GEQ);
    if (r != CUDA_SUCCESS)
      return Status(Code::kNotSupported, "cuStreamWaitValue32 failed (CUresult " + std::to_string(static_cast<int>(r)) +
                                             "; the device or driver may not offer stream memory operations)");
    return Status::ok();
  }

 private:
  WaitValue32 wait_;
};

Result<StreamHolds*> openCudaStreamHolds() {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0)
    return Status(Code::kNotSupported, "no CUDA device: " + (e != cudaSuccess ? cudaText(e) : std::string("none")));
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!driver) driver = dlopen("libcuda.so.1", RTLD_NOW);
  if (!driver) return Status(Code::kNotSupported, std::string("libcuda.so.1: ") + dlerror());
  auto wait = reinterpret_cast<WaitValue32>(dlsym(driver, "cuStreamWaitValue32_v2"));
  if (!wait) return Status(Code::kNotSupported, "the CUDA driver has no cuStreamWaitValue32_v2 (driver 11.7 or later)");
  return new StreamHolds(std::make_unique<CudaFlagMemory>(wait));  // kept: queued waits read its flags
}

}  // namespace

Result<StreamHolds*> cudaStreamHolds() {
  static const Result<StreamHolds*> opened = openCudaStreamHolds();
  return opened;
}

}  // namespace tsr::algorithms
