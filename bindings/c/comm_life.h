// Private to libtessera: what a communicator handle and every handle made from it (tensors,
// requests, SelSync, COVAP) share. tsr_comm_destroy ends the communicator, not this object:
// a handle that outlives its communicator finds it gone and reports TSR_ERR_ABORTED instead
// of reaching into freed memory (a tensor step after destroy used to crash the rank).
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <utility>

#include "runtime/communicator.h"

namespace tsr::capi {

class CommLife {
 public:
  explicit CommLife(std::unique_ptr<runtime::Communicator> comm) : comm_(std::move(comm)) {}

  // Runs body(comm) with the communicator kept alive meanwhile; comm is null once destroyed.
  // A shared lock: calls on several threads (and a completion callback calling back in) run
  // side by side; only destroy() waits for them.
  template <typename F>
  auto with(F&& body) {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return body(comm_.get());
  }

  // Ends the communicator (pending collectives fail with TSR_ERR_ABORTED): waits for calls in
  // progress on other threads, then destroys it outside the lock, so that a completion
  // callback that the shutdown runs may still call in (and be told the communicator is gone).
  void destroy() {
    std::unique_ptr<runtime::Communicator> ending;
    {
      std::unique_lock<std::shared_mutex> lock(mutex_);
      ending = std::move(comm_);
    }
    ending.reset();
  }

  // A tensor name may have one live tensor per communicator: a second one would silently
  // take over (or misalign with) the first one's residual. False when it is taken.
  bool claimName(const std::string& name) {
    std::lock_guard<std::mutex> lock(namesMutex_);
    return names_.insert(name).second;
  }
  void releaseName(const std::string& name) {
    std::lock_guard<std::mutex> lock(namesMutex_);
    names_.erase(name);
  }

 private:
  std::shared_mutex mutex_;
  std::unique_ptr<runtime::Communicator> comm_;  // null once destroyed
  std::mutex namesMutex_;
  std::set<std::string> names_;
};

}  // namespace tsr::capi
