// DeviceBlock: one block of a StepKernels backend's memory (step_kernels.h), released through
// the same backend when dropped. Shared by the device steps (Marsit, the compressed tensor).
#pragma once

#include <memory>
#include <string>

#include "algorithms/plan/step_kernels.h"

namespace tsr::algorithms {

class DeviceBlock {
 public:
  DeviceBlock() = default;
  DeviceBlock(std::shared_ptr<StepKernels> k, void* p) : kernels_(std::move(k)), p_(p) {}
  DeviceBlock(DeviceBlock&& o) noexcept : kernels_(std::move(o.kernels_)), p_(o.p_) { o.p_ = nullptr; }
  DeviceBlock& operator=(DeviceBlock&& o) noexcept {
    if (this != &o) {
      reset();
      kernels_ = std::move(o.kernels_);
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  ~DeviceBlock() { reset(); }
  void reset() {
    if (p_ && kernels_) kernels_->release(p_);
    p_ = nullptr;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

  // `bytes` of the kernels' memory into `into`; the error names `who` and `what`.
  static Status make(const std::shared_ptr<StepKernels>& kernels, DeviceBlock& into, size_t bytes,
                     const std::string& who, const char* what) {
    auto made = kernels->allocate(bytes);
    if (!made.isOk())
      return Status(made.status().code(), who + ": device " + what + " (" + std::to_string(bytes) + " bytes) on " +
                                              kernels->describe() + ": " + made.status().message());
    into = DeviceBlock(kernels, made.value());
    return Status::ok();
  }

 private:
  std::shared_ptr<StepKernels> kernels_;
  void* p_ = nullptr;
};

}  // namespace tsr::algorithms
