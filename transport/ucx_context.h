// The process-wide UCP context, created on first use and shared by every UcxTransport.
#pragma once

#include <cstddef>
#include <memory>

#include "base/status.h"

namespace tsr::transport {

// Tessera's TCP send buffer (UCX_TCP_SNDBUF, the kernel doubles it) for a network link of
// `bytesPerSec` (0: unknown): about 256 us of the link, as the nearest power of two, 16 KiB..
// 256 KiB, so an unknown or fast link keeps 256 KiB and 1 Gbit/s gets 32 KiB. A ring forwards each chunk as soon as it
// has it: bytes queued beyond that only delay every hop, and on a slow link under BBR the standing queue inflates every
// round trip until its 10-second round-trip probes stall the ring (docs/performance.md, "TCP send buffer").
size_t tcpSendBufferFor(double bytesPerSec);

// The send buffer for a network link the probe measured at `bytesPerSec`, or 0 to keep the
// default: only a clearly slow link (a quarter of the default buffer or less, about 3 Gbit/s
// and below) is worth a second transport; the probe's noise on a fast link is not.
size_t tcpSendBufferForProbed(double bytesPerSec);

class UcxContext {
 public:
  // The context with `tcpSendBuffer` bytes (0: tcpSendBufferFor(0)), created on first use;
  // later calls for the same size share it (ranks as threads). A user's UCX_TCP_SNDBUF
  // overrides the size in every context.
  static Result<std::shared_ptr<UcxContext>> instance(size_t tcpSendBuffer = 0);
  ~UcxContext();
  void* handle() const { return context_; }  // ucp_context_h
  bool cudaMemory() const { return cudaMemory_; }
  size_t tcpSendBuffer() const { return tcpSendBuffer_; }  // Tessera's size, whatever the user set

 private:
  UcxContext() = default;
  void* context_ = nullptr;
  bool cudaMemory_ = false;
  size_t tcpSendBuffer_ = 0;  // Tessera's SNDBUF (a user's UCX_TCP_SNDBUF overrides it)
};

}  // namespace tsr::transport
