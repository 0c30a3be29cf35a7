#include "bindings/torch/work_tessera.h"

#include <stdexcept>

#include <ATen/core/ivalue.h>

namespace tessera_torch {

WorkTessera::WorkTessera(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, Finish finish)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      finish_(std::move(finish)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

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

void WorkTessera::complete(tsr_status_t status, const std::string& message) {
  std::exception_ptr error;
  if (status == TSR_OK) {
    try {
      if (finish_) finish_();
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(std::runtime_error("tessera: " + what_ + ": " + e.what()));
    }
  } else {
    error = std::make_exception_ptr(
        std::runtime_error("tessera: " + what_ + " failed (" + tsr_status_string(status) + "): " + message));
  }
  finish(error);  // the Work first: a Future callback may look at it
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

bool WorkTessera::wait(std::chrono::milliseconds timeout) {
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
