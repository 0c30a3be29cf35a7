// openCudaStepKernels for builds without CUDA (TSR_WITH_CUDA=OFF, or AUTO without nvcc).
#include "algorithms/plan/step_kernels.h"

namespace tsr::algorithms {

Result<std::shared_ptr<StepKernels>> openCudaStepKernels() {
  return Status(Code::kNotSupported,
                "this Tessera was built without CUDA (TSR_WITH_CUDA=OFF or no nvcc at build time)");
}

std::function<void()> cudaThreadBinding() {
  return [] {};
}

}  // namespace tsr::algorithms
