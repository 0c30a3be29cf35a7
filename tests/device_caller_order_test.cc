// The caller's order for steps of memory=cuda tensors, over real UCX with ranks as threads and
// the fakes of tests/support/device_fakes.h (no GPU): each step records an event on the
// communicator's stream (tsr_comm_set_stream; none: the default stream) on the calling thread;
// a direct device step starts only once the progress thread has polled that event as reached,
// and meanwhile the progress thread keeps moving other collectives (a stream held for one of
// them, tsr_stream_hold, is released by that thread, so it must never wait on a caller's
// stream); a step whose caller's work never ends fails within the timeout saying so; a staged
// step and a staged dense collective are gated by the same event, polled, so one behind a held
// stream holds back no other collective's copies.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "algorithms/marsit/marsit.h"
#include "algorithms/team/tests/fake_copier.h"
#include "tests/support/direct_path_checks.h"

namespace tsr {
namespace {

using marsit::MarsitTensor;
using testing::Opened;
using testing::World;

constexpr size_t kCount = 3001;
void* const kStream = reinterpret_cast<void*>(0x5eed);  // the fakes never dereference it

float inputOf(int rank, size_t j) {
  return std::sin(0.37f * static_cast<float>(j + 1) * (rank + 2.0f)) * (1.0f + rank);
}

std::unique_ptr<MarsitTensor> directTensor(runtime::Communicator& comm, const std::string& name, Opened& opened) {
  auto made = MarsitTensor::create(comm, name, kCount, {});
  EXPECT_TRUE(made.isOk()) << made.status().toString();
  if (!made.isOk()) return nullptr;
  auto t = made.take();
  auto note = t->useDeviceMemory(opened.openers(name, kCount));
  EXPECT_TRUE(note.isOk() && t->directDevice()) << note.status().toString();
  return t;
}

// Bounded: true once pred() holds, false after 10 s.
template <typename Pred>
bool eventually(Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(DeviceCallerOrder, DirectStepStartsAfterTheCallersEventWhileOtherCollectivesGoOn) {
  World world(2);
  std::atomic<bool> rankOneLooked{false};  // rank 1 saw its step pending: rank 0 may let its own go
  testing::runRanksWrapped(
      2,
      [&](runtime::Communicator& comm) {
        Opened opened;
        auto t = directTensor(comm, "w", opened);
        ASSERT_TRUE(t);
        auto host = MarsitTensor::create(comm, "w-host", kCount, {});
        ASSERT_TRUE(host.isOk());
        testing::FakeDeviceKernels& k = *opened.kernels;
        float* d = static_cast<float*>(k.allocate(kCount * sizeof(float)).value());
        std::vector<float> h(kCount);
        for (size_t j = 0; j < kCount; ++j) h[j] = d[j] = inputOf(comm.rank(), j);

        comm.setCallerStream(kStream);
        const bool gated = comm.rank() == 0;
        if (gated) k.callerWorkDone = false;  // the caller's stream has not reached the call yet
        auto step = t->allreduceAsync(d);
        ASSERT_TRUE(step.isOk()) << step.status().toString();
        if (gated) {
          ASSERT_TRUE(eventually([&] { return k.gatePolls.load() >= 3; })) << "the progress thread never polled";
          EXPECT_FALSE(step.value()->done());
          EXPECT_EQ(k.prepares + k.addScans + k.copies, 0) << "a kernel ran before the caller's event was reached";
        }
        // The progress thread is free: a host collective posted after the pending step ends.
        std::vector<int32_t> one{comm.rank() + 1}, sum(1);
        auto dense = comm.allreduce(one.data(), sum.data(), 1, DataType::kI32, ReduceOp::kSum);
        ASSERT_TRUE(dense.isOk() && dense.value()->wait().isOk());
        EXPECT_EQ(sum[0], 3);
        EXPECT_FALSE(step.value()->done()) << "rank " << comm.rank() << ": the step ended with rank 0 gated";
        if (gated) {
          ASSERT_TRUE(eventually([&] { return rankOneLooked.load(); }));
          k.callerWorkDone = true;
        } else {
          rankOneLooked = true;
        }
        Status st = step.value()->wait();
        ASSERT_TRUE(st.isOk()) << st.toString();
        EXPECT_EQ(k.recordedStreams(), std::vector<void*>{kStream});
        EXPECT_EQ(k.nullEvents.load(), 0);

        // The same step on host memory gives the same bits: the gate changes only when it runs.
        ASSERT_TRUE(host.value()->allreduce(h.data()).isOk());
        EXPECT_TRUE(testing::sameBits(h.data(), d, kCount)) << "rank " << comm.rank();

        comm.setCallerStream(nullptr);  // without a stream: the event of the default stream
        ASSERT_TRUE(t->allreduce(d).isOk());
        EXPECT_EQ(k.recordedStreams(), (std::vector<void*>{kStream, nullptr}));
        k.release(d);
      },
      [](int) { return testing::Settings{}; }, world.wrapper(true));
}

// The caller's work never reaches the call (a stream stalled for good): the step fails within
// the timeout on the gated rank saying what it waited for, and on the other rank too (told by
// the gated one).
TEST(DeviceCallerOrder, AStepWhoseCallersWorkNeverEndsTimesOut) {
  World world(2);
  testing::runRanksWrapped(
      2,
      [&](runtime::Communicator& comm) {
        Opened opened;
        auto t = directTensor(comm, "stuck", opened);
        ASSERT_TRUE(t);
        testing::FakeDeviceKernels& k = *opened.kernels;
        float* d = static_cast<float*>(k.allocate(kCount * sizeof(float)).value());
        if (comm.rank() == 0) k.callerWorkDone = false;
        auto start = std::chrono::steady_clock::now();
        Status st = t->allreduce(d);
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_FALSE(st.isOk());
        EXPECT_LT(seconds, 30.0) << st.toString();
        if (comm.rank() == 0) {
          EXPECT_EQ(st.code(), Code::kTimeout) << st.toString();
          EXPECT_NE(st.message().find("marsit tensor stuck"), std::string::npos) << st.toString();
          EXPECT_NE(st.message().find("caller's CUDA stream"), std::string::npos) << st.toString();
          EXPECT_EQ(k.prepares + k.addScans, 0);
        }
        k.callerWorkDone = true;
        k.release(d);
      },
      // Rank 1 waits longer, so the gated rank's own timeout is the one that ends the step.
      [](int rank) {
        return testing::Settings{{"TSR_TIMEOUT_MS", rank == 0 ? "1500" : "20000"}};
      },
      world.wrapper(true));
}

// Staged (no CUDA support claimed): the copy to the host waits for the event recorded at the
// call on the communicator's stream, or on the default stream without one.
TEST(DeviceCallerOrder, StagedStepCopiesAfterTheCallersEvent) {
  World world(2);
  testing::runRanksWrapped(
      2,
      [&](runtime::Communicator& comm) {
        Opened opened;
        auto made = MarsitTensor::create(comm, "s", kCount, {});
        ASSERT_TRUE(made.isOk());
        auto t = made.take();
        auto note = t->useDeviceMemory(opened.openers("s", kCount));
        ASSERT_TRUE(note.isOk() && !t->directDevice()) << note.status().toString();
        std::vector<float> d(kCount);
        for (size_t j = 0; j < kCount; ++j) d[j] = inputOf(comm.rank(), j);
        comm.setCallerStream(kStream);
        ASSERT_TRUE(t->allreduce(d.data()).isOk());
        comm.setCallerStream(nullptr);
        ASSERT_TRUE(t->allreduce(d.data()).isOk());
        EXPECT_EQ(opened.copies->waitedOn, (std::vector<void*>{kStream, nullptr}));
        opened.copies->badStream = kStream;  // a handle that is no stream of the device
        comm.setCallerStream(kStream);
        Status st = t->allreduce(d.data());
        EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.toString();
        EXPECT_NE(st.message().find("marsit tensor s"), std::string::npos) << st.toString();
        EXPECT_EQ(opened.copies->toHost, 2) << "a refused step copied";
        comm.setCallerStream(nullptr);
      },
      [](int) { return testing::Settings{}; }, world.wrapper(false));
}

// A collective called behind a held stream (a stream-side wait holds the caller's stream until
// an earlier collective has ended, so the later one's event is not reached) must not hold back
// the earlier one: the communicator's collectives share one copier, whose copies run in order,
// so the later copy to the host is posted once its event has been polled as reached, never
// queued there to wait for it (the earlier copy back would queue behind it, for good).
TEST(DeviceCallerOrder, ACollectiveBehindAHeldStreamHoldsBackNoEarlierOne) {
  testing::runRanks(
      2,
      [](runtime::Communicator& comm) {
        auto log = std::make_shared<testing::FakeCopierLog>();
        ASSERT_TRUE(comm.useDeviceCopier(std::make_unique<testing::FakeCopier>(log)).isOk());
        const int r = comm.rank();
        std::vector<float> a(kCount, 1.0f + r), b(kCount, 10.0f * (r + 1));
        auto first = comm.allreduce(a.data(), a.data(), kCount, DataType::kF32, ReduceOp::kSum);
        ASSERT_TRUE(first.isOk()) << first.status().toString();
        log->reachedBelow = log->eventsRecorded.load();  // the caller's stream held from here on
        auto second = comm.allreduce(b.data(), b.data(), kCount, DataType::kF32, ReduceOp::kSum);
        ASSERT_TRUE(second.isOk()) << second.status().toString();
        Status st = first.value()->wait();
        ASSERT_TRUE(st.isOk()) << "rank " << r << ": " << st.toString();
        EXPECT_EQ(a[kCount - 1], 3.0f);
        EXPECT_FALSE(second.value()->done()) << "rank " << r << ": read before the caller's stream got there";
        EXPECT_EQ(b[0], 10.0f * (r + 1));
        log->reachedBelow = 1 << 30;  // the hold released
        st = second.value()->wait();
        ASSERT_TRUE(st.isOk()) << "rank " << r << ": " << st.toString();
        EXPECT_EQ(b[kCount - 1], 30.0f);
        EXPECT_EQ(log->waitingCopies, 0) << "a copy was queued on the copier's stream to wait for the caller";
      },
      {{"TSR_TIMEOUT_MS", "5000"}});
}

}  // namespace
}  // namespace tsr
