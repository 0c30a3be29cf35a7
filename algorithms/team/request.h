// Request: the handle of a posted collective. The progress thread completes it; any thread
// may test or wait on it, or ask to be called back when it ends (onComplete). Whoever runs
// the collectives (the runtime's progress engine) may drive them from a waiting caller
// through RequestDriver, so this layer needs no runtime.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::algorithms {

class Request;

// What a waiting caller may use to move collectives along (MPI_Wait-style progress).
class RequestDriver {
 public:
  virtual ~RequestDriver() = default;
  // Drives on the calling thread until `request` is done (or the driver stops).
  virtual void driveUntilDone(const Request& request) = 0;
  // One turn on the calling thread if nobody else drives.
  virtual void driveOnce() = 0;
};

class Request {
 public:
  // InProgress until the collective ends, then its final status. With a driver, first drives
  // one turn if no other thread is driving it.
  Status test() const;
  // Blocks until the collective ends (the collective's own timeout bounds this). With a
  // driver, the calling thread drives the collectives meanwhile (RequestDriver).
  Status wait() const;
  // Set once, before the request is shared; the engine outlives every pending request.
  void setDriver(RequestDriver* driver) { driver_ = driver; }
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

  RequestDriver* driver_ = nullptr;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  std::atomic<bool> done_{false};  // read without the lock by spinning waiters
  Status status_{Code::kInProgress, ""};
  std::string algorithm_;
  std::chrono::steady_clock::time_point completedAt_{};
  std::vector<CompletionCallback> callbacks_;  // until done
};

using RequestPtr = std::shared_ptr<Request>;

}  // namespace tsr::algorithms
