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

// The least send buffer for a job whose same-host peers talk TCP over loopback. Loopback's
// segments are 64 KiB; a buffer the kernel doubles to no more than one of them (a slow
// network's 16 or 32 KiB) leaves each connection a segment at a time, waiting on
// acknowledgements: 2 emulated hosts of 2 ranks at 100 Mbit/s ran a 16 MiB ring in 16 s with
// 16 or 32 KiB and in 2.1 s (1.05x the floor) with 64 KiB, 1 MiB or shared memory.
constexpr size_t kLoopbackTcpSendBuffer = 64 * 1024;

// Whether UCX_TLS (`tls`: its value, null when unset) leaves UCX a shared-memory transport for
// peers on the same host ("sm", "shm", "posix", "sysv", "xpmem", "mm", "all", or a "^" list
// that does not exclude them); without one those peers talk TCP over loopback.
bool ucxTlsHasSharedMemory(const char* tls);
// Whether UCX_TLS leaves UCX its TCP transport ("tcp", "all", unset, or a "^" list without them).
bool ucxTlsHasTcp(const char* tls);

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
