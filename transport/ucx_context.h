// The process-wide UCP context, created on first use and shared by every UcxTransport.
#pragma once

#include <cstddef>
#include <memory>

#include "base/status.h"

namespace tsr::transport {

// Tessera's TCP send buffer (UCX_TCP_SNDBUF, the kernel doubles it) for a network link of
// `bytesPerSec` (0: unknown): about 256 us of the link, 16 KiB..256 KiB, so an unknown or
// fast link keeps 256 KiB. A ring forwards each chunk as soon as it has it: bytes queued
// beyond that only delay every hop, and on a slow link under BBR the standing queue inflates
// every round trip until its 10-second round-trip probes stall the ring (docs/benchmarks.md,
// thirteenth session).
size_t tcpSendBufferFor(double bytesPerSec);

class UcxContext {
 public:
  // Created on first use with `tcpSendBuffer` bytes (0: tcpSendBufferFor(0)) unless the user
  // set UCX_TCP_SNDBUF; later calls share that context, whatever they ask.
  static Result<std::shared_ptr<UcxContext>> instance(size_t tcpSendBuffer = 0);
  ~UcxContext();
  void* handle() const { return context_; }  // ucp_context_h
  bool cudaMemory() const { return cudaMemory_; }

 private:
  UcxContext() = default;
  void* context_ = nullptr;
  bool cudaMemory_ = false;
  size_t tcpSendBuffer_ = 0;  // Tessera's SNDBUF (a user's UCX_TCP_SNDBUF overrides it)
};

}  // namespace tsr::transport
