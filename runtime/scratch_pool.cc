#include "runtime/scratch_pool.h"

#include <bit>
#include <cstdlib>
#include <string>

namespace tsr::runtime {

namespace {
std::shared_ptr<const ScratchMemory> heapMemory() {
  static const auto heap = std::make_shared<const ScratchMemory>(ScratchMemory{
      "aligned_alloc",
      [](size_t bytes) -> Result<void*> {
        void* p = std::aligned_alloc(64, bytes);
        if (!p) return Status(Code::kInternal, "cannot allocate " + std::to_string(bytes) + " bytes of scratch");
        return p;
      },
      [](void* p) { std::free(p); }});
  return heap;
}
}  // namespace

size_t ScratchPool::sizeClass(size_t bytes) {
  bytes = bytes < 64 ? 64 : (bytes + 63) / 64 * 64;
  if (bytes <= 4096) return std::bit_ceil(bytes);
  // Four classes per power of two: 2^k, 1.25, 1.5 and 1.75 times it.
  const size_t step = std::bit_floor(bytes) / 4;
  return (bytes + step - 1) / step * step;
}

ScratchPool::ScratchPool(std::shared_ptr<const ScratchMemory> memory)
    : memory_(memory ? std::move(memory) : heapMemory()) {}

size_t ScratchPool::blocksAllocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocated_;
}

Result<std::shared_ptr<void>> ScratchPool::acquire(size_t bytes) {
  bytes = sizeClass(bytes);
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
    TSR_ASSIGN_OR_RETURN(block, memory_->allocate(bytes));
    std::lock_guard<std::mutex> lock(mutex_);
    ++allocated_;
  }
  std::weak_ptr<ScratchPool> pool = weak_from_this();
  return std::shared_ptr<void>(block, [pool, size, memory = memory_](void* p) {
    if (auto alive = pool.lock())
      alive->giveBack(p, size);
    else
      memory->release(p);
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
    memory_->release(largest->second);
    free_.erase(largest);
  }
}

size_t ScratchPool::idleBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return freeBytes_;
}

ScratchPool::~ScratchPool() {
  for (auto& [size, block] : free_) memory_->release(block);
}

}  // namespace tsr::runtime
