// A DeviceCopier whose "device" memory is ordinary host memory and whose copies are plain
// memcpy, for testing the staging ORCHESTRATION without a GPU (order of copies and host step,
// polling, errors, residuals). It says nothing about CUDA itself: that needs a real device.
//
// Copies are deferred like real asynchronous ones: a posted copy happens only when finished()
// has been asked `pollsPerCopy` more times, so a task that used the host buffer before its
// copy had finished would read stale data and fail the tests. Like copies on one stream they
// run in order: one posted to wait for a caller's event that has not been reached holds back
// every later one, and finished() stays false until it has run.
//
// Caller's events are numbered as recorded; those numbered reachedBelow or more have not been
// reached (the caller's stream has not got there: held, say, until a collective has ended).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
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
  std::vector<void*> waitedOn;          // per caller's event reached (polled, or waited for by a copy
                                        // to the host): its stream (null: the default stream)
  std::atomic<int> eventsRecorded{0};
  std::atomic<int> reachedBelow{1 << 30};
  std::atomic<int> eventPolls{0};  // reached() calls
  int waitingCopies = 0;           // copies to the host posted with an event to wait for
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
  // The "event": the stream it was recorded on, and its number.
  struct Event {
    void* stream;
    int number;
  };
  Result<algorithms::CallerEvent> recordCallerEvent(void* stream) override {
    if (stream && stream == log_->badStream)
      return Status(Code::kInvalidArgument, "cannot record on that stream (fake)");
    return algorithms::CallerEvent(new Event{stream, log_->eventsRecorded++},
                                   [](void* p) { delete static_cast<Event*>(p); });
  }
  Result<bool> reached(const algorithms::CallerEvent& event) override {
    ++log_->eventPolls;
    if (!passed(event)) return false;
    if (event) log_->waitedOn.push_back(static_cast<Event*>(event.get())->stream);
    return true;
  }
  Status postToHost(void* host, const void* device, size_t bytes, const algorithms::CallerEvent& after) override {
    ++log_->toHost;
    if (after) {
      ++log_->waitingCopies;
      log_->waitedOn.push_back(static_cast<Event*>(after.get())->stream);
    }
    return post(host, device, bytes, after);
  }
  Status postToDevice(void* device, const void* host, size_t bytes) override {
    ++log_->toDevice;
    return post(device, host, bytes, nullptr);
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
    size_t ran = 0;
    for (; ran < queue_.size() && passed(queue_[ran].after); ++ran)
      std::memcpy(queue_[ran].dst, queue_[ran].src, queue_[ran].bytes);
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(ran));
    return queue_.empty();
  }

 private:
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
    algorithms::CallerEvent after;
  };
  bool passed(const algorithms::CallerEvent& event) const {
    return !event || static_cast<Event*>(event.get())->number < log_->reachedBelow.load();
  }
  void notePinnedThread() {
    if (log_->caller != std::thread::id() && std::this_thread::get_id() != log_->caller) ++log_->pinnedElsewhere;
  }
  Status post(void* dst, const void* src, size_t bytes, algorithms::CallerEvent after) {
    if (log_->failPost) {
      log_->failPost = false;
      return Status(Code::kInternal, "fake post failed");
    }
    queue_.push_back({dst, src, bytes, std::move(after)});
    countdown_ = log_->pollsPerCopy;
    return Status::ok();
  }
  std::shared_ptr<FakeCopierLog> log_;
  std::vector<Copy> queue_;
  int countdown_ = 0;
};

}  // namespace tsr::testing
