// cudaStreamHolds for builds without CUDA (TSR_WITH_CUDA=OFF, or AUTO without nvcc).
#include "algorithms/team/stream_hold.h"

namespace tsr::algorithms {

Result<StreamHolds*> cudaStreamHolds() {
  return Status(Code::kNotSupported,
                "this Tessera was built without CUDA (TSR_WITH_CUDA=OFF or no nvcc at build time)");
}

}  // namespace tsr::algorithms
