// Request: the handle of a posted collective. The progress thread completes it; any thread
// may test or wait on it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

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
};

}  // namespace tsr::runtime
