// Request: the handle of a posted collective. The progress thread completes it; any thread
// may test or wait on it, or ask to be called back when it ends (onComplete).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::runtime {

class ProgressEngine;

class Request {
 public:
  // InProgress until the collective ends, then its final status. With a driver, first drives
  // the communicator one turn if no other thread is driving it.
  Status test() const;
  // Blocks until the collective ends (the collective's own timeout bounds this). With a
  // driver, the calling thread drives the communicator meanwhile (see ProgressEngine).
  Status wait() const;
  // Set once, before the request is shared; the engine outlives every pending request.
  void setDriver(ProgressEngine* engine) { driver_ = engine; }
  void complete(Status status);
  bool done() const;
  // Calls fn(final status) once, when the collective ends: on the thread that completes it
  // (the progress thread, or a caller driving it in wait/test), after done() turns true and
  // without this request's lock held; at once on this thread when it has already ended. fn
  // must not throw nor block on Tessera (that would stall the thread that drives it). So
  // frameworks get futures without a thread of their own polling.
  using CompletionCallback = std::function<void(const Status&)>;
  void onComplete(CompletionCallback fn);
  // The algorithm that serves this collective ("ring", "binomial", ...), set when posted.
  const std::string& algorithm() const { return algorithm_; }
  // When the collective ended (valid once done()), for profiles that align timelines.
  std::chrono::steady_clock::time_point completedAt() const;
  void setAlgorithm(std::string name) { algorithm_ = std::move(name); }

 private:
  Status waitWithoutDriving() const;

  ProgressEngine* driver_ = nullptr;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  std::atomic<bool> done_{false};  // read without the lock by spinning waiters
  Status status_{Code::kInProgress, ""};
  std::string algorithm_;
  std::chrono::steady_clock::time_point completedAt_{};
  std::vector<CompletionCallback> callbacks_;  // until done
};

}  // namespace tsr::runtime
