// ScratchPool: reuses the scratch areas of collectives (staging chunks, reduce-scatter work
// copies), so a training loop that calls the same collectives every step does not pay for
// fresh pages (page faults) every time. Thread-safe; blocks come back when the last holder
// (the running task) lets go. Keeps at most kMaxFreeBytes of idle memory. Requests are rounded
// up to size classes (powers of two up to 4 KiB, then four per power of two: at most 25% more
// than asked), so sizes that vary from call to call reuse the same blocks: rounded only to 64
// bytes, a request a little larger than every idle block took a new one, and a long run of
// varied sizes kept adding blocks (each a registered segment) up to the idle cap.
// Blocks come from a ScratchMemory: a communicator's pool uses its transport's registered
// memory (ucp_mem_map), so UCX need not register scratch again on zero-copy paths; tests and
// the default use aligned_alloc. A block held past the pool's life is released through the
// ScratchMemory, which the block's deleter keeps alive.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"

namespace tsr::runtime {

struct ScratchMemory {
  std::string name;                               // for logs and tests
  std::function<Result<void*>(size_t)> allocate;  // 64-byte aligned at least
  std::function<void(void*)> release;
};

class ScratchPool : public std::enable_shared_from_this<ScratchPool> {
 public:
  static constexpr size_t kMaxFreeBytes = size_t{512} << 20;

  // memory: where blocks come from; null = aligned_alloc / free.
  explicit ScratchPool(std::shared_ptr<const ScratchMemory> memory = nullptr);
  const std::string& memoryName() const { return memory_->name; }
  // Blocks obtained from the memory so far (reuse keeps this flat).
  size_t blocksAllocated() const;

  // The size of the block a request of `bytes` gets.
  static size_t sizeClass(size_t bytes);
  // A 64-byte aligned block of at least `bytes`; returned to the pool when released.
  Result<std::shared_ptr<void>> acquire(size_t bytes);
  size_t idleBytes() const;
  ~ScratchPool();

 private:
  void giveBack(void* block, size_t bytes);
  std::shared_ptr<const ScratchMemory> memory_;
  size_t allocated_ = 0;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // size -> block
  size_t freeBytes_ = 0;
};

}  // namespace tsr::runtime
