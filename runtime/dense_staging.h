// Dense collectives on device (CUDA) buffers, staged through pinned host memory. Dense plans
// have no device reduction, so each collective is one task on the progress thread:
//
//   copy the device input to a pinned host buffer (the copier's stream, polled), run the
//   plan's executor on host buffers (same plans, same wire as host buffers; or, on one host,
//   the shared-memory allreduce a host buffer takes), copy the host result to the device output.
//
// Pinned buffers are taken when the collective is posted, on the caller's thread, and kept for
// reuse (allocating page-locked memory is slow) up to kKeptPinnedBytes; the rest is freed by a
// later post. So the progress thread never allocates nor frees page-locked memory: those calls
// are slow and may wait for every stream of the device, a stream the caller has held for a
// collective (tsr_stream_hold) included. The copier is shared by the communicator's
// collectives, all run by the progress engine one turn at a time, so a collective starts only
// once the caller's event has been polled as reached (a copy waiting for it on the copier's
// stream would hold back the others' copies). Status on a GPU: docs/gpu.md. The orchestration
// is tested with a host-memcpy fake (algorithms/team/tests/fake_copier.h).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/plan/executor.h"
#include "algorithms/team/device_copier.h"

namespace tsr::runtime {

using algorithms::DeviceCopier;
class DenseStaging;

// The pinned buffers of one staged collective (the same one for an in-place run), given back
// when the last of its task and the task's factory lets go.
struct PinnedBuffers {
  std::shared_ptr<DenseStaging> staging;
  void* in = nullptr;
  size_t inSize = 0;
  void* out = nullptr;
  size_t outSize = 0;
  ~PinnedBuffers();
};

class DenseStaging : public std::enable_shared_from_this<DenseStaging> {
 public:
  static constexpr size_t kKeptPinnedBytes = size_t{64} << 20;

  explicit DenseStaging(std::unique_ptr<DeviceCopier> copier) : copier_(std::move(copier)) {}
  ~DenseStaging();
  DenseStaging(const DenseStaging&) = delete;
  DenseStaging& operator=(const DenseStaging&) = delete;

  std::string describe() const { return copier_->describe(); }
  // Ok when [p, p + bytes) is device memory; else names the collective, the buffer and why.
  Status checkDevice(const char* collective, const char* which, const void* p, size_t bytes) const;
  // The task that runs `plan` on device buffers: input (inBytes) and output (outBytes), in
  // place when they are the same pointer; scratch (host memory, may be null) as for a host run.
  // The task starts, its input copied, once the progress thread has polled `after` (the
  // caller's stream's event, recorded in the call) as reached; null: at once.
  // `pinned`: takeBuffers' for the same buffers.
  algorithms::TaskFactory stage(std::shared_ptr<const algorithms::Plan> plan, const void* input, size_t inBytes,
                                void* output, size_t outBytes, void* scratch, algorithms::CallerEvent after,
                                std::shared_ptr<PinnedBuffers> pinned);
  // The same around any host task (made once the input is on the host; same pointer for an
  // in-place run); `what` names the collective in messages.
  using HostTaskMaker = std::function<std::unique_ptr<algorithms::Task>(const void* hostIn, void* hostOut,
                                                                        const algorithms::TaskContext& ctx)>;
  algorithms::TaskFactory stageTask(std::string what, HostTaskMaker make, const void* input, size_t inBytes,
                                    void* output, size_t outBytes, algorithms::CallerEvent after,
                                    std::shared_ptr<PinnedBuffers> pinned);
  // The pinned buffers of one collective on input/output (one for an in-place run), taken on
  // the caller's thread when it is posted; errors name `what`.
  Result<std::shared_ptr<PinnedBuffers>> takeBuffers(const std::string& what, const void* input, size_t inBytes,
                                                     const void* output, size_t outBytes);
  // The event a collective called now waits for before reading its input: recorded now on
  // `callerStream` (null: the legacy default stream, whose order every blocking stream keeps).
  Result<algorithms::CallerEvent> callerEvent(void* callerStream);

  // Pinned buffers: taken on the caller's thread (which also frees what was given back beyond
  // kKeptPinnedBytes), given back from any thread.
  Result<void*> takePinned(size_t bytes);
  void givePinned(void* p, size_t bytes);
  DeviceCopier& copier() { return *copier_; }

 private:
  std::unique_ptr<DeviceCopier> copier_;
  std::mutex mutex_;  // spare_ (a communicator may be destroyed from another thread)
  std::vector<std::pair<void*, size_t>> spare_;
  std::vector<void*> excess_;  // given back beyond kKeptPinnedBytes: freed by the next take
  size_t kept_ = 0;
};

}  // namespace tsr::runtime
