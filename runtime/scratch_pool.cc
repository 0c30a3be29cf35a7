#include "runtime/scratch_pool.h"

#include <cstdlib>
#include <string>

namespace tsr::runtime {

Result<std::shared_ptr<void>> ScratchPool::acquire(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  void* block = nullptr;
  size_t size = bytes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest idle block that fits, unless it is much larger than needed.
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= 2 * bytes) {
      size = it->first;
      block = it->second;
      freeBytes_ -= size;
      free_.erase(it);
    }
  }
  if (!block) {
    block = std::aligned_alloc(64, bytes);
    if (!block)
      return Status(Code::kInternal, "cannot allocate " + std::to_string(bytes) + " bytes of scratch");
  }
  std::weak_ptr<ScratchPool> pool = weak_from_this();
  return std::shared_ptr<void>(block, [pool, size](void* p) {
    if (auto alive = pool.lock()) alive->giveBack(p, size);
    else std::free(p);
  });
}

void ScratchPool::giveBack(void* block, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Over the cap: drop the largest idle blocks first (the new one included).
  free_.emplace(bytes, block);
  freeBytes_ += bytes;
  while (freeBytes_ > kMaxFreeBytes && !free_.empty()) {
    auto largest = std::prev(free_.end());
    freeBytes_ -= largest->first;
    std::free(largest->second);
    free_.erase(largest);
  }
}

size_t ScratchPool::idleBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return freeBytes_;
}

ScratchPool::~ScratchPool() {
  for (auto& [size, block] : free_) std::free(block);
}

}  // namespace tsr::runtime
