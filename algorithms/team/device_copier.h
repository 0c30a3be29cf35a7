// DeviceCopier: the copies between a tensor's device memory and pinned host memory that
// device staging (device_staging.h) needs, behind an interface so the staging orchestration
// is tested without a GPU (a host-memcpy fake in runtime/tests). One copier per tensor, one
// for a communicator's dense collectives: its copies run in order on its own stream and never
// block the caller. So a copy there must not wait on the device for the caller's stream: it
// would hold back every later copy, another collective's included, and a stream the caller
// holds until an earlier collective has ended (tsr_stream_hold) would then hold back that
// collective's own copy back, for good. The progress thread polls reached() instead
// (caller_gate.h) and posts the copy once it is true.
//
// The CUDA copier (cuda_copier.cc, built with TSR_CUDA_ENABLED): cudaMallocHost buffers,
// cudaMemcpyAsync on a non-blocking stream, an event to poll for completion. Status on a GPU:
// docs/gpu.md. Without a device,
// openCudaCopier fails with the reason (cuda_copier_none.cc when built without CUDA).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "algorithms/plan/caller_event.h"
#include "base/status.h"

namespace tsr::algorithms {

class DeviceCopier {
 public:
  virtual ~DeviceCopier() = default;
  // "CUDA device 0 (<name>)", for messages.
  virtual std::string describe() const = 0;
  // Page-locked host memory (fast, asynchronous copies); freed by freePinned.
  virtual Result<void*> allocPinned(size_t bytes) = 0;
  virtual void freePinned(void* p) = 0;
  // Ok when [p, p + bytes) is device memory this copier can read and write.
  virtual Status checkDevice(const void* p, size_t bytes) const = 0;
  // An event recorded now, on the calling thread, on the caller's `stream` (a cudaStream_t;
  // null: the legacy default stream): the point in the caller's work after which a collective
  // called now may read its input (as ncclAllReduce's stream argument). Released when the last
  // copy waiting on it is posted.
  virtual Result<CallerEvent> recordCallerEvent(void* stream) = 0;
  // True once the caller's work up to `event` has finished (null: at once). Polled, never
  // waited for.
  virtual Result<bool> reached(const CallerEvent& event) = 0;
  // Post a copy after the ones already posted; returns at once. The copy to the host first
  // waits on the device for `after` (null: no wait), for a caller who waits for the copy
  // itself (SelSync's step); the progress thread's tasks poll reached() and pass null.
  virtual Status postToHost(void* host, const void* device, size_t bytes, const CallerEvent& after) = 0;
  virtual Status postToDevice(void* device, const void* host, size_t bytes) = 0;
  // True once every posted copy has finished; the copy's error if one failed.
  virtual Result<bool> finished() = 0;
};

// The CUDA copier for the current device. Fails (NotSupported) naming why: Tessera built
// without CUDA, no CUDA device (with the CUDA runtime's message), or a stream that could not
// be created.
Result<std::unique_ptr<DeviceCopier>> openCudaCopier();

}  // namespace tsr::algorithms
