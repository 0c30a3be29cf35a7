// ScratchPool: reuses the scratch areas of collectives (staging chunks, reduce-scatter work
// copies), so a training loop that calls the same collectives every step does not pay for
// fresh pages (page faults) every time. Thread-safe; blocks come back when the last holder
// (the running task) lets go. Keeps at most kMaxFreeBytes of idle memory.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "base/status.h"

namespace tsr::runtime {

class ScratchPool : public std::enable_shared_from_this<ScratchPool> {
 public:
  static constexpr size_t kMaxFreeBytes = size_t{512} << 20;

  // A 64-byte aligned block of at least `bytes`; returned to the pool when released.
  Result<std::shared_ptr<void>> acquire(size_t bytes);
  size_t idleBytes() const;
  ~ScratchPool();

 private:
  void giveBack(void* block, size_t bytes);
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // size -> block
  size_t freeBytes_ = 0;
};

}  // namespace tsr::runtime
