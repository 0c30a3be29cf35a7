// Request: the handle of a posted collective. The progress thread completes it; any thread
// may test or wait on it.
#pragma once

#include <condition_variable>
#include <mutex>

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

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  Status status_{Code::kInProgress, ""};
};

}  // namespace tsr::runtime
