// The process-wide UCP context, created on first use and shared by every UcxTransport.
#pragma once

#include <memory>

#include "base/status.h"

namespace tsr::transport {

class UcxContext {
 public:
  static Result<std::shared_ptr<UcxContext>> instance();
  ~UcxContext();
  void* handle() const { return context_; }  // ucp_context_h
  bool cudaMemory() const { return cudaMemory_; }

 private:
  UcxContext() = default;
  void* context_ = nullptr;
  bool cudaMemory_ = false;
};

}  // namespace tsr::transport
