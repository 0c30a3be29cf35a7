#include "algorithms/team/request.h"

namespace tsr::algorithms {

Status Request::test() const {
  if (driver_ && !done()) driver_->driveOnce();
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

Status Request::wait() const {
  if (driver_ && !done()) driver_->driveUntilDone(*this);
  return waitWithoutDriving();
}

Status Request::waitWithoutDriving() const {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_.load(); });
  return status_;
}

std::chrono::steady_clock::time_point Request::completedAt() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completedAt_;
}

bool Request::done() const { return done_.load(std::memory_order_acquire); }

void Request::complete(Status status) {
  std::vector<CompletionCallback> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    status_ = std::move(status);
    completedAt_ = std::chrono::steady_clock::now();
    done_.store(true, std::memory_order_release);  // last: a lock-free reader then sees the rest
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  if (callbacks.empty()) return;
  // A copy: a callback may release the last reference to this request.
  const Status final = status_;
  for (auto& fn : callbacks) fn(final);
}

void Request::onComplete(CompletionCallback fn) {
  if (!fn) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_) {
      callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn(status_);  // final once done: no lock needed to read it
}

}  // namespace tsr::algorithms
