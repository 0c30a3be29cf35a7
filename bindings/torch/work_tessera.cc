#include "bindings/torch/work_tessera.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <ATen/core/ivalue.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>

#include "bindings/torch/placement.h"

namespace tessera_torch {

WorkTessera::WorkTessera(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, Finish finish,
                         std::optional<c10::Device> device)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      finish_(std::move(finish)),
      device_(device),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()),
          device ? std::vector<c10::Device>{*device} : std::vector<c10::Device>{})) {}

WorkTessera::~WorkTessera() {
  if (request_) tsr_request_free(request_);
}

void WorkTessera::watch(tsr_request_t request, std::string what) {
  request_ = request;
  what_ = std::move(what);
  // The callback holds a reference until it has run: a Work dropped by its caller (DDP keeps
  // only the Future) still completes it.
  c10::raw::intrusive_ptr::incref(this);
  tsr_status_t st = tsr_request_on_complete(request_, &WorkTessera::onComplete, this);
  if (st != TSR_OK) {
    std::string why = tsr_last_error();
    c10::raw::intrusive_ptr::decref(this);
    complete(st, "cannot watch the request: " + why);
  }
}

void WorkTessera::failNow(const std::string& message) { complete(TSR_ERR_INVALID_ARGUMENT, message); }

void WorkTessera::onComplete(void* self, tsr_status_t status) {
  auto* work = static_cast<WorkTessera*>(self);
  // Tessera sets this thread's last error to the request's message before calling back.
  work->complete(status, status == TSR_OK ? std::string() : std::string(tsr_last_error()));
  c10::raw::intrusive_ptr::decref(work);
}

void WorkTessera::runFinish() {
  if (finish_) finish_();
  // CUDA tensors: the last step's copies, on the pool stream complete() made current, are done
  // before the Work completes, so nothing of ours still runs when the caller frees a tensor.
  if (finish_ && device_) c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(*device_).synchronize();
}

void WorkTessera::complete(tsr_status_t status, const std::string& message) {
  // CUDA tensors: a stream of PyTorch's pool is current while the last step runs and the
  // Future completes, which records its events there (not on the default stream, which would
  // order the caller's later work after everything queued there since).
  std::optional<c10::StreamGuard> onPool;
  if (device_)
    onPool.emplace(c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStreamFromGlobalPool(*device_, false));
  std::exception_ptr error;
  if (status == TSR_OK) {
    try {
      runFinish();
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(std::runtime_error("tessera: " + what_ + ": " + e.what()));
    }
  } else {
    error = std::make_exception_ptr(
        std::runtime_error("tessera: " + what_ + " failed (" + tsr_status_string(status) + "): " + message));
  }
  finish(error);  // the Work first: a Future callback may look at it
  std::vector<tsr_stream_hold_t> holds;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    holds.swap(holds_);
  }
  for (tsr_stream_hold_t h : holds) tsr_stream_release(h);  // the outputs are in place (or never will be)
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

bool WorkTessera::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool WorkTessera::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && !exception_;
}

std::exception_ptr WorkTessera::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exception_;
}

bool WorkTessera::holdCallersStream() {
  static const bool asked = [] {
    const char* v = std::getenv("TSR_TORCH_STREAM_WAIT");
    return v && std::strcmp(v, "1") == 0;  // checked (0|1) by the communicator's configuration
  }();
  if (!asked) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed_) return false;  // the result is in place: nothing to hold
  tsr_stream_hold_t hold = nullptr;
  if (tsr_stream_hold(currentStream(*device_), &hold) != TSR_OK) {
    TORCH_WARN_ONCE("tessera: Work.wait() on CUDA tensors blocks the calling thread: ", tsr_last_error());
    return false;
  }
  holds_.push_back(hold);
  return true;
}

bool WorkTessera::wait(std::chrono::milliseconds timeout) {
  // CUDA tensors, TSR_TORCH_STREAM_WAIT=1: the caller's stream waits instead of the caller.
  if (device_ && timeout == kNoTimeout && holdCallersStream()) return true;
  // Drive Tessera on this thread (as MPI_Wait does); the collective's own timeout bounds it.
  if (request_) tsr_wait(request_);
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    throw std::runtime_error("tessera: " + what_ + ": not finished within " + std::to_string(timeout.count()) + " ms");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

}  // namespace tessera_torch
