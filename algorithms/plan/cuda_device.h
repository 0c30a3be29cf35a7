// The CUDA set-up every CUDA user in Tessera shares (the step kernels, the device copier, the
// GPU check): the current device, its name and a non-blocking stream of its own, with errors as
// text. Compiled only when TSR_CUDA_ENABLED; includes the CUDA runtime's header.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "base/status.h"

namespace tsr::algorithms {

// "cudaErrorX: what it means".
std::string cudaText(cudaError_t e);

struct CudaDeviceStream {
  int device = 0;
  std::string name;               // the device's, "unknown" when its properties cannot be read
  cudaStream_t stream = nullptr;  // the caller's to destroy
};

// kNotSupported, saying why, without a usable device or when no stream can be made.
Result<CudaDeviceStream> openCudaDeviceStream();

}  // namespace tsr::algorithms
