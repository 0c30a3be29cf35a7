// StreamHolds with a fake FlagMemory whose "stream" is a thread running its queue in order, a
// wait spinning on the flag as cuStreamWaitValue32's "greater or equal" does: later work on a
// held stream runs only after the release, flags are reused with higher generations (a wait
// queued on an old generation still passes), holds on several streams release independently,
// the pool grows, and a failed enqueue names the stream and gives its flag back. No GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <set>
#include <thread>

#include "algorithms/team/stream_hold.h"

namespace tsr::algorithms {
namespace {

// A stream: a thread running waits and work items in the order they were queued.
class FakeStream {
 public:
  FakeStream() : thread_([this] { run(); }) {}
  ~FakeStream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void enqueueWait(uint32_t* flag, uint32_t value) {
    push([this, flag, value] {
      setWaiting(flag, value);
      while (static_cast<int32_t>(std::atomic_ref<uint32_t>(*flag).load(std::memory_order_acquire) - value) < 0 &&
             !stopping())
        std::this_thread::yield();
      setWaiting(nullptr, 0);
    });
  }
  void enqueueWork(std::function<void()> fn) { push(std::move(fn)); }
  // Blocks until the stream waits for `flag` to reach `value` (an event, not a clock).
  void awaitWaiting(uint32_t* flag, uint32_t value) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (waitingFlag_ == flag && waitingValue_ == value) return;
      }
      std::this_thread::yield();
    }
  }
  // Blocks until everything queued so far has run.
  void drain() {
    std::atomic<bool> done{false};
    enqueueWork([&] { done = true; });
    while (!done) std::this_thread::yield();
  }

 private:
  void push(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(fn));
    }
    cv_.notify_all();
  }
  void setWaiting(uint32_t* flag, uint32_t value) {
    std::lock_guard<std::mutex> lock(mutex_);
    waitingFlag_ = flag;
    waitingValue_ = value;
  }
  bool stopping() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stop_;
  }
  void run() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  uint32_t* waitingFlag_ = nullptr;  // the wait running now (guarded by mutex_)
  uint32_t waitingValue_ = 0;
  std::thread thread_;
};

class FakeFlagMemory final : public FlagMemory {
 public:
  explicit FakeFlagMemory(void* refused = nullptr) : refused_(refused) {}
  std::string describe() const override { return "fake flags"; }
  Result<uint32_t*> allocFlags(size_t count) override {
    chunks_.emplace_back(new uint32_t[count]());
    return chunks_.back().get();
  }
  Status enqueueWait(void* stream, uint32_t* flag, uint32_t value) override {
    if (stream == refused_) return Status(Code::kNotSupported, "no stream memory operations (fake)");
    static_cast<FakeStream*>(stream)->enqueueWait(flag, value);
    return Status::ok();
  }

 private:
  void* refused_;
  std::vector<std::unique_ptr<uint32_t[]>> chunks_;
};

TEST(StreamHolds, LaterWorkOnAHeldStreamRunsOnlyAfterTheRelease) {
  StreamHolds holds(std::make_unique<FakeFlagMemory>());
  FakeStream stream;
  auto h = holds.hold(&stream);
  ASSERT_TRUE(h.isOk()) << h.status().toString();
  std::atomic<bool> ran{false};
  stream.enqueueWork([&] { ran = true; });
  stream.awaitWaiting(h.value().flag, h.value().generation);
  EXPECT_FALSE(ran.load()) << "work queued after the hold ran before its release";
  holds.release(h.value());
  stream.drain();
  EXPECT_TRUE(ran.load());
}

TEST(StreamHolds, AReleasedFlagComesBackWithAHigherGenerationAndOldWaitsStillPass) {
  StreamHolds holds(std::make_unique<FakeFlagMemory>());
  FakeStream stream;
  auto first = holds.hold(&stream);
  ASSERT_TRUE(first.isOk());
  holds.release(first.value());
  std::atomic<bool> before{false}, after{false};
  stream.enqueueWork([&] { before = true; });
  auto second = holds.hold(&stream);
  ASSERT_TRUE(second.isOk());
  EXPECT_EQ(second.value().flag, first.value().flag);
  EXPECT_EQ(second.value().generation, first.value().generation + 1);
  stream.enqueueWork([&] { after = true; });
  // The first hold's wait (released) passed; the second's holds until its own release.
  stream.awaitWaiting(second.value().flag, second.value().generation);
  EXPECT_TRUE(before.load());
  EXPECT_FALSE(after.load());
  holds.release(second.value());
  stream.drain();
  EXPECT_TRUE(after.load());
}

TEST(StreamHolds, HoldsOnTwoStreamsReleaseIndependently) {
  StreamHolds holds(std::make_unique<FakeFlagMemory>());
  FakeStream a, b;
  auto ha = holds.hold(&a), hb = holds.hold(&b);
  ASSERT_TRUE(ha.isOk() && hb.isOk());
  EXPECT_NE(ha.value().flag, hb.value().flag);
  std::atomic<bool> ranA{false}, ranB{false};
  a.enqueueWork([&] { ranA = true; });
  b.enqueueWork([&] { ranB = true; });
  a.awaitWaiting(ha.value().flag, ha.value().generation);
  holds.release(hb.value());  // the later hold first
  b.drain();
  EXPECT_TRUE(ranB.load());
  EXPECT_FALSE(ranA.load());
  holds.release(ha.value());
  a.drain();
  EXPECT_TRUE(ranA.load());
}

TEST(StreamHolds, ThePoolGrowsAndEveryHeldFlagIsItsOwn) {
  StreamHolds holds(std::make_unique<FakeFlagMemory>());
  FakeStream stream;
  std::vector<StreamHolds::Hold> held;
  std::set<uint32_t*> flags;
  for (int i = 0; i < 1500; ++i) {
    auto h = holds.hold(&stream);
    ASSERT_TRUE(h.isOk());
    flags.insert(h.value().flag);
    held.push_back(h.value());
  }
  EXPECT_EQ(flags.size(), 1500u);
  EXPECT_EQ(holds.flagsAllocated(), 2048u);
  for (auto it = held.rbegin(); it != held.rend(); ++it) holds.release(*it);
  stream.drain();  // every wait passed
  auto again = holds.hold(&stream);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(holds.flagsAllocated(), 2048u) << "a released flag is reused before the pool grows";
  holds.release(again.value());
}

TEST(StreamHolds, AFailedEnqueueNamesTheStreamAndGivesItsFlagBack) {
  int refused = 0;
  StreamHolds holds(std::make_unique<FakeFlagMemory>(&refused));
  auto h = holds.hold(&refused);
  ASSERT_FALSE(h.isOk());
  EXPECT_EQ(h.status().code(), Code::kNotSupported);
  EXPECT_NE(h.status().message().find("stream hold on stream 0x"), std::string::npos) << h.status().message();
  EXPECT_NE(h.status().message().find("(fake flags): no stream memory operations (fake)"), std::string::npos)
      << h.status().message();
  FakeStream stream;
  auto next = holds.hold(&stream);
  ASSERT_TRUE(next.isOk());
  EXPECT_EQ(next.value().generation, 2u) << "the refused hold's flag was not given back";
  holds.release(next.value());
}

TEST(StreamHolds, CudaHoldsNeedADevice) {
  auto cuda = cudaStreamHolds();
  if (cuda.isOk()) GTEST_SKIP() << "a CUDA device is present: tools/gpu/device_check.sh checks the holds there";
  EXPECT_EQ(cuda.status().code(), Code::kNotSupported);
  EXPECT_FALSE(cuda.status().message().empty());
}

}  // namespace
}  // namespace tsr::algorithms
