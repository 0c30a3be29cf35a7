// A DeviceCopier whose "device" memory is ordinary host memory and whose copies are plain
// memcpy, for testing the staging ORCHESTRATION without a GPU (order of copies and host step,
// polling, errors, residuals). It says nothing about CUDA itself: that needs a real device.
//
// Copies are deferred like real asynchronous ones: a posted copy happens only when finished()
// has been asked `pollsPerCopy` more times, so a task that used the host buffer before its
// copy had finished would read stale data and fail the tests.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "algorithms/team/device_copier.h"

namespace tsr::testing {

struct FakeCopierLog {
  int pollsPerCopy = 2;
  int toHost = 0, toDevice = 0;         // copies posted
  int pinnedLive = 0;                   // pinned buffers not yet freed
  bool failPost = false;                // the next post fails
  bool failCopy = false;                // the next copy fails when it runs
  const void* rejected = nullptr;       // checkDevice refuses this pointer
  void* badStream = nullptr;            // recordCallerEvent refuses this stream
  std::thread::id caller;               // when set: pinned memory taken or freed on another thread
  std::atomic<int> pinnedElsewhere{0};  // is counted here
  std::vector<void*> waitedOn;          // per copy to the host: the caller's stream it waited on
                                        // (null: the default stream)
};

class FakeCopier final : public algorithms::DeviceCopier {
 public:
  explicit FakeCopier(std::shared_ptr<FakeCopierLog> log) : log_(std::move(log)) {}
  std::string describe() const override { return "fake copier (host memcpy)"; }
  Result<void*> allocPinned(size_t bytes) override {
    ++log_->pinnedLive;
    notePinnedThread();
    return std::malloc(bytes ? bytes : 1);
  }
  void freePinned(void* p) override {
    --log_->pinnedLive;
    notePinnedThread();
    std::free(p);
  }
  Status checkDevice(const void* p, size_t) const override {
    if (p == log_->rejected) return Status(Code::kInvalidArgument, "the buffer is not CUDA device memory (fake)");
    return Status::ok();
  }
  // The "event" is the stream it was recorded on, which each copy to the host logs.
  Result<algorithms::CallerEvent> recordCallerEvent(void* stream) override {
    if (stream && stream == log_->badStream)
      return Status(Code::kInvalidArgument, "cannot record on that stream (fake)");
    return algorithms::CallerEvent(new void*(stream), [](void* p) { delete static_cast<void**>(p); });
  }
  Status postToHost(void* host, const void* device, size_t bytes, const algorithms::CallerEvent& after) override {
    ++log_->toHost;
    log_->waitedOn.push_back(after ? *static_cast<void**>(after.get()) : nullptr);
    return post(host, device, bytes);
  }
  Status postToDevice(void* device, const void* host, size_t bytes) override {
    ++log_->toDevice;
    return post(device, host, bytes);
  }
  Result<bool> finished() override {
    if (queue_.empty()) return true;
    if (countdown_ > 0) {
      --countdown_;
      return false;
    }
    if (log_->failCopy) {
      log_->failCopy = false;
      queue_.clear();
      return Status(Code::kInternal, "fake copy failed");
    }
    for (const Copy& c : queue_) std::memcpy(c.dst, c.src, c.bytes);
    queue_.clear();
    return true;
  }

 private:
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  void notePinnedThread() {
    if (log_->caller != std::thread::id() && std::this_thread::get_id() != log_->caller) ++log_->pinnedElsewhere;
  }
  Status post(void* dst, const void* src, size_t bytes) {
    if (log_->failPost) {
      log_->failPost = false;
      return Status(Code::kInternal, "fake post failed");
    }
    queue_.push_back({dst, src, bytes});
    countdown_ = log_->pollsPerCopy;
    return Status::ok();
  }
  std::shared_ptr<FakeCopierLog> log_;
  std::vector<Copy> queue_;
  int countdown_ = 0;
};

}  // namespace tsr::testing
