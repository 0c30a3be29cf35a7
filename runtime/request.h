// Request: the handle of a posted collective. The progress thread completes it; any thread
// may test or wait on it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "base/status.h"

namespace tsr::runtime {

class Request {
 public:
  // InProgress until the collective ends, then its final status.
  Status test() const;
  // Blocks until the collective ends (the collective's own timeout bounds this).
  Status wait() const;
  void complete(Status status);
  bool done() const;
  // The algorithm that serves this collective ("ring", "binomial", ...), set when posted.
  const std::string& algorithm() const { return algorithm_; }
  // When the collective ended (valid once done()), for profiles that align timelines.
  std::chrono::steady_clock::time_point completedAt() const;
  void setAlgorithm(std::string name) { algorithm_ = std::move(name); }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  Status status_{Code::kInProgress, ""};
  std::string algorithm_;
  std::chrono::steady_clock::time_point completedAt_{};
};

}  // namespace tsr::runtime
