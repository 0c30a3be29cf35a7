// The CUDA set-up every CUDA user in Tessera shares (the step kernels, the device copier, the
// GPU check): the current device, its name and a stream of its own, with errors as text, and
// the ordering of Tessera's device work after the caller's. Compiled only when TSR_CUDA_ENABLED;
// includes the CUDA runtime's header.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "algorithms/plan/caller_event.h"
#include "base/status.h"

namespace tsr::algorithms {

// "cudaErrorX: what it means".
std::string cudaText(cudaError_t e);

struct CudaDeviceStream {
  int device = 0;
  std::string name;               // the device's, "unknown" when its properties cannot be read
  cudaStream_t stream = nullptr;  // the caller's to destroy
};

// kNotSupported, saying why, without a usable device or when no stream can be made. `flags`:
// cudaStreamNonBlocking for a stream that waits only where told to (a caller's event);
// cudaStreamDefault for one the CUDA runtime orders after the legacy default stream's earlier
// work at every operation.
Result<CudaDeviceStream> openCudaDeviceStream(unsigned flags);

// The caller's event (caller_event.h): recorded now on `stream` (a cudaStream_t; null: the
// legacy default stream) of `device`, on the calling thread, whose current device is put back
// as it was. An error names `who` and the stream. On the legacy default stream it marks the
// earlier work of every blocking stream too: the caller's kernels and copies on PyTorch's
// default stream, a cudaMemcpy or cudaMemset without a stream, and the DMA of a cudaMemcpy
// from pageable memory, which may still be running when cudaMemcpy returns.
Result<CallerEvent> recordCallerEventOn(int device, void* stream, const std::string& who);
// True once the caller's work up to `event` has finished (null: at once); never blocks.
Result<bool> callerEventReached(const CallerEvent& event, const std::string& who);

}  // namespace tsr::algorithms
