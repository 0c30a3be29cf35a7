#include "algorithms/team/stream_hold.h"

#include <atomic>
#include <cstdio>

namespace tsr::algorithms {

Result<StreamHolds::Hold> StreamHolds::hold(void* stream) {
  Hold h;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) {
      auto chunk = memory_->allocFlags(kFlagsPerChunk);
      if (!chunk.isOk()) return Status(chunk.status().code(), "stream hold: flags: " + chunk.status().message());
      const size_t first = chunks_.size() * kFlagsPerChunk;
      chunks_.push_back(chunk.value());
      generation_.resize(first + kFlagsPerChunk, 0);
      for (size_t i = kFlagsPerChunk; i-- > 0;) free_.push_back(first + i);
    }
    h.slot = free_.back();
    free_.pop_back();
    h.flag = chunks_[h.slot / kFlagsPerChunk] + h.slot % kFlagsPerChunk;
    h.generation = ++generation_[h.slot];
  }
  Status st = memory_->enqueueWait(stream, h.flag, h.generation);
  if (!st.isOk()) {
    release(h);  // nothing waits on it: the flag may go back at once
    char handle[32];
    std::snprintf(handle, sizeof handle, "%p", stream);
    return Status(st.code(),
                  std::string("stream hold on stream ") + handle + " (" + memory_->describe() + "): " + st.message());
  }
  return h;
}

void StreamHolds::release(const Hold& h) {
  // Release: the stream's later work may read what the host wrote before it.
  std::atomic_ref<uint32_t>(*h.flag).store(h.generation, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(h.slot);
}

size_t StreamHolds::flagsAllocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return chunks_.size() * kFlagsPerChunk;
}

}  // namespace tsr::algorithms
