// WorkTessera: the c10d::Work of one Tessera collective (a tsr_request_t). It completes from
// Tessera's progress, not from a polling thread: the request's completion callback hands the
// completion to a completion thread (completion_threads.h), which runs the collective's last
// step (copying a gathered buffer into the caller's list, say), then completes this Work and
// its Future, with the tensors or with an error that names the rank, the peer and the
// collective (a std::runtime_error, a RuntimeError in Python). The Future's then() callbacks
// run there, never on the progress thread, so one may wait on another collective.
//
// wait() on CPU tensors drives Tessera on the calling thread (tsr_wait) and completes there
// unless a completion thread has begun, so it never returns before the outputs are in place,
// and rethrows a failure. wait(timeout) leaves the driving to the progress thread and raises
// once the timeout has passed (the collective goes on).
//
// On CUDA tensors (placement.h) the result is on the device when the callback runs (Tessera's
// copies back have finished). wait() makes the caller's current stream wait for that and
// returns at once, as ProcessGroupNCCL's does (TSR_TORCH_STREAM_WAIT=1, the default): a hold on
// that stream (tsr_stream_hold) that the completion releases, after the last step, whatever the
// outcome (a failure is then the Work's exception and its Future's error, and fails the group's
// next call). It blocks the calling thread instead, as gloo's CUDA path does, with
// TSR_TORCH_STREAM_WAIT=0, with a timeout, where the hold is not offered (said once), and on a
// blocking stream, the legacy default one among them (docs/torch.md says why). A held stream
// would stall whatever the completion ran that synchronized with it, for good (docs/torch.md):
// the last step runs on a stream of PyTorch's pool that no such wait holds (synchronized before
// completing), and the Future is a CUDA Future of the tensors' device: then() callbacks and DDP
// see the result on their own streams through the events PyTorch records at completion.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Work.hpp>

#include "bindings/torch/completion_threads.h"
#include "tessera/tessera.h"

namespace tessera_torch {

class WorkTessera : public c10d::Work {
 public:
  // Runs on the completing thread, after the collective succeeded; may throw (the Work then
  // fails with that message).
  using Finish = std::function<void()>;

  // `device`: the CUDA device of the call's tensors (none: CPU tensors). `kept`: tensors the
  // collective reads or writes besides the outputs (an input, a staging copy), held as long as
  // the Work; unlike a Finish they need no stream on CUDA.
  WorkTessera(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, Finish finish = {},
              std::optional<c10::Device> device = std::nullopt, std::vector<at::Tensor> kept = {});
  ~WorkTessera() override;

  // Takes the posted request over and arranges for its completion; call once, right after
  // posting. `what` names the collective in errors ("allreduce of 1000 float32"); `owed`
  // counts it until its complete() has ended.
  void watch(tsr_request_t request, std::string what, std::shared_ptr<OwedCompletions> owed);
  // The collective could not be posted: fails the Work at once.
  void failNow(const std::string& message);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  static void onComplete(void* self, tsr_status_t status);
  // complete(), by whichever comes first: a completion thread, or wait() once tsr_wait returned.
  void completeOnce(tsr_status_t status, const std::string& message);
  void complete(tsr_status_t status, const std::string& message);

  void runFinish();
  // CUDA tensors: holds the caller's current stream until complete() (true), or says why not.
  bool holdCallersStream();

  std::vector<at::Tensor> outputs_;
  Finish finish_;
  std::vector<at::Tensor> kept_;
  std::optional<c10::Device> device_;
  tsr_request_t request_ = nullptr;
  std::string what_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::vector<std::pair<tsr_stream_hold_t, void*>> holds_;  // and their streams; released by complete()
                                                            // (guarded by mutex_)
  bool holdsReleased_ = false;        // complete() has taken holds_: later ones go at once (mutex_)
  std::atomic<bool> claimed_{false};  // complete() has been started
  std::shared_ptr<OwedCompletions> owed_;
};

}  // namespace tessera_torch
