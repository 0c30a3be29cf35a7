// StreamHolds: gates on CUDA streams that the host opens. hold(stream) queues on the stream a
// wait that later work on it cannot pass; release(hold) lets it go on. With it a framework's
// Work::wait() makes the caller's stream wait for a collective that Tessera completes on the
// host, without blocking the calling thread (ProcessGroupNCCL's semantics, for a runtime whose
// collectives are not kernels on that stream).
//
// How: a 32-bit flag in mapped pinned host memory per hold, and a stream memory operation
// (cuStreamWaitValue32, "greater or equal") waiting until the flag reaches the hold's
// generation; release() stores that generation. A flag goes back to the pool once released:
// its value only grows, so a wait still queued on an old generation stays satisfied, and the
// next hold's higher generation is stored only at its own release. Flags are never freed (a
// queued wait may read one at any time), so the pool lives as long as the process.
//
// The flag memory and the waits are behind FlagMemory, so the pool is tested without a GPU
// (a fake whose "stream" is a thread: algorithms/team/tests/stream_hold_test.cc). The CUDA one
// (cuda_stream_hold.cc) needs the driver's stream memory operations; status on a GPU:
// docs/gpu.md.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::algorithms {

class FlagMemory {
 public:
  virtual ~FlagMemory() = default;
  // "CUDA stream memory operations (...)", for messages.
  virtual std::string describe() const = 0;
  // `count` zeroed flags the host writes and streams read; never freed.
  virtual Result<uint32_t*> allocFlags(size_t count) = 0;
  // Queues on `stream` a wait until *flag >= value; returns at once.
  virtual Status enqueueWait(void* stream, uint32_t* flag, uint32_t value) = 0;
};

class StreamHolds {
 public:
  struct Hold {
    uint32_t* flag = nullptr;
    uint32_t generation = 0;
    size_t slot = 0;
  };

  explicit StreamHolds(std::unique_ptr<FlagMemory> memory) : memory_(std::move(memory)) {}
  StreamHolds(const StreamHolds&) = delete;
  StreamHolds& operator=(const StreamHolds&) = delete;

  // Queues a hold on `stream` (any thread); errors name the stream and why.
  Result<Hold> hold(void* stream);
  // Lets the stream past the hold; once per hold, from any thread.
  void release(const Hold& hold);
  // Flags handed out so far (held and free), for tests.
  size_t flagsAllocated() const;

 private:
  static constexpr size_t kFlagsPerChunk = 1024;

  std::unique_ptr<FlagMemory> memory_;
  mutable std::mutex mutex_;
  std::vector<uint32_t*> chunks_;
  std::vector<uint32_t> generation_;  // per slot: the last one handed out
  std::vector<size_t> free_;          // released slots
};

// The process's holds on CUDA streams, opened on first use (then kept). NotSupported naming
// why: Tessera built without CUDA, no CUDA device or driver, no stream memory operations.
Result<StreamHolds*> cudaStreamHolds();

}  // namespace tsr::algorithms
