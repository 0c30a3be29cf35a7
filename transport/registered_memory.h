// RegisteredMemory: host memory allocated and registered with UCX (ucp_mem_map), for buffers
// a communicator reuses across collectives (its scratch pool: staging chunks, work copies),
// so UCX never has to register them again on the zero-copy paths (shared memory CMA/knem,
// RDMA). It keeps the process's UCP context alive for as long as it lives, so blocks may be
// released after the transport that created it is gone. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/status.h"

namespace tsr::transport {

class UcxContext;

class RegisteredMemory {
 public:
  static Result<std::shared_ptr<RegisteredMemory>> create();
  ~RegisteredMemory();

  // At least `bytes` (page-aligned) of registered host memory.
  Result<void*> allocate(size_t bytes);
  // Unregisters and frees a block from allocate(); ignores anything else.
  void release(void* pointer);
  bool contains(const void* pointer) const;
  size_t blocks() const;

 private:
  explicit RegisteredMemory(std::shared_ptr<UcxContext> context) : context_(std::move(context)) {}
  std::shared_ptr<UcxContext> context_;
  mutable std::mutex mutex_;
  std::unordered_map<const void*, void*> registrations_;  // pointer -> ucp_mem_h
};

}  // namespace tsr::transport
