// openCudaCopier for builds without CUDA (TSR_WITH_CUDA=OFF, or AUTO without nvcc).
#include "algorithms/team/device_copier.h"

namespace tsr::algorithms {

Result<std::unique_ptr<DeviceCopier>> openCudaCopier() {
  return Status(Code::kNotSupported,
                "this Tessera was built without CUDA (TSR_WITH_CUDA=OFF or no nvcc at build time)");
}

}  // namespace tsr::algorithms
